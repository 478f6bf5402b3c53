"""Median wall time of `wyckoff --help`, `wyckoff model list` and `wyckoff ask` against an
instantly answering loopback model, and what `ask` adds over importing the OpenAI SDK it
uses. Run: python bench/startup.py [--runs N]"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import add_scripted_model  # noqa: E402
from tests.model_servers import OpenAIServer, Reply  # noqa: E402


def wyckoff_command() -> list[str]:
    script = Path(sys.executable).with_name("wyckoff")
    return [str(script)] if script.exists() else [sys.executable, "-m", "wyckoff"]


def run_ms(command: list[str], env: dict[str, str], before=None) -> float:
    if before:
        before()
    started = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return (time.perf_counter() - started) * 1000


def median_ms(command: list[str], env: dict[str, str], runs: int, before=None) -> float:
    return statistics.median(run_ms(command, env, before) for _ in range(runs))


def overhead_ms(command: list[str], baseline: list[str], env, runs: int, before) -> float:
    """Median of paired differences, so load on a shared machine hits both sides alike."""
    return statistics.median(
        run_ms(command, env, before) - run_ms(baseline, env) for _ in range(runs)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    server = OpenAIServer()
    with tempfile.TemporaryDirectory() as home:
        os.environ["WYCKOFF_HOME"] = home
        env = dict(os.environ)
        wyckoff = wyckoff_command()
        add_scripted_model(server, "bench")
        subprocess.run([*wyckoff, "--help"], env=env, capture_output=True)  # warm the .pyc cache
        figures = {
            "python -c pass (baseline)": median_ms([sys.executable, "-c", "pass"], env, runs),
            "wyckoff --help": median_ms([*wyckoff, "--help"], env, runs),
            "wyckoff model list": median_ms([*wyckoff, "model", "list"], env, runs),
            "wyckoff ask (instant model)": median_ms(
                [*wyckoff, "ask", "hi"], env, runs, before=lambda: server.script(Reply(text="ok"))
            ),
            "python -c 'import openai'": median_ms(
                [sys.executable, "-c", "import openai"], env, runs
            ),
            "ask overhead over the SDK import": overhead_ms(
                [*wyckoff, "ask", "hi"],
                [sys.executable, "-c", "import openai"],
                env,
                runs,
                before=lambda: server.script(Reply(text="ok")),
            ),
        }
    server.close()
    print(f"startup, median of {runs} runs")
    for name, ms in figures.items():
        print(f"  {name:<32} {ms:7.1f} ms")


if __name__ == "__main__":
    main()
