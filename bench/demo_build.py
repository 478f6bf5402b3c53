"""Time and peak memory of building the full demo store (5,539 stocks x 800 days).
Run: python bench/demo_build.py  (builds in a temporary WYCKOFF_HOME, in a child process,
so the peak resident memory printed is the build's own)."""

from __future__ import annotations

import resource
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._machine import describe_machine, run_child  # noqa: E402

BUILD = (
    "import sys; from pathlib import Path;"
    "from wyckoff.engine.sources.demo import ensure_demo; ensure_demo(Path(sys.argv[1]))"
)


def main() -> None:
    print(describe_machine())
    with tempfile.TemporaryDirectory() as home:
        _, run = run_child([sys.executable, "-c", BUILD, home], check=True, cwd=ROOT)
        size_mb = (Path(home) / "market-demo.duckdb").stat().st_size / 1e6
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("demo store build (full market, one process)")
    print(f"  wall time        {run.wall_s:7.1f} s")
    print(f"  CPU time         {run.cpu_s:7.1f} s")
    print(f"  peak RSS         {peak_mb:7.0f} MB")
    print(f"  store file       {size_mb:7.0f} MB")


if __name__ == "__main__":
    main()
