"""The scorecard page: every piece of advice with its outcome, the demo market's apart."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.cli_runner import cli


def test_the_scorecard_page_shows_each_item_and_labels_the_demo_market(
    web, browser_page: Page
) -> None:
    added = cli("scorecard", "add", "平安银行", "--advice", "buy", "--note", "回踩不破")
    assert added.returncode == 0, added.stderr
    client = web.login()
    card = client.get("/api/scorecard").json()
    (item,) = card["items"]
    expected = json.loads(cli("scorecard", "--json").stdout)["items"][0]
    assert {k: item[k] for k in expected} == expected  # the same items `scorecard --json` gives
    assert card["summary"] == [] and card["demo_summary"][0]["kind"] == "我的判断"

    page = browser_page
    page.goto(f"{web.base}/scorecard?token={web.token}")
    row = page.locator("main table tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("我的判断（演示）")
    expect(row).to_contain_text("000001 平安银行")
    expect(row).to_contain_text("买入")
    expect(page.locator("#demo-summary")).to_contain_text("我的判断：1 条")
    expect(page.locator("main")).to_contain_text("还没有真实行情上的建议")
    expect(page.locator("nav a[href='/scorecard']")).to_have_class("current")
