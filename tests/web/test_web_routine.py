"""The daily routine in the reading room, over a real server: alert rules and what fired, the
watchlist, the HTML briefs and the approvals scheduled runs left. Every change is a plan the
user reads, then an explicit execute with the CSRF token; a page view changes nothing."""

from __future__ import annotations

import json

from tests.cli_runner import cli
from tests.web.server import cash


def listed(*args: str) -> dict:
    return json.loads(cli(*args, "--json").stdout)


def test_alert_rules_are_added_and_removed_through_a_plan_and_fired_alerts_are_shown(web) -> None:
    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    form = {"action": "add", "kind": "change", "scope": "market", "threshold": "1"}
    plan = client.post("/api/alerts/plan", json=form, headers=csrf).json()
    assert plan["sentence"] == "添加提醒 change：全市场：单日涨跌幅 ≥ 1%"
    assert listed("alert", "list")["rules"] == []  # a plan writes nothing
    done = client.post("/api/execute", json=plan, headers=csrf).json()
    assert done["sentence"].startswith("已添加提醒 #1 change：全市场：单日涨跌幅 ≥ 1%")
    assert [r["kind"] for r in listed("alert", "list")["rules"]] == ["change"]
    again = client.post("/api/execute", json=plan, headers=csrf)  # a plan runs once
    assert again.status_code == 400 and "已执行或已过期" in again.json()["error"]

    assert cli("alert", "check").returncode == 0  # what the daily routine does
    fired = listed("alert", "history")["alerts"]
    page = client.get("/api/alerts").json()
    assert fired and page["history"] == fired
    assert page["today"] and {e["date"] for e in page["today"]} == {fired[0]["date"]}

    bad = client.post(
        "/api/alerts/plan", json={"action": "add", "kind": "price", "scope": "000001"}, headers=csrf
    )
    assert bad.status_code == 400 and "--above" in bad.json()["error"]  # as `alert add` says
    plan = client.post("/api/alerts/plan", json={"action": "remove", "id": 1}, headers=csrf).json()
    assert plan["sentence"].startswith("删除提醒 #1 change")
    assert client.post("/api/execute", json=plan, headers=csrf).json()["sentence"] == (
        "已删除提醒 #1。"
    )
    assert listed("alert", "list")["rules"] == []


def test_the_watchlist_is_changed_through_a_plan_with_the_one_resolver(web) -> None:
    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    form = {"action": "add", "code": "万科", "tags": "地产，观察", "note": "等回踩"}
    plan = client.post("/api/watch/plan", json=form, headers=csrf).json()
    assert plan["sentence"] == "把 000002 万科A 加入自选股，标签 地产、观察，备注：等回踩"
    assert listed("watch", "list")["watchlist"] == []
    client.post("/api/execute", json=plan, headers=csrf)
    [watched] = client.get("/api/watch").json()["watchlist"]
    assert watched == listed("watch", "list")["watchlist"][0]
    assert (watched["code"], watched["tags"], watched["note"]) == (
        "000002",
        ["地产", "观察"],
        "等回踩",
    )

    ambiguous = client.post("/api/watch/plan", json={"action": "add", "code": "银行"}, headers=csrf)
    assert ambiguous.status_code == 400 and "请用 6 位代码或完整名称" in ambiguous.json()["error"]
    plan = client.post("/api/watch/plan", json={"action": "remove", "code": "000002"}, headers=csrf)
    assert plan.json()["sentence"] == "把 000002 万科A 移出自选股"
    client.post("/api/execute", json=plan.json(), headers=csrf)
    assert listed("watch", "list")["watchlist"] == []


def test_pending_approvals_are_approved_or_rejected_as_wyckoff_approvals_does(
    web, demo_home
) -> None:
    from wyckoff.routine.approvals import queue
    from wyckoff.store import Store

    store = Store.in_home(demo_home)  # what a scheduled run leaves when it meets a risky call
    for amount in (1234, 999):
        queue(
            store,
            "update_portfolio",
            {"action": "set_cash", "cash": amount},
            f"把现金从 0.00 元改为 {amount:,.2f} 元",
            "schedule morning",
        )
    client = web.login()
    csrf = {"x-csrf-token": web.csrf(client)}
    pending = client.get("/api/approvals").json()["pending"]
    assert {a["description"] for a in pending} == {
        "把现金从 0.00 元改为 1,234.00 元",
        "把现金从 0.00 元改为 999.00 元",
    }
    first, second = sorted(a["id"] for a in pending)
    plan = client.post("/api/approvals/plan", json={"id": first}, headers=csrf).json()
    assert plan["sentence"] == f"批准并执行一次 #{first}：把现金从 0.00 元改为 1,234.00 元"
    assert cash() == 0  # the plan ran nothing
    done = client.post("/api/execute", json=plan, headers=csrf).json()
    assert done["sentence"].startswith(f"已批准并执行 #{first}：") and cash() == 1234
    plan = client.post(
        "/api/approvals/plan", json={"id": second, "decision": "reject"}, headers=csrf
    ).json()
    assert client.post("/api/execute", json=plan, headers=csrf).json()["sentence"] == (
        f"已拒绝 #{second}：把现金从 0.00 元改为 999.00 元（没有执行）"
    )
    assert cash() == 1234 and listed("approvals", "list")["approvals"] == []
    statuses = {a["id"]: a["status"] for a in listed("approvals", "list", "--all")["approvals"]}
    assert statuses == {first: "applied", second: "rejected"}
    gone = client.post("/api/approvals/plan", json={"id": first}, headers=csrf)
    assert gone.status_code == 400 and "不是待批准的操作" in gone.json()["error"]


def test_the_html_brief_is_served_as_a_file_under_the_same_csp(web, demo_home) -> None:
    assert cli("brief").returncode == 0  # writes YYYY-MM-DD.md/.html/.json under briefs/
    client = web.login()
    [brief] = client.get("/api/briefs").json()["briefs"]
    assert brief["html_file"] == f"/briefs/{brief['name']}.html"
    response = client.get(brief["html_file"])
    saved = (demo_home / "briefs" / f"{brief['name']}.html").read_text(encoding="utf-8")
    assert response.status_code == 200 and response.text == saved
    assert response.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    (demo_home / "secret.html").write_text("不该被读到", encoding="utf-8")
    for path in ("/briefs/..%2Fsecret.html", "/briefs/2026-1-1.html", "/briefs/x.html"):
        refused = client.get(path)
        assert refused.status_code == 404 and "不该被读到" not in refused.text, path
