"""The default strategy's real record travels with every backtest: the command line prints
it, the JSON and the agent's tool result carry it, the agent is told to pass it on, and the
figures are those docs/strategy.md shows (issue 36, section 5)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from statistics import mean

from tests.conftest import cli
from wyckoff.cli.runtime.loop import SYSTEM_PROMPT
from wyckoff.engine.strategy_record import (
    DEFAULT_FOLDS_EXCESS,
    STRATEGY_RECORD,
    WALK_FORWARD_FOLDS_EXCESS,
)

STRATEGY_DOC = Path(__file__).resolve().parents[2] / "docs" / "strategy.md"


def test_a_backtest_says_the_default_did_not_beat_the_index(home, install_demo):
    install_demo(home, 60)
    assert cli("data", "use", "demo").returncode == 0
    text = cli("backtest", "--hold-days", "5")
    assert text.returncode == 0, text.stderr
    assert "没有证据表明这个策略能跑赢指数" in text.stdout
    assert "8 年里 2 年跑赢" in text.stdout
    data = json.loads(cli("backtest", "--hold-days", "5", "--json").stdout)
    assert data["strategy_record"] == STRATEGY_RECORD


def test_the_record_is_the_mean_of_the_folds_docs_strategy_shows():
    doc = STRATEGY_DOC.read_text(encoding="utf-8")
    for folds, table in (
        (DEFAULT_FOLDS_EXCESS, "默认策略"),
        (WALK_FORWARD_FOLDS_EXCESS, "滚动检验"),
    ):
        section = doc[doc.index(f"<!-- {table} -->") :]
        shown = [float(x) for x in re.findall(r"超额 ([+-]\d+\.\d)", section)[: len(folds)]]
        assert shown == list(folds)
        assert f"平均超额 {mean(folds):+.1f} 个百分点" in STRATEGY_RECORD


def test_the_agent_is_told_to_pass_the_record_on():
    assert "strategy_record" in SYSTEM_PROMPT and "不要把回测收益" in SYSTEM_PROMPT
