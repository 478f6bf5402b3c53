"""The reading room's HTTP security, played by the attacker with plain HTTP requests against a
real `wyckoff web` process: no token, a rebinding page's Host, a cross-site POST, a form
without the CSRF token, a bind other machines can reach, and secrets looked for everywhere."""

from __future__ import annotations

import json

import httpx

from tests.cli_runner import cli
from tests.conftest import add_scripted_model, cli_process
from tests.model_servers import Reply
from tests.web.server import TOKEN, web_server

PAGES = ["/", "/chat", "/market", "/screen", "/stock/000001", "/portfolio", "/memory", "/briefs"]
PAGES += ["/alerts", "/watch", "/briefs/2026-12-03.html"]
APIS = [
    "/api/market",
    "/api/stock/000001",
    "/api/screen",
    "/api/portfolio",
    "/api/memory",
    "/api/briefs",
    "/api/alerts",
    "/api/watch",
    "/api/approvals",
    "/api/stock/000001/intraday",
]


def test_without_the_token_every_address_is_401(web) -> None:
    anonymous = httpx.Client(base_url=web.base, timeout=30)
    for path in [*PAGES, *APIS, "/api/chat/events", "/static/app.js"]:
        response = anonymous.get(path)
        assert response.status_code == 401, path
        assert "访问令牌" in response.text
    assert anonymous.get("/?token=wrong-token-0123456789").status_code == 401
    assert anonymous.post("/api/screen/run", json={}).status_code == 401


def test_the_url_token_becomes_a_strict_httponly_cookie_and_leaves_the_url(web) -> None:
    client = httpx.Client(base_url=web.base, timeout=30)
    response = client.get(f"/stock/000001?token={TOKEN}&days=60")
    assert response.status_code == 303
    assert response.headers["location"] == "/stock/000001?days=60"  # token gone from the URL
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert TOKEN not in cookie  # the cookie holds a value derived from it, not the token
    page = client.get("/stock/000001")
    assert page.status_code == 200 and "个股" in page.text
    again = client.get(f"/market?token={TOKEN}")  # the printed URL opened once more
    assert again.status_code == 303 and again.headers["location"] == "/market"
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_a_dns_rebinding_host_is_refused_even_with_the_cookie(web) -> None:
    client = web.login()
    port = web.base.rsplit(":", 1)[1]
    for path in ["/", "/api/portfolio", f"/?token={TOKEN}"]:
        response = client.get(path, headers={"host": f"attacker.example:{port}"})
        assert response.status_code == 403, path
        assert "DNS 重绑定" in response.text
    assert client.get("/", headers={"host": f"localhost:{port}"}).status_code == 200


def test_cross_site_and_csrf_less_state_changes_change_nothing(web) -> None:
    assert cli("memory", "add", "--type", "preference", "只做主板股票").returncode == 0
    client = web.login()
    memory_id = client.get("/api/memory").json()["memories"][0]["id"]
    csrf = web.csrf(client)
    attempts = [
        # a page on another site posting with the victim's cookie (and even a stolen CSRF value)
        {"headers": {"origin": "http://attacker.example", "x-csrf-token": csrf}},
        {"headers": {"origin": "null", "x-csrf-token": csrf}},
        # a plain HTML form: no custom header possible
        {"headers": {}},
        {"headers": {"x-csrf-token": "guessed"}},
    ]
    for attempt in attempts:
        response = client.post("/api/memory/delete", json={"id": memory_id}, **attempt)
        assert response.status_code == 403, attempt
    for path, body in (
        ("/api/portfolio/plan", {"action": "set_cash", "cash": 1}),
        ("/api/alerts/plan", {"action": "add", "kind": "stop"}),
        ("/api/watch/plan", {"action": "add", "code": "000001"}),
        ("/api/approvals/plan", {"id": 1}),
        ("/api/execute", {"plan_id": "x"}),
    ):
        assert client.post(path, json=body, headers={}).status_code == 403, path
    assert [m["id"] for m in client.get("/api/memory").json()["memories"]] == [memory_id]
    ok = client.post("/api/memory/delete", json={"id": memory_id}, headers={"x-csrf-token": csrf})
    assert ok.status_code == 200 and client.get("/api/memory").json()["memories"] == []


def test_binding_beyond_loopback_needs_an_explicit_token(demo_home) -> None:
    result = cli_process("web", "--host", "0.0.0.0", "--port", "0", "--no-browser")
    assert result.returncode == 2
    assert "WYCKOFF_WEB_TOKEN" in result.stderr and "Traceback" not in result.stderr
    short = cli_process("web", "--port", "0", "--no-browser", env={"WYCKOFF_WEB_TOKEN": "abc"})
    assert short.returncode == 2 and "太短" in short.stderr


def test_no_secret_in_any_page_api_or_event(demo_home, openai_server) -> None:
    add_scripted_model(openai_server)  # api key sk-test-0123456789 in wyckoff.json
    with web_server() as web:
        client = web.login()
        bodies = [client.get(path).text for path in [*PAGES, *APIS, "/static/app.js"]]
        with client.stream("GET", "/api/chat/events") as stream:
            snapshot = next(line for line in stream.iter_lines() if line.startswith("data:"))
        bodies.append(snapshot)
        assert json.loads(snapshot[5:])["error"] == ""  # the agent opened: the model is there
        web.process.terminate()
        _, stderr = web.process.communicate(timeout=30)
    for text in [*bodies, stderr]:
        assert "sk-test-0123456789" not in text
        assert TOKEN not in text


def test_a_hostile_models_change_waits_for_the_page_and_nobody_else(
    demo_home, openai_server
) -> None:
    """The model asks to set the cash; a cross-site page tries to approve it for the user;
    the server stops with the dialog unanswered: the runtime's rule holds, nothing changes."""
    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("update_portfolio", {"action": "set_cash", "cash": 1})]),
        Reply(text="改不了。"),
    )
    with web_server() as web:
        client = web.login()
        csrf = web.csrf(client)
        with client.stream("GET", "/api/chat/events") as stream:
            events = (json.loads(line[5:]) for line in stream.iter_lines() if line[:5] == "data:")
            next(events)  # the snapshot
            sent = client.post(
                "/api/chat/send", json={"text": "看看行情"}, headers={"x-csrf-token": csrf}
            )
            assert sent.status_code == 200
            request = next(e for e in events if e["type"] == "approval_request")
        assert request["description"] == "把现金从 0.00 元改为 1.00 元"
        forged = client.post(
            "/api/chat/answer",
            json={"id": request["id"], "decision": "always"},
            headers={"origin": "http://attacker.example", "x-csrf-token": csrf},
        )
        assert forged.status_code == 403
        unknown = client.post(
            "/api/chat/answer",
            json={"id": request["id"], "decision": "yes"},
            headers={"x-csrf-token": csrf},
        )
        assert unknown.status_code == 400  # only allow / always / deny
        denied = client.post(  # the request still waited for the user's real answer
            "/api/chat/answer",
            json={"id": request["id"], "decision": "deny"},
            headers={"x-csrf-token": csrf},
        )
        assert denied.status_code == 200
    assert json.loads(cli("portfolio", "list", "--json").stdout)["cash"] == 0


def test_bad_ports_get_one_sentence(demo_home) -> None:
    for port in ["70000", "abc"]:
        result = cli_process("web", "--port", port, "--no-browser")
        assert result.returncode == 2 and "Traceback" not in result.stderr
    with web_server() as web:
        port = web.base.rsplit(":", 1)[1]
        taken = cli_process("web", "--port", port, "--no-browser", env={"WYCKOFF_WEB_TOKEN": TOKEN})
    assert taken.returncode == 2 and "换一个 --port" in taken.stderr


def post_paths(home) -> list[str]:
    """Every address the app answers a POST on (each reads its body as JSON)."""
    from starlette.routing import Route

    from wyckoff.web.app import create_app
    from wyckoff.web.chat import ChatRoom
    from wyckoff.web.desk import Desk
    from wyckoff.web.security import Guard

    app = create_app(Guard(token=TOKEN, host="127.0.0.1", port=1), Desk(home), ChatRoom())
    routes = app.app.routes
    return [r.path for r in routes if isinstance(r, Route) and "POST" in (r.methods or ())]


def test_a_100000_deep_json_body_is_a_400_with_one_sentence_everywhere(demo_home) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    paths = post_paths(demo_home)
    assert "/api/memory/add" in paths and len(paths) > 10
    with web_server() as web:
        client = web.login()
        csrf = {"x-csrf-token": web.csrf(client), "content-type": "application/json"}
        for path in paths:
            response = client.post(path, content=deep, headers=csrf)
            assert response.status_code == 400, path
            assert response.json() == {
                "error": "请求内容的 JSON 嵌套太深，已拒绝：请发送普通的 JSON 对象。"
            }
        assert client.get("/api/memory").json()["memories"] == []  # nothing was added
        web.process.terminate()
        _, log = web.process.communicate(timeout=30)
    assert "RecursionError" not in log and "Traceback" not in log
