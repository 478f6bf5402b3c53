"""A real `wyckoff web` process on 127.0.0.1 (an ephemeral port) for the web tests, and an
httpx client that logs in the way a browser does (the printed URL, then the cookie)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from tests.cli_runner import cli
from tests.conftest import spawn_cli

TOKEN = "web-test-token-0123456789abcdef"
URL_LINE = re.compile(r"(http://[\d.]+:(\d+))/\?token=(\S+)")


@dataclass
class WebServer:
    base: str
    token: str
    process: subprocess.Popen

    def login(self, **options) -> httpx.Client:
        """A client holding the session cookie, as a browser has after opening the URL."""
        client = httpx.Client(base_url=self.base, timeout=60, **options)
        assert client.get(f"/?token={self.token}").status_code == 303
        return client

    def csrf(self, client: httpx.Client) -> str:
        page = client.get("/").text
        return re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)


def demo_store():
    import os
    from pathlib import Path

    from wyckoff.engine.market_store import MarketStore

    return MarketStore.for_source(Path(os.environ["WYCKOFF_HOME"]), "demo")


def demo_day(back: int) -> str:
    """The demo market's trading day `back` days before its last one, as YYYYMMDD (read from
    the store: the date may have changed since it was built, at midnight)."""
    query = "SELECT DISTINCT strftime(date, '%Y%m%d') AS day FROM bars ORDER BY day DESC LIMIT ?"
    return demo_store().execute(query, [back + 1])[-1][0]


def demo_close(code: str, day: str) -> float:
    """`code`'s close on `day` (YYYYMMDD) in the demo market, as traded: a price a fill on that
    day can have (the ledger refuses one outside the day's range)."""
    store = demo_store()
    query = "SELECT close FROM bars WHERE code = ? AND strftime(date, '%Y%m%d') = ?"
    return float(store.execute(query, [code, day])[0][0])


def cash() -> float:
    return json.loads(cli("portfolio", "list", "--json").stdout)["cash"]


@contextmanager
def web_server(*args: str, env: dict[str, str] | None = None) -> Iterator[WebServer]:
    process = spawn_cli(
        "web", "--port", "0", "--no-browser", *args, env={"WYCKOFF_WEB_TOKEN": TOKEN, **(env or {})}
    )
    try:
        line = process.stdout.readline()
        match = URL_LINE.search(line)
        assert match, (
            f"no URL printed: {line!r} {process.stderr.read() if process.poll() is not None else ''}"
        )
        yield WebServer(match.group(1), match.group(3), process)
    finally:
        process.terminate()
        process.wait(timeout=30)
