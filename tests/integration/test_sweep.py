"""Parameter sweeps and walk-forward tests: a real Dask LocalCluster on loopback (2 worker
processes) gives the serial backtest's numbers for every combination; signals are computed
once per engine configuration; training never sees its test window; a killed worker's task
completes elsewhere; bad grid files get one clear sentence."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wyckoff.engine.backtest as backtest_module
from tests.conftest import cli, spawn_cli
from wyckoff.agents.sweep import SweepParams, run_backtest_sweep
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.tools import ToolContext
from wyckoff.config import SweepConfig
from wyckoff.engine.backtest import run_backtest
from wyckoff.engine.demo import build_demo_market
from wyckoff.engine.panel import Panel, panel_from_long
from wyckoff.engine.sweep import (
    dask_client,
    day_ranges,
    metrics_of,
    run_sweep,
    walk_forward_folds,
)
from wyckoff.engine.sweep_grid import EXIT_DEFAULTS, parse_grid
from wyckoff.engine.thresholds import DEFAULT_CONFIG
from wyckoff.errors import UsageError
from wyckoff.store import Store

START, END = 255, 299
GRID = {
    "hold_days": [5, 10],
    "top_n": [2, 3],
    "trailing": [True, False],
    "rs10_min": [1.0, 2.0],  # an engine threshold: two signal computations
}


@pytest.fixture(scope="module")
def panel() -> Panel:
    market = build_demo_market(limit=60, days=300)
    return panel_from_long(
        market["bars"], market["stocks"].set_index("code"), market["index_bars"], "demo"
    )


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as client:
        yield client


def serial_metrics(panel: Panel, params: dict, span: tuple[int, int]) -> dict:
    """The plain backtest of one combination, no reuse, no cluster."""
    engine = {k: v for k, v in params.items() if k not in EXIT_DEFAULTS}
    exits = {k: v for k, v in params.items() if k in EXIT_DEFAULTS}
    cfg = replace(DEFAULT_CONFIG, **engine)
    return metrics_of(run_backtest(panel, *span, cfg=cfg, **exits))


def test_a_cluster_sweep_equals_the_serial_backtest_for_every_combination(panel, client):
    assert len(client.scheduler_info()["workers"]) == 2
    result = run_sweep(panel, parse_grid(GRID), START, END, client=client)
    assert result["combinations"] == 16 and len(result["results"]) == 16
    for row in result["results"]:
        assert row["metrics"] == serial_metrics(panel, row["params"], (START, END)), row
    sharpe = [r["metrics"]["sharpe_ratio"] for r in result["results"]]
    ranked = [s for s in sharpe if s is not None]
    assert ranked == sorted(ranked, reverse=True) and sharpe[: len(ranked)] == ranked
    assert run_sweep(panel, parse_grid(GRID), START, END) == result  # in process: the same


def test_signals_are_computed_once_per_engine_config(panel, client, monkeypatch):
    funnel_days = []
    real_funnel = backtest_module.run_funnel

    def counted(p, t, cfg):
        funnel_days.append(t)
        return real_funnel(p, t, cfg)

    monkeypatch.setattr(backtest_module, "run_funnel", counted)
    run_sweep(panel, parse_grid(GRID), START, END, regime_gate=False)
    assert len(funnel_days) == 2 * (END - START)  # 2 engine configs, not 16 combinations

    before = _signal_tasks(client)
    result = run_sweep(panel, parse_grid(GRID), START, END, client=client)
    ranges = day_ranges(START, END, 2, 2)  # each config's days, split for the 2 workers
    assert len(ranges) == 4 and ranges[0][0] == START and ranges[-1][1] == END
    assert _signal_tasks(client) - before == 2 * len(ranges)
    assert result["signal_computations"] == 2
    assert result["tasks"] == 2 + 16  # however the cluster splits them, as in one process


def test_signals_split_by_day_range_are_byte_identical_to_one_process(panel, client):
    """Each config's days computed by several tasks at once and joined give exactly the
    numbers (and the JSON bytes) of one process computing them in one go."""
    grid = parse_grid({"rs10_min": [1.0], "hold_days": [5, 10]})  # one config, 8 ranges
    assert len(day_ranges(START, END, 2, 1)) == 8
    split = run_sweep(panel, grid, START, END, client=client, walk_forward=(20, 10))
    alone = run_sweep(panel, grid, START, END, walk_forward=(20, 10))
    assert json.dumps(split, sort_keys=True) == json.dumps(alone, sort_keys=True)


def test_workers_run_without_dasks_malloc_trim_threshold():
    """Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536 in each worker, which made every
    signal task twice as slow as in this process; our workers run without it."""
    with dask_client(workers=1) as client:
        seen = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert list(seen.values()) == [None]
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ  # nor leaked into this process


def opened_panels() -> list[str]:
    """In a worker: the folders of the panels it has memory-mapped (imported there, not
    pickled with this function)."""
    from wyckoff.engine import sweep

    return [ref.folder for ref in sweep._OPENED]


def test_local_workers_share_one_copy_of_the_panel_from_disk_and_it_is_gone_afterwards(
    panel, client
):
    """No copy of the panel is sent through the cluster: each worker memory-maps one folder
    (sharing the page cache), and nothing of it is left in a worker or on disk afterwards."""
    seen: list[dict] = []

    def look(stage: str, done: int, total: int, share: float) -> None:
        if not seen:
            seen.append(client.run(opened_panels))
            seen.append(client.who_has())

    result = run_sweep(panel, parse_grid(GRID), START, END, client=client, progress=look)
    assert result == run_sweep(panel, parse_grid(GRID), START, END)
    folders, held = seen
    opened = {folder for each in folders.values() for folder in each}
    assert len(opened) == 1 and all(each == list(opened) for each in folders.values())
    assert not [key for key in held if "Panel" in str(key)]  # nothing scattered
    assert not Path(opened.pop()).exists()
    assert list(client.run(opened_panels).values()) == [[], []]


def test_a_killed_sweeps_panel_folder_is_removed_by_the_next_sweep(panel, client):
    """kill -9 leaves a sweep's temporary panel folder behind (the whole market is ~220 MB);
    the next sweep removes the folders of processes that are gone, and only those."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    temp = Path(tempfile.gettempdir())
    stale = temp / f"wyckoff-sweep-{gone.stdout.strip()}-killed"
    alive = temp / f"wyckoff-sweep-{os.getppid()}-running"  # another sweep, still going
    for folder in (stale, alive):
        folder.mkdir()
        (folder / "meta.json").write_text("{}")
    try:
        run_sweep(panel, parse_grid(GRID), START, END, client=client)
        assert not stale.exists() and (alive / "meta.json").exists()
    finally:
        shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(alive, ignore_errors=True)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is installed by .ci/run")
def test_a_worker_that_cannot_read_this_machines_files_is_sent_the_panel(
    panel, tmp_path, monkeypatch
):
    """A worker elsewhere (here: in a mount namespace where the sweep's temp folder is an
    empty one of its own, as on another machine) cannot open the panel's folder: the panel
    is sent to it instead, same results."""
    from distributed import Client, LocalCluster

    hidden = str(tmp_path / "sweep-temp")  # only this: the code and the venv may be in /tmp
    Path(hidden).mkdir()
    monkeypatch.setattr(tempfile, "tempdir", hidden)
    with LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster:
        worker = subprocess.Popen(
            ["bwrap", "--dev-bind", "/", "/", "--tmpfs", hidden, "--",
             sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
             "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1", "--no-dashboard"],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            with Client(cluster) as client:
                client.wait_for_workers(1, timeout=60)
                result = run_sweep(panel, parse_grid(GRID), START, END, client=client)
                assert list(client.run(opened_panels).values()) == [[]]
        finally:
            worker.terminate()
            worker.wait()
    assert result == run_sweep(panel, parse_grid(GRID), START, END)


def test_the_tools_progress_moves_through_chinese_stages_while_signals_are_computed(
    home, demo_sweep
):
    """Progress while the cluster works, not "启动集群 5%" until the end: stages in order,
    fractions rising through intermediate values, each stage's tasks done / in all."""
    start, _ = demo_sweep(40, "")
    seen = []
    context = ToolContext(
        home=home, registry=default_registry(), store=Store.in_home(home), on_progress=seen.append
    )
    grid = {"rs10_min": [1.0, 2.0], "hold_days": [5, 10]}
    run_backtest_sweep(SweepParams(grid=grid, start=start), context, SweepConfig(workers=2))
    stages = [update["stage"] for update in seen]
    assert stages[:2] == ["加载行情", "启动集群"] and stages[-1] == "回放组合"
    assert stages.index("回放组合") > stages.index("计算信号") > 1
    assert "回放组合" not in stages[: stages.index("计算信号")]
    fractions = [update["fraction"] for update in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    signals = [u["fraction"] for u in seen if u["stage"] == "计算信号"]
    assert len(set(signals)) >= 4 and 0.05 < signals[0] < signals[-1] < 1.0
    ranges = len(day_ranges(0, 39, 2, 2))  # the 40-day window's signal days, per config
    in_signals = [u["detail"] for u in seen if u["stage"] == "计算信号"]
    assert in_signals == [f"{k}/{2 * (ranges + 1)}" for k in range(1, 2 * (ranges + 1) + 1)]
    assert [u["detail"] for u in seen if u["stage"] == "回放组合"][-1] == "4/4"


def _signal_tasks(client) -> int:
    """How many times the cluster computed a signal task: the scheduler's count of
    transitions into memory (later releases of earlier sweeps' results do not count)."""

    def count(dask_scheduler) -> int:
        prefix = dask_scheduler.task_prefixes.get("signals_task")
        return 0 if prefix is None else prefix.state_counts["memory"]

    return client.run_on_scheduler(count)


@given(
    start=st.integers(0, 50),
    length=st.integers(1, 400),
    train=st.integers(1, 120),
    test=st.integers(1, 60),
)
def test_walk_forward_test_windows_are_never_seen_in_training(start, length, train, test):
    end = start + length - 1
    folds = walk_forward_folds(start, end, train, test)
    for k, fold in enumerate(folds):
        assert fold.train[1] - fold.train[0] + 1 == train
        assert fold.test[1] - fold.test[0] + 1 == test
        assert fold.train[1] < fold.test[0] == fold.train[1] + 1  # training ends before
        assert start <= fold.train[0] and fold.test[1] <= end
        if k:
            assert fold.test[0] == folds[k - 1].test[1] + 1  # test windows chain, no overlap
    assert len(folds) == max(0, (length - train) // test)  # every whole fold that fits


def test_walk_forward_chooses_on_data_before_each_test_window_only(panel, client):
    grid = parse_grid({"hold_days": [5, 10], "stop_loss_pct": [5.0, 8.0]})
    result = run_sweep(panel, grid, 220, END, client=client, walk_forward=(30, 15))
    folds = walk_forward_folds(220, END, 30, 15)
    assert len(result["folds"]) == len(folds) == 3
    for fold, reported in zip(folds, result["folds"], strict=True):
        # Cut the market at the end of training: the choice and its numbers are the same.
        seen = panel.upto(fold.train[1])
        alone = run_sweep(seen, grid, *fold.train)
        assert reported["params"] == alone["results"][0]["params"]
        assert reported["in_sample"] == alone["results"][0]["metrics"]
        assert reported["out_of_sample"] == serial_metrics(panel, reported["params"], fold.test)


def test_a_killed_workers_task_completes_elsewhere(panel):
    grid = parse_grid({**GRID, "stop_loss_pct": [5.0, 8.0]})
    killed = []
    with dask_client(workers=2) as client:

        def kill_a_busy_worker(stage: str, done: int, total: int, share: float) -> None:
            busy = [w for w, keys in client.processing().items() if keys]
            if killed or done < 3 or not busy:
                return
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

        result = run_sweep(panel, grid, START, END, client=client, progress=kill_a_busy_worker)
    assert killed, "no worker was busy mid-sweep"
    assert len(result["results"]) == 32
    for row in result["results"]:
        assert row["metrics"] == serial_metrics(panel, row["params"], (START, END))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hold_dayz = [5, 10]", ["hold_dayz", "hold_days", "trailing", "rs10_min"]),
        ("hold_days = [5, 10", ["不是有效的 TOML"]),
        ('hold_days = ["five"]', ["hold_days", "类型不对"]),
        ("stop_loss_pct = { start = 8, stop = 4, step = 1 }", ["stop_loss_pct", "stop 不小于"]),
        ("", ["参数网格是空的"]),
        ("stop_loss_pct = [inf]", ["stop_loss_pct", "不是有限的数"]),
        ("hold_days = [nan]", ["hold_days", "不是有限的数"]),
        ("rps_gate_b = [[80, nan]]", ["rps_gate_b", "不是有限的数"]),
        ("stop_loss_pct = { start = 1, stop = inf, step = 1 }", ["stop_loss_pct", "inf 或 nan"]),
        ("stop_loss_pct = { start = -1e308, stop = 1e308, step = 1e-308 }", ["step 太小"]),
        ("hold_days = " + "[" * 30_000 + "]" * 30_000, ["嵌套过深"]),
        ("hold_days = " + "[" * 100_000 + "]" * 100_000, ["超过 64 KB"]),
        ("hold_days = " + "[" * 200 + "5" + "]" * 200, ["hold_days", "类型不对"]),
    ],
    ids=lambda value: value[:40] if isinstance(value, str) else None,
)
def test_a_bad_grid_file_gets_one_clear_sentence(home, tmp_path, text, expected):
    grid = tmp_path / "grid.toml"
    grid.write_text(text, encoding="utf-8")
    result = cli("backtest", "sweep", str(grid))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("错误：")
    assert all(word in lines[0] for word in expected), lines[0]


def test_the_agents_tool_caps_the_grid_unless_raised(home):
    context = ToolContext(home=home, registry=default_registry(), store=Store.in_home(home))
    big = {"hold_days": list(range(1, 11)), "stop_loss_pct": list(range(1, 11))}
    with pytest.raises(UsageError, match="共 100 个组合，超过上限 64"):
        run_backtest_sweep(SweepParams(grid=big), context, SweepConfig())


@pytest.fixture
def demo_sweep(home, tmp_path, install_demo):
    """`setup(days, grid_text)`: a small demo market in use and a grid file, as
    (start date `days` back, grid path)."""

    def setup(days: int, grid_text: str) -> tuple[str, str]:
        start = str(install_demo(home, 120).load_panel(days).dates[-days])
        assert cli("data", "use", "demo").returncode == 0
        grid = tmp_path / "grid.toml"
        grid.write_text(grid_text, encoding="utf-8")
        return start, str(grid)

    return setup


def test_sweep_command_ranks_saves_exports_and_walks_forward(tmp_path, demo_sweep):
    tuples = "rps_gate_b = [[80, 50], [75, 45]]\n"  # a tuple threshold: two engine configs
    grid_text = "hold_days = [5, 10]\nstop_loss_pct = [5.0, 8.0]\n" + tuples
    start, grid = demo_sweep(45, grid_text)
    exported = tmp_path / "all.csv"
    args = ("backtest", "sweep", grid, "--start", start, "--workers", "2")
    wide = {"COLUMNS": "200"}
    shown = cli(*args, "--heatmap", "hold_days,stop_loss_pct", "--csv", str(exported), env=wide)
    assert shown.returncode == 0, shown.stderr
    assert "8 个组合，2 套引擎配置（信号只算 2 次）" in shown.stdout
    assert "按 夏普 排名（前 8 / 8）" in shown.stdout and "复利收益%" in shown.stdout
    assert "热力图" in shown.stdout and "演示数据" in shown.stdout
    rows = list(csv.DictReader(exported.open(encoding="utf-8")))
    assert len(rows) == 8 and {r["source"] for r in rows} == {"demo（演示数据）"}
    ranked = [line.split("│")[1:-1] for line in shown.stdout.splitlines() if "│" in line][:8]
    rates = [cell.strip() for row in ranked for cell in row[-8:]]  # after 交易数: 2 decimals
    assert len(rates) == 64 and all(re.fullmatch(r"-?[\d,]+\.\d\d|—", r) for r in rates), rates

    walked = cli(*args, "--walk-forward", "20:10", "--json")
    assert walked.returncode == 0, walked.stderr
    payload = json.loads(walked.stdout)
    assert payload["data_note"] and len(payload["folds"]) == 2
    assert {"in_sample", "out_of_sample"} <= set(payload["folds"][0])

    assert "demo（演示数据）" in cli("backtest", "sweeps", env=wide).stdout
    listed = json.loads(cli("backtest", "sweeps", "--json").stdout)
    assert [r["walk_forward"] for r in listed] == ["20:10", None]
    assert listed[0]["best_params"] == payload["folds"][-1]["params"]


def _children(pid: int) -> set[int]:
    """Every live descendant of pid (from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def test_ctrl_c_cancels_the_cluster_work_and_leaves_no_worker_behind(demo_sweep):
    grid_text = "hold_days = [5, 10, 20]\nrs10_min = [0.5, 1.0, 1.5, 2.0]\n"
    start, grid = demo_sweep(60, grid_text)
    running = spawn_cli("backtest", "sweep", grid, "--start", start, "--workers", "2")
    while "计算信号" not in running.stderr.readline():  # wait for the cluster to be working
        assert running.poll() is None, running.stderr.read()
    workers = _children(running.pid)
    assert workers, "the sweep started no worker processes"
    running.send_signal(signal.SIGINT)
    running.wait(timeout=60)
    errors = running.stderr.read()
    assert running.returncode == 130 and "已取消" in errors and "Traceback" not in errors
    # a worker told to stop may take a moment after the parent exits; none may stay behind
    deadline = time.monotonic() + 30
    while [pid for pid in workers if _running(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _running(pid)]


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited child nobody has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_sweep_can_switch_the_trailing_stop_off():
    """The same bars as the trailing-stop rule's test: with trailing off the trade stays."""
    from tests.engine_fixtures import bars_panel
    from wyckoff.engine.backtest import Trade, _exits

    panel = bars_panel(
        [[10], [10], [11.6], [11.0]],
        open_=[[10], [10], [11.5], [11.1]],
        high=[[10], [10], [12.0], [11.2]],
        low=[[10], [10], [11.4], [10.7]],
    )
    kept = Trade("600000", 1, 10.0)
    assert _exits(panel, 3, [kept], 10, 8, 30, trailing=False) == [kept]
    sold = Trade("600000", 1, 10.0)
    assert _exits(panel, 3, [sold], 10, 8, 30, trailing=True) == [] and sold.reason == "跟踪止损"
