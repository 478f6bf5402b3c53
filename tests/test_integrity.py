"""Several processes on one home, crashes at the worst moment, and the store they leave."""

from __future__ import annotations

import json

from tests.conftest import cli, spawn_cli
from wyckoff.engine.sources import ensure_demo


def finish(processes) -> list[tuple[int, str, str]]:
    return [(p.wait(timeout=180), *p.communicate()) for p in processes]


def assert_clean(results) -> None:
    for code, out, err in results:
        assert code == 0, err
        assert "Traceback" not in out + err


def test_parallel_first_runs_on_a_fresh_home_all_work(home):
    results = finish([spawn_cli("portfolio", "list", "--json") for _ in range(6)])
    assert_clean(results)
    assert all(json.loads(out)["positions"] == [] for _, out, _ in results)


def test_market_readers_run_side_by_side(home):
    home.mkdir()
    ensure_demo(home, limit=300)
    cli("data", "use", "demo")
    runs = [spawn_cli("analyze", "000001", "--json") for _ in range(3)]
    runs += [spawn_cli("market", "--json") for _ in range(2)]
    results = finish(runs)
    assert_clean(results)
    assert json.loads(results[0][1])["code"] == "000001"
    assert json.loads(results[-1][1])["source"] == "demo"
