"""Time and peak memory of building the full demo store (5,539 stocks x 800 days).
Run: python bench/demo_build.py  (builds in a temporary WYCKOFF_HOME, in a child process,
so the peak resident memory printed is the build's own)."""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = (
    "import sys; from pathlib import Path;"
    "from wyckoff.engine.sources.demo import ensure_demo; ensure_demo(Path(sys.argv[1]))"
)


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", BUILD, home], check=True, cwd=ROOT)
        elapsed = time.perf_counter() - started
        size_mb = (Path(home) / "market-demo.duckdb").stat().st_size / 1e6
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("demo store build (full market, one process)")
    print(f"  wall time        {elapsed:7.1f} s")
    print(f"  peak RSS         {peak_mb:7.0f} MB")
    print(f"  store file       {size_mb:7.0f} MB")


if __name__ == "__main__":
    main()
