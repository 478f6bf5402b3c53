"""The reading room's ASGI app: bookmarkable pages (one HTML shell each, filled by
static/app.js from the JSON API), the JSON API over the Desk and the ChatRoom, and the chat's
event stream (SSE). Everything sits behind the Guard (security.py)."""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from wyckoff.errors import UsageError, WyckoffError
from wyckoff.web import routine
from wyckoff.web.chat import ChatRoom
from wyckoff.web.desk import Desk
from wyckoff.web.security import Guard, GuardMiddleware

STATIC = Path(__file__).parent / "static"
PAGES = {
    "home": "读盘室",
    "chat": "对话",
    "market": "大盘",
    "screen": "选股",
    "stock": "个股",
    "portfolio": "持仓",
    "memory": "记忆",
    "briefs": "简报",
    "alerts": "提醒",
    "watch": "自选",
    "scorecard": "计分卡",
}
CHART_SCRIPT = (
    '<script src="/static/vendor/lightweight-charts.standalone.production.js" defer></script>'
)
NAV = ("chat", "market", "screen", "portfolio", "watch", "alerts", "scorecard", "briefs", "memory")


def create_app(guard: Guard, desk: Desk, room: ChatRoom) -> Any:
    """The app behind the Guard; `desk` and `room` are this server's state."""

    def page_route(path: str, name: str) -> Route:
        async def endpoint(request: Request) -> HTMLResponse:
            return HTMLResponse(_shell(name, guard.csrf, request.path_params.get("code", "")))

        return Route(path, endpoint)

    async def events(request: Request) -> Response:
        from sse_starlette import EventSourceResponse

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str] = asyncio.Queue()

        def deliver(payload: str) -> None:  # called on the publishing thread
            with contextlib.suppress(RuntimeError):  # the server is closing its loop
                loop.call_soon_threadsafe(queue.put_nowait, payload)

        subscriber = await run_in_threadpool(room.subscribe, deliver)

        async def stream() -> AsyncIterator[dict[str, str]]:
            try:
                while True:
                    yield {"data": await queue.get()}
            finally:
                room.unsubscribe(subscriber)

        return EventSourceResponse(stream(), ping=15)

    def planned(make: Any) -> Any:
        """A plan endpoint: the change `make` describes, kept for an explicit execute."""
        return lambda r, body: desk.propose(make(desk.context, body))

    async def brief_page(request: Request) -> Response:
        """A saved HTML brief, as written by `wyckoff brief`, under the same headers (CSP)."""
        try:
            path = routine.brief_file(desk.home, request.path_params["name"])
        except FileNotFoundError:
            return HTMLResponse("没有这一天的 HTML 简报。", status_code=404)
        return FileResponse(path, media_type="text/html; charset=utf-8")

    routes = [
        page_route("/", "home"),
        *(page_route(f"/{name}", name) for name in NAV),
        page_route("/stock/{code}", "stock"),
        Route("/api/market", _json(lambda r, body: desk.market())),
        Route(
            "/api/market/index/{code}",
            _json(lambda r, body: desk.index_trend(r.path_params["code"])),
        ),
        Route(
            "/api/stock/{code}",
            _json(lambda r, body: desk.stock(r.path_params["code"], _days(r))),
        ),
        Route(
            "/api/stock/{code}/intraday",
            _json(lambda r, body: desk.intraday(r.path_params["code"])),
        ),
        Route("/api/screen", _json(lambda r, body: desk.latest_screen())),
        Route("/api/screen/run", _json(lambda r, body: desk.start_screen()), methods=["POST"]),
        Route("/api/portfolio", _json(lambda r, body: desk.portfolio())),
        Route("/api/portfolio/plan", _json(lambda r, body: desk.plan(body)), methods=["POST"]),
        Route(
            "/api/portfolio/execute",
            _json(lambda r, body: desk.execute(str(body.get("plan_id", "")))),
            methods=["POST"],
        ),
        Route("/api/memory", _json(lambda r, body: {"memories": desk.memories()})),
        Route(
            "/api/memory/add",
            _json(
                lambda r, body: desk.add_memory(
                    str(body.get("content", "")), str(body.get("type", ""))
                )
            ),
            methods=["POST"],
        ),
        Route(
            "/api/memory/delete",
            _json(lambda r, body: desk.delete_memory(_int(body.get("id")))),
            methods=["POST"],
        ),
        Route("/api/briefs", _json(lambda r, body: {"briefs": desk.briefs()})),
        Route("/briefs/{name}.html", brief_page),
        Route("/api/alerts", _json(lambda r, body: routine.alerts(desk.context))),
        Route("/api/watch", _json(lambda r, body: routine.watchlist(desk.context))),
        Route("/api/scorecard", _json(lambda r, body: routine.scorecard(desk.context))),
        Route("/api/approvals", _json(lambda r, body: routine.approvals(desk.context))),
        *(
            Route(f"/api/{name}/plan", _json(planned(make)), methods=["POST"])
            for name, make in (
                ("alerts", routine.alert_plan),
                ("watch", routine.watch_plan),
                ("approvals", routine.approval_plan),
            )
        ),
        Route(
            "/api/execute",
            _json(lambda r, body: desk.execute(str(body.get("plan_id", "")))),
            methods=["POST"],
        ),
        Route("/api/chat/events", events),
        Route(
            "/api/chat/send",
            _json(lambda r, body: room.send(str(body.get("text", "")))),
            methods=["POST"],
        ),
        Route("/api/chat/sessions", _json(lambda r, body: {"sessions": room.sessions()})),
        Route("/api/chat/cancel", _json(lambda r, body: room.cancel()), methods=["POST"]),
        Route(
            "/api/chat/answer",
            _json(
                lambda r, body: room.answer(
                    str(body.get("id", "")),
                    str(body.get("decision", "")),
                    str(body.get("text", "")),
                )
            ),
            methods=["POST"],
        ),
        Route(
            "/api/chat/session",
            _json(
                lambda r, body: {
                    "session_id": room.switch(str(body.get("choice", "")), body.get("id"))
                }
            ),
            methods=["POST"],
        ),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        room.close()  # an approval still waiting is answered deny

    app = Starlette(routes=routes, lifespan=lifespan)
    return GuardMiddleware(app, guard)


def _json(work: Any) -> Any:
    """An API endpoint: `work(request, body)` in a worker thread; a WyckoffError becomes its
    Chinese sentence with 400, anything else one sentence with 500 (never a traceback)."""

    async def endpoint(request: Request) -> Response:
        try:
            body = await _posted_object(request)
            result = await run_in_threadpool(work, request, body)
        except ClientDisconnect:  # closed before its body arrived (connections.py): no reader
            return Response(status_code=400)
        except WyckoffError as exc:
            return JSONResponse({"error": exc.message}, status_code=400)
        except Exception as exc:
            return JSONResponse(
                {
                    "error": f"内部错误（{type(exc).__name__}）：请重试；持续出现请在终端运行同样的命令查看。"
                },
                status_code=500,
            )
        return JSONResponse(result if result is not None else {"ok": True})

    return endpoint


async def _posted_object(request: Request) -> dict[str, Any]:
    """A POST's JSON object (`{}` for a GET or another JSON value): every endpoint reads its
    body here."""
    if request.method != "POST":
        return {}
    try:
        parsed = await request.json()
    except ValueError:
        raise UsageError("请求内容不是 JSON：请从读盘室页面里操作。") from None
    except RecursionError:  # json gives up on nesting deeper than Python's recursion limit
        raise UsageError("请求内容的 JSON 嵌套太深，已拒绝：请发送普通的 JSON 对象。") from None
    return parsed if isinstance(parsed, dict) else {}


def _days(request: Request) -> int:
    try:
        return min(max(int(request.query_params.get("days", "160")), 20), 500)
    except ValueError:
        return 160


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise UsageError(f"记忆 id 应该是数字，收到的是 {value!r}。") from None


def _shell(name: str, csrf: str, code: str = "") -> str:
    """The page's HTML: nav, an empty main the script fills, the CSRF token for its POSTs."""
    title = PAGES[name] + (f" {code}" if code else "")
    links = "".join(
        f'<a href="/{n}"{" class=current" if n == name else ""}>{PAGES[n]}</a>' for n in NAV
    )
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{csrf}">
<title>{html.escape(title)} · Wyckoff</title>
<link rel="stylesheet" href="/static/app.css">
</head><body data-page="{name}" data-code="{html.escape(code, quote=True)}">
<header><a class="brand" href="/">Wyckoff 读盘室</a><nav>{links}</nav>
<form id="go" role="search"><input name="code" placeholder="代码或名称" aria-label="股票代码或名称"></form></header>
<main id="main"><p class="muted">加载中……</p></main>
{CHART_SCRIPT if name in ("stock", "market", "portfolio") else ""}<script src="/static/app.js" defer></script>
</body></html>"""
