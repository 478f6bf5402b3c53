"""A slow client against a real `wyckoff web` process: 1,100 sockets that each send half a
request and stall (no token is needed for that), under the common limit of 1,024 open files.
The user's browser (a fresh connection with the cookie) is still answered, the server answers
again at once when the attacker leaves, and the half-sent sockets are closed at the deadline;
a request without the token is closed right after its 401, its body never read."""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import httpx
import pytest

from tests.web.server import WebServer, web_server

DEADLINE = 4.0  # seconds (WYCKOFF_TEST_WEB_DEADLINE); the real one is 10 s
ATTACKERS = 1100
OPEN_FILES = 1024  # a common default `ulimit -n`


@pytest.fixture
def slow_web(demo_home) -> Iterator[WebServer]:
    with web_server(env={"WYCKOFF_TEST_WEB_DEADLINE": str(DEADLINE)}) as server:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.prlimit(server.process.pid, resource.RLIMIT_NOFILE, (OPEN_FILES, hard))
        yield server


def address(web: WebServer) -> tuple[str, int]:
    host, port = web.base.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


@contextmanager
def half_sent_requests(web: WebServer, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections, each with a request line and half a header, then silence."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 200:  # the attacker itself needs the descriptors
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 200), hard))
    host, port = address(web)
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection((host, port), timeout=10)
            sockets.append(sock)
            request = f"GET /api/portfolio HTTP/1.1\r\nHost: {host}:{port}\r\nX-Wait: "
            with suppress(OSError):  # the server closed it already to make room: its defence
                sock.sendall(request.encode())
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def answered_within(web: WebServer, cookies: httpx.Cookies, seconds: float) -> bool:
    """A request from a new connection with the cookie, as a browser's next page load."""
    with httpx.Client(base_url=web.base, cookies=cookies, timeout=seconds) as browser:
        try:
            return browser.get("/portfolio").status_code == 200
        except httpx.TimeoutException:
            return False


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closed `sock` (end of stream or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass  # reset: closed
    return True


def test_half_sent_requests_do_not_stall_the_users_browser(slow_web) -> None:
    cookies = slow_web.login().cookies
    with half_sent_requests(slow_web, ATTACKERS):
        started = time.monotonic()
        assert answered_within(slow_web, cookies, 2.0)  # the issue's bound, before any deadline
        assert time.monotonic() - started < DEADLINE
    assert answered_within(slow_web, cookies, 2.0)  # at once when the attacker leaves


def test_half_sent_requests_are_closed_at_the_header_deadline(slow_web) -> None:
    with half_sent_requests(slow_web, 10) as sockets:
        assert all(closed_by_server(sock, DEADLINE + 6) for sock in sockets)


def test_a_body_that_never_arrives_is_closed_at_its_deadline(slow_web) -> None:
    client = slow_web.login()
    cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
    host, port = address(slow_web)
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            f"POST /api/memory/add HTTP/1.1\r\nHost: {host}:{port}\r\nCookie: {cookie}\r\n"
            f"X-CSRF-Token: {slow_web.csrf(client)}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 1000\r\n\r\n{{".encode()
        )
        assert closed_by_server(sock, DEADLINE + 6)
    slow_web.process.terminate()
    _, log = slow_web.process.communicate(timeout=30)
    assert "Traceback" not in log  # the endpoint saw its client leave, and said nothing


def test_a_request_without_the_token_is_closed_right_after_its_401(slow_web) -> None:
    host, port = address(slow_web)
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            f"POST /api/memory/add HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Length: 100000\r\n\r\n{{".encode()
        )
        sock.settimeout(DEADLINE - 1)  # well before any deadline: at once
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 401")
    assert "访问令牌" in answer.decode()
