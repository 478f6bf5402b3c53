"""The record beside every signal: analyze, screen and the agent's tool results carry the
cached event-study record of each signal shown (or say why there is no number), read from
the cache only; the system prompt tells the model to cite it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.engine_fixtures import sos_then, store_from_panel
from tests.model_servers import Reply
from tests.scripted_provider import ScriptedProvider
from wyckoff.agents.signal_record import NOT_STUDIED, signal_record
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.chat_log import ChatLog, Conversation
from wyckoff.cli.runtime import AgentRuntime
from wyckoff.engine.event_records import config_key, records_path
from wyckoff.engine.panel import Panel
from wyckoff.engine.store_cache import store_version
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.store import Store

TUSHARE = {"WYCKOFF_DATA_SOURCE": "tushare"}
SOS_SENTENCE = "近 8 年该信号 20 日超额 +0.4%（对沪深300 +1.1%，胜率 52%，t=1.3，n=3,412，未扣费）"


def stats(excess: float, csi: float | None, hit: float, t: float, n: int) -> dict:
    return {
        "complete": n,
        "dates": n // 3,
        "mean_return": excess + 0.01,
        "mean_return_after_cost": excess,
        "excess_vs_market": excess,
        "excess_vs_csi300": csi,
        "hit_rate": hit,
        "t_stat": t,
    }


def hand_made_records(signal_days: int = 1_952, years: float = 8.0) -> dict:
    """Records as `wyckoff research signals` saves them: SOS well studied, Spring with few
    events, `screen`'s top 20 negative and significant."""

    def signal(name: str, at20: dict) -> dict:
        return {"signal": name, "label": name, "events": at20["complete"] + 5, "20": at20}

    return {
        "start": "2018-01-02",
        "end": "2025-12-31",
        "years": years,
        "signal_days": signal_days,
        "signals": [
            signal("spring", stats(0.02, None, 0.6, 2.5, 12)),
            signal("sos", stats(0.004, 0.011, 0.52, 1.3, 3_412)),
            signal("screen_top20", stats(-0.0192, -0.008, 0.41, -4.2, 40_000)),
        ],
    }


def save_records(store_path: Path, records: dict, *, stale: bool = False) -> None:
    version = "an older version" if stale else store_version(store_path)
    payload = {"version": version, "config": config_key(DEFAULT_CONFIG), "records": records}
    path = records_path(store_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")


def sos_today() -> Panel:
    """The target ('600000') fires SOS (and Spring) on the last stored day."""
    p = sos_then("open")
    bars = (p.open, p.high, p.low, p.close, p.volume, p.amount)
    index = {code: closes[:-1] for code, closes in p.index_close.items()}
    return Panel(p.dates[:-1], p.codes, *(a[:-1] for a in bars), p.stocks, index, "test")


@pytest.fixture
def sos_store(home: Path) -> Path:
    home.mkdir(parents=True)
    return store_from_panel(home, sos_today()).path


def analyze_json(*args: str) -> dict:
    out = cli("analyze", "600000", "--json", *args, env=TUSHARE)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_analyze_shows_each_signals_record_with_the_cached_numbers(sos_store: Path):
    save_records(sos_store, hand_made_records())
    text = cli("analyze", "600000", env=TUSHARE)
    assert text.returncode == 0, text.stderr
    assert f"SOS：{SOS_SENTENCE}" in text.stdout
    assert "Spring：该信号在本库只有 12 个完整的 20 日事件（少于 30），样本太少" in text.stdout

    records = {r["signal"]: r for r in analyze_json()["signal_records"]}
    sos = records["sos"]
    assert sos["status"] == "ok" and sos["text"] == SOS_SENTENCE
    assert sos["excess_vs_market"] == 0.004 and sos["excess_vs_csi300"] == 0.011
    assert sos["hit_rate"] == 0.52 and sos["t_stat"] == 1.3 and sos["events"] == 3_412
    assert sos["years"] == 8.0 and sos["horizon"] == 20 and sos["after_cost"] is False
    assert sos["evidence"] == "none"  # t 1.3: no edge
    assert records["spring"]["status"] == "too_few" and "excess_vs_market" not in records["spring"]


def test_a_record_from_an_older_store_version_is_still_shown_not_recomputed(sos_store: Path):
    save_records(sos_store, hand_made_records(), stale=True)
    assert f"SOS：{SOS_SENTENCE}" in cli("analyze", "600000", env=TUSHARE).stdout


def test_without_a_cache_the_signal_says_it_is_not_yet_studied_and_how_to_build_it(
    sos_store: Path,
):
    text = cli("analyze", "600000", env=TUSHARE)
    assert text.returncode == 0, text.stderr
    assert f"SOS：{NOT_STUDIED}" in text.stdout and "wyckoff research signals" in text.stdout
    assert "超额" not in text.stdout
    assert not records_path(sos_store).exists()  # nothing computed on the fly
    (sos,) = [r for r in analyze_json()["signal_records"] if r["signal"] == "sos"]
    assert sos["status"] == "not_studied" and "events" not in sos


def test_too_short_a_history_gives_no_number(sos_store: Path):
    save_records(sos_store, hand_made_records(signal_days=120, years=0.5))
    text = cli("analyze", "600000", env=TUSHARE).stdout
    assert "本库历史太短（120 个信号日，少于 250）" in text and "n=3,412" not in text


def test_screen_shows_the_record_of_its_picks_and_of_the_signals_it_lists(sos_store: Path):
    save_records(sos_store, hand_made_records())
    out = cli("screen", "--json", env=TUSHARE)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert any("SOS" in c["triggers"] for c in result["top_candidates"])
    assert result["record"]["signal"] == "screen_top20"
    assert result["record"]["evidence"] == "negative"
    assert result["record"]["text"].startswith("近 8 年该信号 20 日超额 -1.9%（对沪深300 -0.8%")
    assert SOS_SENTENCE in [r["text"] for r in result["signal_records"]]

    text = cli("screen", env=TUSHARE).stdout
    assert "历史记录（本地行情库）" in text
    assert "screen 前 20：近 8 年该信号 20 日超额 -1.9%" in text and f"SOS：{SOS_SENTENCE}" in text


def test_on_the_demo_store_the_record_says_it_is_no_evidence(demo_home: Path):
    out = cli("screen", "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)["record"]
    assert record["status"] == "demo" and "演示数据" in record["text"]
    assert "excess_vs_market" not in record
    (line,) = [x for x in cli("screen").stdout.splitlines() if "没有可作证据" in x]
    assert line.startswith("  · screen 前 20") and line.endswith("：" + record["text"])  # one line


def test_sentence_formats_short_spans_and_an_unknown_csi300():
    saved = {"records": {**hand_made_records(years=1.4, signal_days=340)}}
    saved["records"]["signals"][1]["20"]["excess_vs_csi300"] = None
    record = signal_record(saved, "sos", demo=False)
    assert record["text"] == "近 1.4 年该信号 20 日超额 +0.4%（胜率 52%，t=1.3，n=3,412，未扣费）"


def test_the_agent_gets_the_structured_record_and_is_told_to_cite_it(
    sos_store: Path, home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("WYCKOFF_DATA_SOURCE", "tushare")
    save_records(sos_store, hand_made_records())
    provider = ScriptedProvider(
        Reply(tool_calls=[("analyze_stock", {"code": "600000"})]),
        Reply(text="SOS 的历史记录不支持把它当作优势。"),
    )
    runtime = AgentRuntime(provider, default_registry(), home=home, store=None)
    conversation = Conversation.start(ChatLog(Store.in_home(home)))
    conversation.append({"role": "user", "content": "600000 的信号可靠吗"})
    events = list(runtime.run_stream(conversation))
    assert events[-1]["status"] == "completed"

    observation = provider.requests[1]["messages"][-1]["content"]
    payload = json.loads(observation[observation.index("{") : observation.rindex("}") + 1])
    (sos,) = [r for r in payload["signal_records"] if r["signal"] == "sos"]
    assert sos["events"] == 3_412 and sos["t_stat"] == 1.3 and sos["text"] == SOS_SENTENCE
    system = provider.requests[0]["system_prompt"]
    assert "signal_records" in system and "绝不把这个信号说成优势" in system


def test_tail_gives_a_checked_pending_signal_its_record(home: Path, install_demo):
    from wyckoff.agents.market_data import MarketData
    from wyckoff.agents.screening import save_screen
    from wyckoff.config import load_config

    market = install_demo(home, 60)
    assert cli("data", "use", "demo").returncode == 0
    ((code, name),) = market.execute("SELECT code, name FROM stocks ORDER BY code LIMIT 1")
    (last,) = market.execute("SELECT MAX(date) FROM bars")[0]
    candidate = {"code": code, "name": name, "channels": ["潜伏"], "triggers": ["SOS"],
                 "trigger_keys": ["sos"], "score": 60.0, "close": 10.0}  # fmt: skip
    open_days = MarketData(home, load_config(home)).open_days()
    save_screen(Store.in_home(home), "demo", str(last)[:10], [candidate], open_days)

    out = cli("tail", "--json", env={"WYCKOFF_NOW": f"{str(last)[:10]}T14:46:00+08:00"})
    assert out.returncode == 0, out.stderr
    (row,) = [r for r in json.loads(out.stdout)["results"] if r["code"] == code]
    assert row["role"] == "信号"
    assert [(r["signal"], r["status"]) for r in row["signal_records"]] == [("sos", "demo")]


def test_research_signals_over_the_whole_history_builds_the_records_analyze_reads(
    sos_store: Path,
):
    from wyckoff.engine.window import WARMUP_DAYS

    out = cli("research", "signals", "--json", env=TUSHARE)
    assert out.returncode == 0, out.stderr
    signal_days = json.loads(out.stdout)["signal_days"]
    assert signal_days == len(sos_today().dates) - WARMUP_DAYS
    assert records_path(sos_store).exists()
    text = cli("analyze", "600000", env=TUSHARE).stdout
    assert f"本库历史太短（{signal_days} 个信号日，少于 250）" in text
