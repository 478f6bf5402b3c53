"""Who may talk to `wyckoff web`, checked on every request before any page or API runs
(a pure ASGI middleware, so streamed responses pass through untouched).

Like a local notebook server: the token from the printed URL (or WYCKOFF_WEB_TOKEN) is
exchanged once for an HttpOnly, SameSite=Strict cookie and the URL is cleaned of it; the
Host header must name this server (a DNS-rebinding page sends its own name) and an Origin,
when sent, must be this server's; every state change also carries the page's CSRF token in
a header, which a form or a cross-site page cannot set."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from wyckoff.errors import UsageError

TOKEN_VARIABLE = "WYCKOFF_WEB_TOKEN"
MIN_TOKEN_LENGTH = 16
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
SECURITY_HEADERS = [
    # scripts only from this server; the chart library sets element styles from its script
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        b"form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def server_token(host: str, environ_token: str | None) -> str:
    """The token this server requires: WYCKOFF_WEB_TOKEN, or a random one on loopback.
    A bind other machines can reach needs a token the user chose on purpose."""
    if environ_token is not None:
        if len(environ_token) < MIN_TOKEN_LENGTH:
            raise UsageError(
                f"{TOKEN_VARIABLE} 太短：至少 {MIN_TOKEN_LENGTH} 个字符（建议用随机生成的长串）。"
            )
        return environ_token
    if not is_loopback(host):
        raise UsageError(
            f"绑定到 {host} 会让其他机器访问读盘室：请先设置 {TOKEN_VARIABLE}（至少 "
            f"{MIN_TOKEN_LENGTH} 个字符的随机令牌）再启动，或去掉 --host 只在本机使用。"
        )
    return secrets.token_urlsafe(32)


@dataclass
class Guard:
    """The checks, for one server: its token, its port and the names it answers to."""

    token: str
    host: str
    port: int
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def cookie_name(self) -> str:
        return f"wyckoff_web_{self.port}"  # cookies ignore ports: two servers keep apart

    @property
    def allowed_hosts(self) -> set[str]:
        names = {"127.0.0.1", "localhost", "[::1]"}
        if not is_loopback(self.host) and self.host not in ("0.0.0.0", "::"):
            names.add(self.host if ":" not in self.host else f"[{self.host}]")
        return {f"{name}:{self.port}" for name in names}

    def cookie_value(self) -> str:
        """What the cookie holds: derived from the token, so the token itself never travels
        again after the first request."""
        return hmac.new(self.token.encode(), b"wyckoff-web-cookie", "sha256").hexdigest()

    def token_matches(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode(), self.token.encode())

    def cookie_matches(self, cookie_header: str) -> bool:
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(cookie_header)
        except Exception:
            return False
        morsel = cookie.get(self.cookie_name)
        return morsel is not None and hmac.compare_digest(
            morsel.value.encode(), self.cookie_value().encode()
        )

    def csrf_matches(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode(), self.csrf.encode())


class GuardMiddleware:
    """Refuses what the Guard does not allow; adds the security headers to every answer."""

    def __init__(self, app: Any, guard: Guard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":  # none is served: nothing may pass unchecked
            await receive()
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await _plain(send, *refusal)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query and self.guard.token_matches(query["token"]):
            await self.exchange_token(scope, query, send)  # also with a cookie: clean the URL
            return
        if not self.guard.cookie_matches(headers.get("cookie", "")):
            await _plain(send, 401, UNAUTHORIZED)
            return
        if scope["method"] not in SAFE_METHODS and not self.guard.csrf_matches(
            headers.get(CSRF_HEADER, "")
        ):
            await _plain(
                send, 403, "请求缺少有效的 CSRF 令牌：请从读盘室页面里操作（刷新页面后重试）。"
            )
            return
        await self.app(scope, receive, _with_headers(send, scope["path"].startswith("/static/")))

    def refusal(self, scope: dict, headers: dict[str, str]) -> tuple[int, str] | None:
        if headers.get("host", "") not in self.guard.allowed_hosts:
            return (
                403,
                "Host 不是这台读盘室服务器（已拒绝，防 DNS 重绑定）：请用 wyckoff web 打印的地址访问。",
            )
        origin = headers.get("origin")
        if origin is not None and origin.removeprefix("http://") not in self.guard.allowed_hosts:
            return 403, "跨站请求已拒绝：只接受来自读盘室自己页面的请求。"
        return None

    async def exchange_token(self, scope: dict, query: dict[str, str], send: Any) -> None:
        """The URL's token becomes the cookie; the browser is sent to the same page without
        it (out of the history, the address bar and any Referer)."""
        query.pop("token")
        location = scope["path"] + (f"?{urlencode(query)}" if query else "")
        cookie = f"{self.guard.cookie_name}={self.guard.cookie_value()}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1", "replace")),
                    (b"set-cookie", cookie.encode()),
                    (b"content-length", b"0"),
                    *SECURITY_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


UNAUTHORIZED = "需要访问令牌：请打开 wyckoff web 启动时打印的完整地址（含 ?token=…）。"


def _with_headers(send: Any, cacheable: bool) -> Any:
    """The security headers on every answer; the static files may be cached (they are the
    same for every user and hold nothing private)."""

    async def send_with_headers(message: dict) -> None:
        if message["type"] == "http.response.start":
            known = {name for name, _ in message.get("headers", [])}
            extra = [
                (k, v)
                for k, v in SECURITY_HEADERS
                if k not in known and not (cacheable and k == b"cache-control")
            ]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return send_with_headers


async def _plain(send: Any, status: int, text: str) -> None:
    """A refusal, and the connection closed after it: no body of the refused request is read
    (a slow client holds nothing)."""
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
