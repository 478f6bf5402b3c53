"""Median wall and CPU time (user + sys) of `wyckoff --help`, `wyckoff model list` and
`wyckoff ask` against an instantly answering loopback model, and what `ask` adds over
importing the OpenAI SDK it uses. The package's .pyc files are written first, as a regular
install has them (under PYTHONDONTWRITEBYTECODE=1 an editable checkout would otherwise compile
every module it imports on every run: ~0.1 s of `ask`). Run: python bench/startup.py [--runs N]"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._machine import Run, describe_machine, run_child  # noqa: E402
from tests.conftest import add_scripted_model  # noqa: E402
from tests.model_servers import OpenAIServer, Reply  # noqa: E402


def wyckoff_command() -> list[str]:
    script = Path(sys.executable).with_name("wyckoff")
    return [str(script)] if script.exists() else [sys.executable, "-m", "wyckoff"]


def run_ms(command: list[str], env: dict[str, str], before=None) -> Run:
    """Wall and CPU milliseconds of one run."""
    if before:
        before()
    result, run = run_child(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return Run(run.wall_s * 1000, run.cpu_s * 1000)


def median_ms(command: list[str], env: dict[str, str], runs: int, before=None) -> Run:
    samples = [run_ms(command, env, before) for _ in range(runs)]
    return Run(
        statistics.median(s.wall_s for s in samples), statistics.median(s.cpu_s for s in samples)
    )


def overhead_ms(command: list[str], baseline: list[str], env, runs: int, before) -> Run:
    """Median of paired differences, so load on a shared machine hits both sides alike."""
    pairs = [(run_ms(command, env, before), run_ms(baseline, env)) for _ in range(runs)]
    return Run(
        statistics.median(a.wall_s - b.wall_s for a, b in pairs),
        statistics.median(a.cpu_s - b.cpu_s for a, b in pairs),
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
        compileall.compile_dir(
            ROOT / "wyckoff", quiet=1
        )  # writes even under PYTHONDONTWRITEBYTECODE
        subprocess.run([*wyckoff, "--help"], env=env, capture_output=True)  # the help cache
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
    print(describe_machine())
    print(f"startup, median of {runs} runs      wall         CPU")
    for name, ms in figures.items():
        print(f"  {name:<32} {ms.wall_s:7.1f} ms {ms.cpu_s:7.1f} ms")


if __name__ == "__main__":
    main()
