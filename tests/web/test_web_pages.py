"""The pages' JSON API against a real server: what each page reads, and one Chinese sentence
(never a traceback) for what the user typed wrong."""

from __future__ import annotations

import json
import re

from tests.cli_runner import cli
from tests.conftest import add_scripted_model
from tests.web.server import demo_close, demo_day


def test_pages_read_the_market_a_stock_and_the_memory(web) -> None:
    client = web.login()
    market = client.get("/api/market").json()
    assert market["regime"]["label"] and len(market["indices"]) >= 2
    trend = client.get("/api/market/index/000300.SH").json()
    assert trend["name"] == "沪深300" and len(trend["rows"]) == 120
    stock = client.get("/api/stock/万科A").json()  # a name works as on the command line
    chart, diagnosis = stock["chart"], stock["diagnosis"]
    assert chart["code"] == diagnosis["code"] == "000002" and len(chart["bars"]) == 160
    assert chart["range"]["low"] <= chart["range"]["high"] and diagnosis["stop"]["stop"] > 0
    assert cli("memory", "add", "--type", "preference", "止损不超过 8%").returncode == 0
    assert [m["content"] for m in client.get("/api/memory").json()["memories"]] == ["止损不超过 8%"]


def test_the_stock_page_reads_the_minute_path_and_the_latest_tail_verdict(web, demo_home) -> None:
    from wyckoff import tail_store
    from wyckoff.store import Store

    client = web.login()
    first = client.get("/api/stock/万科A/intraday").json()
    day = first["intraday"]
    assert first["code"] == day["code"] == "000002" and first["tail"] is None
    assert day["minutes"]["source"] == "demo" and day["minutes"]["as_of"].endswith("15:00")
    assert len(day["points"]) == 240 and day["support"] < day["prior_close"]
    vwaps = [p["vwap"] for p in day["points"]]
    assert (
        min(p["close"] for p in day["points"])
        <= vwaps[-1]
        <= max(p["close"] for p in day["points"])
    )
    rows = [{"code": "000002", "name": "万科A", "role": "候选", "verdict": "观察", "price": 9.1,
             "reasons": ["收在 VWAP 下方"], "unchecked": []}]  # fmt: skip
    tail_store.record(Store.in_home(demo_home), "2026-12-03 14:50", "2026-12-03", "demo", rows)
    tail = client.get("/api/stock/000002/intraday").json()["tail"]
    assert (tail["verdict"], tail["reasons"]) == ("观察", ["收在 VWAP 下方"])


def test_the_portfolio_page_has_the_ledgers_pnl_and_nav_and_records_fills_with_fees(web) -> None:
    assert cli("portfolio", "cash", "100000").returncode == 0
    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    bought, sold = demo_day(10), demo_day(3)
    said = []
    for side, shares, day in (("buy", 1000, bought), ("sell", 300, sold)):
        price = demo_close("000002", day)  # a price traded that day
        fill = {
            "action": side,
            "code": "万科A",
            "shares": shares,
            "price": price,
            "trade_date": day,
        }
        plan = client.post("/api/portfolio/plan", json=fill, headers=csrf).json()
        fees = re.search(r"佣金 5\.00.*?（费用合计 [\d.]+）", plan["sentence"]).group(0)
        done = client.post("/api/portfolio/execute", json=plan, headers=csrf).json()
        assert fees in done["sentence"], done
        said.append(done["sentence"])
    assert "印花税" in said[1] and "印花税" not in said[0]
    page = client.get("/api/portfolio").json()
    shown = json.loads(cli("portfolio", "show", "--json").stdout)
    realized = re.search(r"已实现盈亏 ([\d,.-]+)", said[1]).group(1)
    assert page["pnl"] == shown and f"{shown['realized_cents'] / 100:,.2f}" == realized
    assert shown["positions"][0]["shares"] == 700 and shown["unrealized_cents"] is not None
    nav = json.loads(cli("portfolio", "nav", "--json").stdout)
    assert page["nav"] == nav and nav["days"][0]["date"] == bought and len(nav["days"]) == 11
    assert nav["days"][-1]["csi300_pct"] is not None


def test_bad_input_gets_one_sentence(web) -> None:
    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    cases = [
        client.get("/api/stock/999999"),
        client.get("/api/stock/999999/intraday"),
        client.get("/api/market/index/XYZ"),
        client.post("/api/portfolio/plan", json={"action": "add", "code": "000001"}, headers=csrf),
        client.post("/api/portfolio/execute", json={"plan_id": "made-up"}, headers=csrf),
        client.post("/api/memory/delete", json={"id": "abc"}, headers=csrf),
        client.post("/api/portfolio/plan", content=b"{not json", headers=csrf),
        client.post("/api/chat/send", json={"text": "hi"}, headers=csrf),  # no model configured
    ]
    for response in cases:
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error and "Traceback" not in error and error.endswith(("。", "）")), error


def test_a_badly_filled_form_is_one_chinese_sentence_naming_the_field_as_labelled(web) -> None:
    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    wrong = "。请改好后再生成计划。"
    for form, sentence in [
        ({"action": "buy", "code": "万科A", "shares": "一百", "price": 9.5}, "「股数」填得不对：需要一个整数"),
        ({"action": "set_cash", "cash": "很多"}, "「现金」填得不对：需要一个数字"),
        ({"action": "buy", "code": "万科A"}, "还没填：股数、成交价"),
        ({"action": "sell-all", "code": "万科A"}, "「操作」填得不对：可选 'add', 'update', "),
    ]:  # fmt: skip
        response = client.post("/api/portfolio/plan", json=form, headers=csrf)
        error = response.json()["error"]
        assert response.status_code == 400 and error.startswith(sentence), error
        assert error.endswith(wrong) and error.count("。") == 2, error
    long_name = {"action": "add", "code": "万科" * 30}
    error = client.post("/api/watch/plan", json=long_name, headers=csrf).json()["error"]
    assert error.startswith("「代码或名称」填得不对：股票代码或名称最长 40 个字"), error


def test_briefs_are_the_routines_markdown_files_newest_first(web, demo_home) -> None:
    folder = demo_home / "briefs"
    folder.mkdir()
    (folder / "2026-12-02.md").write_text("# 12 月 2 日\n旧的", encoding="utf-8")
    (folder / "2026-12-03.md").write_text(
        "# 12 月 3 日\n**止损** <script>x()</script>", encoding="utf-8"
    )
    (folder / "2026-12-03.html").write_text("<script>x()</script>", encoding="utf-8")
    briefs = web.login().get("/api/briefs").json()["briefs"]
    assert [b["name"] for b in briefs] == ["2026-12-03", "2026-12-02"]
    assert "<strong>止损</strong>" in briefs[0]["html"]
    assert "<script>" not in briefs[0]["html"] and "&lt;script&gt;" in briefs[0]["html"]


def test_a_memory_added_on_the_page_is_deduplicated_and_masks_a_configured_key(
    web, openai_server
) -> None:
    add_scripted_model(openai_server)  # api key sk-test-0123456789 in wyckoff.json
    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    added = client.post(
        "/api/memory/add",
        json={"content": "我的密钥是 sk-test-0123456789", "type": "preference"},
        headers=csrf,
    )
    assert added.status_code == 200, added.text
    again = client.post(
        "/api/memory/add", json={"content": "只做主板", "type": "nonsense"}, headers=csrf
    )
    assert again.status_code == 400 and "类型" in again.json()["error"]
    [memory] = client.get("/api/memory").json()["memories"]
    assert "sk-test-0123456789" not in memory["content"]


def test_the_screen_page_reads_the_stored_result_and_runs_a_new_one_in_the_background(web) -> None:
    from tests.processes import eventually

    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    assert client.get("/api/screen").json()["rows"] == []  # a page view starts no screen
    started = client.post("/api/screen/run", json={}, headers=csrf).json()
    assert started["status"] == "running"
    again = client.post("/api/screen/run", json={}, headers=csrf)
    assert again.status_code == 400 and "已有一次筛选" in again.json()["error"]
    assert eventually(lambda: client.get("/api/screen").json()["job"]["status"] == "done", 120)
    rows = client.get("/api/screen").json()["rows"]
    assert rows and len({(r["as_of"], r["source"]) for r in rows}) == 1
    assert rows == sorted(rows, key=lambda r: (not r["triggers"], -r["score"]))
    signalled = next(r for r in rows if r["triggers"])  # its stock page marks the signal day
    page = client.get(f"/api/stock/{signalled['code']}").json()
    chart = page["chart"]
    assert (
        chart["markers"] == [signalled["as_of"]] and chart["bars"][-1]["date"] == signalled["as_of"]
    )
    records = page["diagnosis"]["signal_records"]  # each signal's record: none on demo data
    assert records and all(r["status"] == "demo" and "演示数据" in r["text"] for r in records)


def test_stock_pages_read_the_bundled_stock_list_once_per_process(demo_home) -> None:
    import sys

    from wyckoff.web.desk import Desk

    opened: list[str] = []
    watching = [True]
    sys.addaudithook(  # hooks stay for the process: this one only listens during the test
        lambda event, args: (
            opened.append(str(args[0]))
            if watching[0] and event == "open" and "a_share_list" in str(args[0])
            else None
        )
    )
    try:
        desk = Desk(demo_home)
        codes = [desk.stock(text)["chart"]["code"] for text in ("万科A", "000001", "平安银行")]
    finally:
        watching[0] = False
    assert codes == ["000002", "000001", "000001"]
    assert len(opened) <= 1, opened  # it was read twice per stock page


def test_the_portfolio_page_carries_the_paper_account_as_the_cli_gives_it(web) -> None:
    assert cli("paper", "reset", "--start", demo_day(5)).returncode == 0
    assert cli("paper", "run").returncode == 0
    paper = web.login().get("/api/portfolio").json()["paper"]
    nav = json.loads(cli("paper", "nav", "--json").stdout)
    book = json.loads(cli("paper", "show", "--json").stdout)
    assert paper["data_note"] == nav.pop("data_note") == book.pop("data_note")  # labelled demo
    nav.pop("source"), book.pop("source")
    assert paper["nav"] == nav and paper["book"]["account"] == book["account"]
    assert len(nav["days"]) == 6 and nav["days"][-1]["csi300_pct"] is not None
