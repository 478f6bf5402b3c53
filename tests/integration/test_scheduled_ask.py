"""A scheduled `--ask` is headless: the model's risky call becomes one pending approval with
the Chinese action sentence, never an action; approving applies it once; stale ones expire."""

from __future__ import annotations

import json
import sqlite3

from tests.cli_runner import cli
from tests.conftest import add_scripted_model, cli_env
from tests.model_servers import Reply

BUY = {
    "action": "add",
    "code": "600519",
    "name": "贵州茅台",
    "shares": 100,
    "cost_price": 1500,
    "buy_dt": "20260105",
}


def positions() -> list[dict]:
    return json.loads(cli("portfolio", "list", "--json").stdout)["positions"]


def approvals(*flags: str) -> list[dict]:
    return json.loads(cli("approvals", "list", "--json", *flags).stdout)["approvals"]


def test_a_scheduled_ask_queues_the_portfolio_change_and_approving_applies_it_once(
    home, openai_server
):
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("update_portfolio", BUY)]),
        Reply(text="已记为待批准：买入 100 股茅台。"),
    )
    cli("schedule", "add", "morning", "--at", "09:00", "--days", "daily", "--ask", "按计划买入茅台")
    env = {"WYCKOFF_NOW": "2026-12-05T09:01:00+08:00", "PYTHONPATH": cli_env()["PYTHONPATH"]}
    ran = cli("schedule", "run-due", env=env)
    assert ran.returncode == 0, ran.stderr
    assert positions() == []
    (pending,) = approvals()
    assert pending["tool"] == "update_portfolio" and pending["origin"] == "定时任务"
    assert (
        pending["description"]
        == "买入记录：600519 贵州茅台 100 股，成本 1500.0 元，买入日 20260105"
    )
    told = openai_server.bodies[1]["messages"][-1]["content"]
    assert "待批准" in told and "什么也没有执行" in told
    approved = cli("approvals", "approve", str(pending["id"]))
    assert approved.returncode == 0 and "已批准并执行" in approved.stderr
    (position,) = positions()
    assert (position["code"], position["shares"]) == ("600519", 100)
    again = cli("approvals", "approve", str(pending["id"]))
    assert again.returncode == 2 and "不会再执行" in again.stderr
    assert positions()[0]["shares"] == 100 and approvals() == []
    (done,) = approvals("--all")
    assert done["status"] == "applied"


def test_rejected_and_expired_approvals_never_run(home):
    from wyckoff.routine.approvals import queue
    from wyckoff.store import Store

    home.mkdir(parents=True, exist_ok=True)
    store = Store.in_home(home)
    first = queue(store, "update_portfolio", BUY, "买入记录：600519 贵州茅台 100 股", "定时任务")
    stale = queue(store, "update_portfolio", BUY, "买入记录：600519 贵州茅台 100 股", "定时任务")
    with sqlite3.connect(home / "wyckoff.db") as conn:  # a day later, as the clock would make it
        conn.execute(
            "UPDATE pending_approvals SET expires_at = '2000-01-01T00:00:00Z' WHERE id = ?",
            (stale,),
        )
    rejected = cli("approvals", "reject", str(first))
    assert rejected.returncode == 0 and "没有执行" in rejected.stderr
    assert cli("approvals", "approve", str(first)).returncode == 2
    expired = cli("approvals", "approve", str(stale))
    assert expired.returncode == 2 and "已过期" in expired.stderr
    assert positions() == [] and approvals() == []
    assert {a["status"] for a in approvals("--all")} == {"rejected", "expired"}
    missing = cli("approvals", "approve", "999")
    assert missing.returncode == 2 and "没有编号 999" in missing.stderr


def test_an_approval_whose_call_fails_stays_pending_with_why_and_can_be_approved_once_fixed(
    home, tmp_path
):
    from tests.integration.test_ledger import done, import_market
    from wyckoff.routine.approvals import queue
    from wyckoff.store import Store

    import_market(home, tmp_path, {"600519": [10, 11, 12, 12, 13]})
    done("portfolio", "cash", "100000")
    done("portfolio", "buy", "600519", "1000", "10.00", "--date", "20260105")
    sell = {
        "action": "sell",
        "code": "600519",
        "shares": 500,
        "price": 12,
        "trade_date": "20260108",
    }
    number = queue(Store.in_home(home), "update_portfolio", sell, "卖出 600519 500 股", "定时任务")
    done("portfolio", "sell", "600519", "800", "11.00", "--date", "20260106")  # meanwhile, by hand

    failed = cli("approvals", "approve", str(number))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    (sentence,) = failed.stderr.splitlines()
    assert sentence.startswith(f"#{number} 没有执行（卖出 500 股超过持有的 200 股")
    assert f"仍在待批准中：处理好后再 `wyckoff approvals approve {number}`" in sentence
    (waiting,) = approvals()  # not used up: still listed, with why
    assert waiting["status"] == "pending" and "超过持有的 200 股" in waiting["result"]
    listed = cli("approvals", "list")
    assert f"#{number} 上次批准时没有执行：卖出 500 股超过持有的 200 股" in listed.stderr

    done("portfolio", "buy", "600519", "300", "11.00", "--date", "20260107")  # fixed: 500 held
    applied = cli("approvals", "approve", str(number))
    assert applied.returncode == 0 and "已批准并执行" in applied.stderr
    assert positions() == [] and approvals() == []
    assert cli("approvals", "approve", str(number)).returncode == 2  # once
