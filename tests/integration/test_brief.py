"""`wyckoff brief`: the after-close brief from the engine's own numbers, saved by trading date."""

from __future__ import annotations

import json
import re
import socket

from tests.cli_runner import cli
from tests.integration.test_portfolio_check import demo_codes


def hold(codes: list[str], cost: str = "10") -> None:
    for code in codes:
        assert cli("portfolio", "add", code, "--shares", "100", "--cost", cost).returncode == 0


def test_the_briefs_holdings_are_what_analyze_says_for_the_same_date(demo_home):
    codes = demo_codes(demo_home, 3)
    hold(codes)
    built = cli("brief", "--format", "json")
    assert built.returncode == 0, built.stderr
    brief = json.loads(built.stdout)
    assert [h["code"] for h in brief["holdings"]] == sorted(codes)
    for holding in brief["holdings"]:
        analyzed = json.loads(cli("analyze", holding["code"], "--cost", "10", "--json").stdout)
        assert analyzed["as_of"] == brief["date"]
        assert holding["stop_level"] == analyzed["stop"]["stop"]
        assert holding["stop_kind"] == analyzed["stop"]["kind"]
        assert holding["health"] == analyzed["health"]
        assert holding["reasons"] == analyzed["reasons"]
        assert holding["exit_status"] == analyzed["exit"]
    assert brief["regime"]["label"] and "演示数据" in brief["data_note"]
    shown = {label for c in brief["candidates"] for label in c["triggers"]}
    records = brief["signal_records"]  # screen's picks first, then each shown signal's
    assert [r["signal"] for r in records][:1] == ["screen_top20"]
    assert {r["label"] for r in records[1:]} == shown
    assert all(r["status"] == "demo" for r in records)


def test_the_html_brief_is_one_small_page_without_scripts_or_outside_addresses(demo_home):
    hold(demo_codes(demo_home, 5))
    built = cli("brief", "--format", "html")
    assert built.returncode == 0, built.stderr
    page = (demo_home / "briefs").glob("*.html").__next__().read_text(encoding="utf-8")
    assert page == built.stdout
    assert len(page.encode()) <= 200_000
    assert "<script" not in page.lower() and not re.search(r"(https?:)?//", page)
    assert 'name="viewport"' in page and page.count("<svg") >= 5
    assert re.search(r'<p class="demo">⚠ 演示数据', page)
    assert "信号的历史记录（本地行情库）" in page and "没有可作证据的历史记录" in page


def test_building_the_brief_again_replaces_the_same_files(demo_home):
    hold(demo_codes(demo_home, 2))
    assert cli("brief").returncode == 0
    first = {p.name: p.read_bytes() for p in (demo_home / "briefs").iterdir()}
    again = cli("brief")
    assert again.returncode == 0 and "已保存" in again.stderr
    assert {p.name: p.read_bytes() for p in (demo_home / "briefs").iterdir()} == first
    date = next(iter(first)).split(".")[0]
    assert sorted(first) == [f"{date}.html", f"{date}.json", f"{date}.md"]
    shown = cli("brief", "--date", date, "--format", "md")
    assert shown.stdout.encode() == first[f"{date}.md"]


def test_without_a_model_the_brief_makes_no_connection_at_all(demo_home, monkeypatch):
    hold(demo_codes(demo_home, 2))
    attempts = []
    real_connect = socket.socket.connect
    monkeypatch.setattr(
        socket.socket,
        "connect",
        lambda sock, address: attempts.append(address) or real_connect(sock, address),
    )
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: attempts.append(a) or [])
    built = cli("brief", "--format", "html")
    assert built.returncode == 0, built.stderr
    assert attempts == []


def test_bad_brief_options_get_one_sentence_and_exit_2(demo_home):
    wrong_format = cli("brief", "--format", "pdf")
    assert wrong_format.returncode == 2 and "md、html 或 json" in wrong_format.stderr
    no_such_day = cli("brief", "--date", "2020-01-06")
    assert no_such_day.returncode == 2 and "没有保存的简报" in no_such_day.stderr
    assert "Traceback" not in no_such_day.stderr
    bad_day = cli("brief", "--date", "yesterday")
    assert bad_day.returncode == 2 and "YYYY-MM-DD" in bad_day.stderr
    assert not (demo_home / "briefs").exists() or not any((demo_home / "briefs").iterdir())


def test_a_day_without_a_saved_brief_is_refused_before_any_alert_is_recorded(demo_home):
    assert cli("alert", "add", "volume", "--scope", "market", "--threshold", "1.5").returncode == 0
    refused = cli("brief", "--date", "2020-01-06")
    assert refused.returncode == 2 and "2020-01-06 没有保存的简报" in refused.stderr
    assert alert_history() == []  # the alert table is unchanged
    assert cli("brief").returncode == 0
    assert alert_history() != []  # the rule does fire on the latest day


def alert_history() -> list[dict]:
    return json.loads(cli("alert", "history", "--json").stdout)["alerts"]


def test_out_naming_a_folder_is_one_sentence_before_any_work(demo_home, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    result = cli("brief", "--out", str(folder))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"--out {folder} 是一个文件夹：请给出文件名" in result.stderr
    assert not (demo_home / "briefs").exists()  # refused before the brief was built
    assert list(folder.iterdir()) == []


def test_ai_commentary_comes_from_the_model_in_its_own_section(demo_home, openai_server):
    from tests.conftest import add_scripted_model
    from tests.model_servers import Reply

    hold(demo_codes(demo_home, 1))
    add_scripted_model(openai_server)
    openai_server.script(Reply(text="注意第一只持仓的止损。"))
    built = cli("brief", "--ai", "--format", "html")
    assert built.returncode == 0, built.stderr
    assert '<h2>AI 点评</h2><div class="ai"><small>模型生成' in built.stdout
    assert "注意第一只持仓的止损。" in built.stdout
    sent = openai_server.bodies[0]["messages"][-1]["content"]
    assert (
        sent.startswith("# 威科夫收盘简报")
        and "演示数据" in openai_server.bodies[0]["messages"][0]["content"]
    )
    markdown = (demo_home / "briefs").glob("*.md").__next__().read_text(encoding="utf-8")
    assert markdown.split("## AI 点评")[1].strip().endswith("注意第一只持仓的止损。")


def test_ai_commentary_without_a_model_is_skipped_with_a_sentence(demo_home):
    built = cli("brief", "--ai", "--format", "json")
    assert built.returncode == 0 and "没有可用的模型" in built.stderr
    assert "ai_commentary" not in json.loads(built.stdout)


def test_the_brief_shows_the_account_of_recorded_fills_beside_the_csi_300(home, tmp_path):
    from tests.integration.test_ledger import done, import_market

    csi300 = [4000, 4040, 3960, 4000, 4080]
    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 13]}, csi300=csi300)
    cli("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    done("portfolio", "sell", "600519", "500", "11.00", "--date", "20260106")
    built = cli("brief", "--format", "json")
    assert built.returncode == 0, built.stderr
    account = json.loads(built.stdout)["account"]
    assert (account["date"], account["nav_cents"]) == ("2026-01-09", 9548709 + 650000)
    assert [row[0] for row in account["curve"]] == [
        "2026-01-05", "2026-01-06", "2026-01-07", "2026-01-08", "2026-01-09"
    ]  # fmt: skip
    assert (account["nav_change_cents"], account["nav_change_pct"]) == (50000, 0.49)
    assert (account["realized_cents"], account["unrealized_cents"]) == (48964, 650000 - 500255)
    assert account["csi300_pct"] == 2.0
    text = cli("brief", "--format", "md").stdout
    assert "净值 2026-01-09：101,987.09（较前一交易日 +500.00，+0.49%）" in text
    assert "已实现盈亏 +489.64，浮动盈亏 +1,497.45" in text and "同期沪深300 +2.00%" in text
    page = cli("brief", "--format", "html").stdout
    assert "<li>净值 2026-01-09：101,987.09" in page and "20260109" not in page
    assert '<svg viewBox="0 0 320 90" role="img" aria-label="账户净值与沪深300">' in page
    assert page.count("<polyline") == 2 and len(page.encode()) <= 200_000
    assert "<script" not in page.lower() and not re.search(r"(https?:)?//", page)


def test_without_recorded_fills_the_brief_has_no_account_section(demo_home):
    hold(demo_codes(demo_home, 2))  # positions set by hand, no fill
    built = cli("brief", "--format", "json")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["account"] is None
    assert "## 账户" not in cli("brief", "--format", "md").stdout
    assert "账户净值" not in cli("brief", "--format", "html").stdout
