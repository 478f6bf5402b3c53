"""The benchmarks are not tests, but they must keep up with the code they measure."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "bench"
SCRIPTS = sorted(
    path for path in BENCH.glob("*.py") if not path.stem.startswith("_")
)  # _x: helpers


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_each_benchmark_loads_against_the_current_code(script: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imports and module-level set-up only; nothing runs
    assert callable(getattr(module, "main", None))


def test_the_figures_page_runs_every_benchmark():
    """docs/bench.md is written by bench/run_all.py: a new script must be on its list."""
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    run_all = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_all)
    listed = {bench.script for bench in run_all.BENCHMARKS}
    assert listed == {path.name for path in SCRIPTS} - {"run_all.py"}
