"""The first hour of a user on the command line: the model just added is used, local times,
Chinese throughout, clear portfolio messages, honest screen counts, clean session lists."""

from __future__ import annotations

import json

from tests.conftest import cli


def test_model_added_with_a_key_in_the_environment_becomes_the_default(home):
    env = {"ANTHROPIC_API_KEY": "sk-ant-fromenv-123456789"}
    added = cli(
        "model", "add", "c", "--provider", "openai", "--model", "gpt-4.1",
        "--api-key-env", "MY_KEY", env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    saved = json.loads((home / "wyckoff.json").read_text())
    assert [m["id"] for m in saved["models"]] == ["c"] and saved["default"] == "c"
    listed = json.loads(cli("model", "list", "--json", env=env).stdout)["models"]
    assert [(m["id"], m["default"]) for m in listed] == [("c", True)]


WIDE = {"COLUMNS": "200"}


def _utc_now_plus(hours: int) -> set[str]:
    """The minute now and one minute later, shifted by `hours` (the table shows seconds)."""
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC) + timedelta(hours=hours)
    return {(now + timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M") for m in (0, 1)}


def test_times_show_local_time_china_when_no_zone_is_set(home, monkeypatch):
    monkeypatch.delenv("TZ", raising=False)
    assert cli("portfolio", "add", "000001", "--shares", "100", "--cost", "10").returncode == 0
    china = _utc_now_plus(8)
    history = cli("portfolio", "history", env=WIDE).stdout
    assert any(stamp in history for stamp in china), history

    from wyckoff.cli.chat_log import ChatLog
    from wyckoff.store import Store

    chat_log = ChatLog(Store.in_home(home))
    session = chat_log.create_session()
    chat_log.append(session, {"role": "user", "content": "你好"})
    chat_log.append(session, {"role": "assistant", "content": "你好！"})
    sessions = cli("session", "list", env=WIDE).stdout
    assert any(stamp in sessions for stamp in china), sessions
    tokyo_like = cli("session", "list", env={**WIDE, "TZ": "XYZ-9"}).stdout  # POSIX: UTC+9
    assert any(stamp in tokyo_like for stamp in _utc_now_plus(9)), tokyo_like


def test_command_line_errors_are_one_chinese_sentence(home):
    negative = cli("portfolio", "cash", "-1")
    assert negative.returncode == 2 and "现金不能为负数" in negative.stderr
    unknown = cli("screen", "--bogus")
    assert unknown.returncode == 2 and "没有选项 --bogus" in unknown.stderr
    not_a_number = cli("backtest", "--hold-days", "x")
    assert not_a_number.returncode == 2 and "需要一个整数" in not_a_number.stderr
    too_small = cli("backtest", "--hold-days", "0")
    assert too_small.returncode == 2 and "不能小于 1" in too_small.stderr
    for result in (negative, unknown, not_a_number, too_small):
        assert "Error" not in result.stderr and "Usage" not in result.stderr
        assert "Input should" not in result.stderr and "Traceback" not in result.stderr
    assert cli("portfolio", "cash", "2000.5").returncode == 0


def test_portfolio_says_what_was_added_and_the_new_total_in_chinese(home):
    cli("portfolio", "add", "600519", "--shares", "200", "--cost", "1500")
    added = cli("portfolio", "add", "600519", "--shares", "100", "--cost", "1600")
    assert "已加仓：600519 贵州茅台 100 股 @ 1600.00" in added.stderr
    assert "现持有 300 股" in added.stderr and "1533.333" in added.stderr
    assert "1533.3333" not in added.stderr
    history = cli("portfolio", "history", env=WIDE).stdout
    assert "命令行" in history and "添加" in history
    assert " add " not in history and " cli " not in history
    undo = cli("portfolio", "undo")
    assert "已撤销最近一次添加" in undo.stderr


def test_tushare_without_a_token_is_refused_at_once(home):
    result = cli("data", "use", "tushare")
    assert result.returncode == 2 and "token" in result.stderr
    assert not (home / "wyckoff.json").exists()
    with_token = cli("data", "use", "tushare", "--token", "tok-0123456789")
    assert with_token.returncode == 0, with_token.stderr


def test_skills_and_stop_types_are_in_chinese(home, install_demo):
    skills = cli("skills", "list", env=WIDE).stdout
    assert "内置" in skills and "built-in" not in skills
    install_demo(home, 50)
    cli("data", "use", "demo")
    analysis = cli("analyze", "000001").stdout
    assert "止损" in analysis and "accumulation" not in analysis and "trailing" not in analysis


def test_session_list_leaves_out_failed_runs_and_lone_background_follow_ups(home):
    from wyckoff.cli.background import NOTIFICATION_PREFIX
    from wyckoff.cli.chat_log import ChatLog
    from wyckoff.cli.messages import synthetic
    from wyckoff.store import Store

    cli(
        "model", "add", "dead", "--provider", "openai", "--model", "gpt-4.1",
        "--base-url", "http://127.0.0.1:9/v1", "--api-key", "sk-test-0123456789",
    )  # fmt: skip
    assert cli("ask", "这次会失败", "-m", "dead").returncode != 0
    assert cli("ask", "--max-rounds", "0", "用法错误").returncode == 2
    chat_log = ChatLog(Store.in_home(home))
    follow_up = chat_log.create_session()
    chat_log.append(follow_up, synthetic("notification", f"{NOTIFICATION_PREFIX} 筛选完成"))
    chat_log.append(follow_up, {"role": "assistant", "content": "筛选完成。"})
    answered = chat_log.create_session()
    chat_log.append(answered, synthetic("notification", f"{NOTIFICATION_PREFIX} 回测完成"))
    chat_log.append(answered, {"role": "user", "content": "看看平安银行"})
    chat_log.append(answered, {"role": "assistant", "content": "好的。"})
    listed = json.loads(cli("session", "list", "--json").stdout)["sessions"]
    assert [(s["id"], s["title"]) for s in listed] == [(answered, "看看平安银行")]


def test_screen_counts_the_chosen_board_and_explains_its_columns(demo_home):
    import re

    chinext = json.loads(cli("screen", "--board", "chinext", "--json").stdout)["summary"]
    assert chinext["total_scanned"] == 0  # the 400 demo stocks are all on the main board
    text = cli("screen", env=WIDE).stdout
    assert "扫描 400 只" in text
    for word in ("评分", "EVR", "LPS", "SOS", "Spring"):
        assert re.search(rf"^\s+{word}\s", text, re.M), word
    rows = [line.split("│") for line in text.splitlines() if re.match(r"│ \d{6} ", line)]
    assert rows and all(re.fullmatch(r"\d+\.\d\d", row[4].strip()) for row in rows)


def test_backtest_reports_its_stages_while_it_runs(demo_home):
    result = cli("backtest", "--start", "2026-09-01", "--json")
    assert result.returncode == 0, result.stderr
    stages = [line for line in result.stderr.splitlines() if line.startswith("… ")]
    assert stages[0] == "… 加载行情 demo" and stages[-1].startswith("… 汇总统计")
    assert any("个交易日）" in line and line.startswith("… 逐日回测") for line in stages)
    assert json.loads(result.stdout)["source"] == "demo"


def test_a_synced_store_is_never_diagnosed_from_a_stale_cached_panel(demo_home):
    import pandas as pd

    from wyckoff.engine.market_store import MarketStore

    before = json.loads(cli("analyze", "000001", "--json").stdout)
    again = json.loads(cli("analyze", "000001", "--json").stdout)  # from the cached panel
    assert again == before
    store = MarketStore.for_source(demo_home, "demo")
    next_day = str((pd.Timestamp(before["as_of"]) + pd.offsets.BDay(1)).date())
    price = round(before["close"] * 1.05, 2)
    store.upsert(
        "bars",
        pd.DataFrame(
            {"code": ["000001"], "date": [pd.Timestamp(next_day)], "open": [price],
             "high": [price], "low": [price], "close": [price], "volume": [1e6],
             "amount": [price * 1e6], "adj_factor": [1.0]}
        ),
    )  # fmt: skip
    after = json.loads(cli("analyze", "000001", "--json").stdout)
    assert after["as_of"] == next_day and after["close"] == price


def test_ctrl_c_during_a_command_says_cancelled_and_keeps_the_config(home):
    import signal

    from tests.conftest import spawn_cli
    from wyckoff.config import load_config

    building = spawn_cli("data", "use", "demo")
    assert building.stderr is not None
    first_stage = building.stderr.readline()  # the build has started
    assert first_stage.strip()
    building.send_signal(signal.SIGINT)
    _, errors = building.communicate(timeout=60)
    assert building.returncode == 130 and errors.count("已取消") == 1 and "Traceback" not in errors
    assert load_config(home).data.source == "demo"  # the choice was saved before the build


def test_ctrl_c_pressed_again_while_stopping_still_ends_as_cancelled(home):
    """An impatient second and third Ctrl+C (or a library passing the first one on again)
    while the command stops: still one "已取消。", exit 130, never a traceback or a kill."""
    import signal
    import time

    from tests.conftest import spawn_cli

    building = spawn_cli("data", "use", "demo")
    assert building.stderr is not None and building.stderr.readline().strip()
    for _ in range(3):
        building.send_signal(signal.SIGINT)
        time.sleep(0.05)
    _, errors = building.communicate(timeout=60)
    assert building.returncode == 130 and errors.count("已取消") == 1 and "Traceback" not in errors
