"""`wyckoff web` figures on the demo market, from a warm server (uvicorn in this process, on
an ephemeral loopback port): the first page (HTML and its assets over HTTP, and in Chromium
until the chart is drawn), the stock page's data, and how long a chat event takes from the
runtime yielding it to an SSE client reading it.
Run: python bench/web.py [--stocks N] [--runs N]"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import add_scripted_model  # noqa: E402
from tests.model_servers import OpenAIServer, Reply  # noqa: E402

ASSETS = [
    "/static/app.css",
    "/static/app.js",
    "/static/vendor/lightweight-charts.standalone.production.js",
]


def serve(home: Path):
    """A warm server: the Desk has loaded the market before the first request."""
    import uvicorn

    from wyckoff.web.app import create_app
    from wyckoff.web.chat import ChatRoom
    from wyckoff.web.desk import Desk
    from wyckoff.web.security import Guard

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    guard = Guard(
        token="bench-token-0123456789abcdef", host="127.0.0.1", port=sock.getsockname()[1]
    )
    desk, room = Desk(home), ChatRoom()
    desk.warm()
    config = uvicorn.Config(create_app(guard, desk, room), log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, guard, room


def timed(work, runs: int) -> tuple[float, float]:
    """Median and worst of `runs` timings, in ms."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), max(samples)


def http_figures(client, code: str, runs: int) -> dict[str, tuple[float, float]]:
    def first_page() -> None:
        for path in [f"/stock/{code}", *ASSETS]:
            client.get(path).raise_for_status()

    client.get(f"/api/stock/{code}").raise_for_status()  # the first stock after the warm-up
    return {
        "first page (HTML + CSS + JS + chart library)": timed(first_page, runs),
        "stock page data /api/stock": timed(lambda: client.get(f"/api/stock/{code}"), runs),
        "market page data /api/market": timed(lambda: client.get("/api/market"), runs),
    }


def browser_first_page(base: str, token: str, code: str, runs: int) -> tuple[float, float] | None:
    """In Chromium: from navigation to the candles drawn on the canvas."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(f"{base}/?token={token}")

        def load() -> None:
            page.goto(f"{base}/stock/{code}")
            page.wait_for_selector("#chart canvas")

        load()  # the browser's cache holds the assets from now on, as for a returning user
        result = timed(load, runs)
        browser.close()
    return result


def event_latency(client, room, server: OpenAIServer, pieces: int) -> list[float]:
    """ms from the runtime's thread handing each event to the room (right after the yield) to
    an SSE client in another thread having parsed it."""
    published: dict[int, float] = {}
    received: dict[int, float] = {}
    publish = room.publish

    def stamped(event: dict) -> None:  # the moment the turn's thread hands the event over
        with room.lock:
            published[room.seq + 1] = time.perf_counter()
            publish(event)

    room.publish = stamped
    server.script(Reply(text="量价配合良好。" * pieces, pieces=pieces, piece_delay_s=0.005))
    csrf = client.get("/chat").text.split('name="csrf-token" content="')[1].split('"')[0]
    done = threading.Event()

    def read() -> None:
        with client.stream("GET", "/api/chat/events") as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    event = json.loads(line[5:])
                    received[event["seq"]] = time.perf_counter()
                    if event["type"] == "done":
                        done.set()
                        return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.5)
    client.post("/api/chat/send", json={"text": "走势如何"}, headers={"x-csrf-token": csrf})
    done.wait(60)
    return sorted((received[s] - published[s]) * 1000 for s in received if s in published)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stocks", type=int, default=0, help="demo size (0 = the full demo)")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="wyckoff-web-bench-"))
    os.environ["WYCKOFF_HOME"] = str(home)
    import httpx

    from tests.cli_runner import cli
    from wyckoff.engine.sources.demo import ensure_demo

    ensure_demo(home, **({"limit": args.stocks} if args.stocks else {}))
    assert cli("data", "use", "demo").returncode == 0
    model = OpenAIServer()
    add_scripted_model(model)
    server, guard, room = serve(home)
    base = f"http://127.0.0.1:{guard.port}"
    client = httpx.Client(base_url=base, timeout=60)
    client.get(f"/?token={guard.token}")
    code = "000001"
    print(f"demo market: {args.stocks or 'full'} stocks; {args.runs} runs each (median / worst)")
    for label, (median, worst) in http_figures(client, code, args.runs).items():
        print(f"  {label}: {median:.1f} ms / {worst:.1f} ms")
    in_browser = browser_first_page(base, guard.token, code, max(3, args.runs // 4))
    if in_browser:
        print(
            f"  first page in Chromium, to the chart drawn: {in_browser[0]:.0f} ms / {in_browser[1]:.0f} ms"
        )
    latencies = event_latency(client, room, model, 200)
    p95 = latencies[int(len(latencies) * 0.95) - 1]
    print(
        f"  chat event, runtime -> SSE client: median {statistics.median(latencies):.2f} ms, "
        f"p95 {p95:.2f} ms, worst {latencies[-1]:.2f} ms over {len(latencies)} events"
    )
    room.close()
    server.should_exit = True
    model.close()
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
