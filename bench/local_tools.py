"""The cost of the local tools' guards: a trivial command in each sandbox (bubblewrap,
Landlock) and the launcher alone, a read_file page, and a web_fetch of a local page (through
the SSRF checks).
Run: python bench/local_tools.py"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from wyckoff.cli.builtin_tools import default_registry  # noqa: E402
from wyckoff.cli.local_tools import sandbox  # noqa: E402
from wyckoff.cli.local_tools.web_guard import ALLOW_LOOPBACK_ENV  # noqa: E402
from wyckoff.cli.tools import ToolContext, ToolRegistry  # noqa: E402

RUNS = 20
PAGE = (
    "<html><head><title>公告</title></head><body>"
    + "<p>回购公告正文。</p>" * 2000
    + "</body></html>"
).encode()


class Page(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


def spawn(argv: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def timed(registry: ToolRegistry, context: ToolContext, name: str, **args) -> float:
    spec, params = registry.validate({"name": name, "args": args})
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        outcome = registry.run(spec, params, context, "bench")
        samples.append(time.perf_counter() - started)
        assert outcome.ok, outcome.error
    return statistics.median(samples) * 1000


def main() -> None:
    print(describe_machine())
    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(WYCKOFF_WORKSPACE=folder, WYCKOFF_HOME=f"{folder}/home")
        os.environ[ALLOW_LOOPBACK_ENV] = "127.0.0.1"
        Path(folder, "report.txt").write_text("第1行，贵州茅台\n" * 5000, encoding="utf-8")
        registry = default_registry()
        context = ToolContext(home=Path(folder, "home"), registry=registry)
        server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        commands = {}
        for name in ("bwrap", "landlock"):
            os.environ[sandbox.SANDBOX_ENV] = name
            commands[name] = timed(registry, context, "exec_command", command="true")
        limits = ["--cpu", "60", "--memory", str(sandbox.MEMORY_BYTES), "--processes", "256"]
        launcher = spawn(
            [sys.executable, "-I", "-S", str(sandbox.CONFINE_SCRIPT), *limits, "--", "true"]
        )
        bare = spawn(["true"])
        read = timed(registry, context, "read_file", path="report.txt")
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        fetched = timed(registry, context, "web_fetch", url=url)
        server.shutdown()
    print(f"local tools, median of {RUNS} runs")
    print(f"  exec_command true in bubblewrap        {commands['bwrap']:7.1f} ms")
    print(f"  exec_command true in Landlock          {commands['landlock']:7.1f} ms")
    print(f"    of which the launcher (limits)       {launcher - bare:7.1f} ms")
    print(f"  read_file 200 lines of 5,000           {read:7.1f} ms")
    print(f"  web_fetch {len(PAGE) // 1024} KB page to text          {fetched:7.1f} ms")


if __name__ == "__main__":
    main()
