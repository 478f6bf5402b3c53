"""Sweeps under a hostile model and hostile input. The model never chooses where a sweep runs:
a loopback TCP listener stands in for an attacker's Dask scheduler (a real one would run code
in Wyckoff's process through the pickles it returns) and a scripted model asks the tool to use
it. Grids are counted before they are built, and a grid path is read only when it is a small
regular file: each bad input gets one Chinese sentence."""

from __future__ import annotations

import json
import os
import socket
import threading
import tracemalloc
from collections.abc import Iterator

import anyio
import pytest

from tests.conftest import add_scripted_model, cli, cli_process
from tests.integration.test_mcp_server import in_process_session
from tests.model_servers import Reply
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.tools import ToolContext
from wyckoff.mcp.server import build_server

WHERE_CODE_RUNS = {"cluster", "workers"}


class HostileScheduler:
    """Listens on 127.0.0.1 and counts the connections it is offered."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.connections = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.listener.close()


@pytest.fixture
def hostile_scheduler() -> Iterator[HostileScheduler]:
    scheduler = HostileScheduler()
    yield scheduler
    scheduler.close()


def test_a_model_cannot_send_a_sweep_to_its_own_scheduler(
    home, install_demo, openai_server, hostile_scheduler
):
    install_demo(home, 60)  # a market to sweep: nothing else stands before the cluster
    assert cli("data", "use", "demo").returncode == 0
    add_scripted_model(openai_server)
    attack = {"grid": {"hold_days": [5]}, "cluster": hostile_scheduler.address, "workers": 256}
    openai_server.script(
        Reply(tool_calls=[("run_backtest_sweep", attack)]),
        Reply(text="扫描没有运行。"),
        Reply(text="扫描没有运行。"),
    )
    result = cli("ask", "帮我扫描持有天数")
    assert result.returncode == 0, result.stderr
    assert hostile_scheduler.connections == 0

    offered = {t["function"]["name"]: t["function"] for t in openai_server.bodies[0]["tools"]}
    assert not WHERE_CODE_RUNS & set(offered["run_backtest_sweep"]["parameters"]["properties"])
    assert "集群" not in offered["run_backtest_sweep"]["description"]
    (answer,) = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert "run_backtest_sweep 的参数无效" in answer["content"]
    assert "cluster：不认识的字段" in answer["content"]


def test_the_mcp_server_offers_no_tool_that_takes_a_cluster(home):
    server = build_server(ToolContext(home=home, registry=default_registry()), tier=3)

    async def listed():
        async with in_process_session(server) as session:
            return (await session.list_tools()).tools

    tools = anyio.run(listed)
    assert tools, "the server listed no tools at all"
    for tool in tools:
        assert not WHERE_CODE_RUNS & set(tool.input_schema.get("properties", {})), tool.name


def one_sentence(result, code: int = 2) -> str:
    """The single stderr line of a refused command."""
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("错误："), result.stderr
    return lines[0]


def test_the_user_chooses_the_cluster_and_is_told_what_that_means(
    home, tmp_path, install_demo, hostile_scheduler
):
    install_demo(home, 60)
    assert cli("data", "use", "demo").returncode == 0
    assert "本机运行，每个核心一个进程" in cli("backtest", "cluster").stderr
    chosen = cli("backtest", "cluster", hostile_scheduler.address)
    assert chosen.returncode == 0 and "只连接你自己的集群" in chosen.stderr
    assert hostile_scheduler.address in cli("backtest", "cluster").stderr

    grid = tmp_path / "grid.toml"
    grid.write_text("hold_days = [5, 10]\n", encoding="utf-8")
    refused = cli("backtest", "sweep", str(grid))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"连不上 Dask 集群 {hostile_scheduler.address}" in refused.stderr.splitlines()[-1]
    assert hostile_scheduler.connections >= 1  # the user's setting is where sweeps go

    assert cli("backtest", "cluster", "local", "--workers", "1").returncode == 0
    assert "本机运行，1 个进程" in cli("backtest", "cluster").stderr


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["sweep", "GRID", "--workers", "256"], "--workers 要在 1 到"),
        (["sweep", "GRID", "--workers", "0"], "--workers 要在 1 到"),
        (["sweep", "GRID", "--cluster", "http://evil.example/x"], "tcp://主机:端口"),
        (["sweep", "GRID", "--workers", "1", "--cluster", "tcp://127.0.0.1:1"], "只能选一个"),
        (["cluster", "local", "--workers", "256"], "--workers 要在 1 到"),
        (["cluster", "tcp://a b:1"], "tcp://主机:端口"),
    ],
)
def test_bad_places_to_run_a_sweep_are_refused_and_nothing_is_saved(home, tmp_path, args, phrase):
    grid = tmp_path / "grid.toml"
    grid.write_text("hold_days = [5, 10]\n", encoding="utf-8")
    args = [str(grid) if arg == "GRID" else arg for arg in args]
    assert phrase in one_sentence(cli("backtest", *args))
    assert not (home / "wyckoff.json").exists()


# --- grids that would eat the machine: refused from their size, before anything is built ----

HUGE_GRIDS = [
    "stop_loss_pct = { start = 1, stop = 10, step = 1e-300 }",  # grew to 14 GB
    "stop_loss_pct = { start = 1, stop = 1000000, step = 1 }",  # a million values, built
    "hold_days = { start = 1, stop = 1000, step = 1 }\ntop_n = { start = 1, stop = 1000, step = 1 }",
]


@pytest.mark.parametrize("text", HUGE_GRIDS, ids=["tiny-step", "million", "product"])
def test_a_huge_grid_is_refused_before_any_list_of_values_is_built(home, tmp_path, text):
    grid = tmp_path / "grid.toml"
    grid.write_text(text + "\n", encoding="utf-8")
    cli("backtest", "sweep", str(tmp_path / "missing.toml"))  # the command's imports, once
    tracemalloc.start()
    try:
        refused = cli("backtest", "sweep", str(grid))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "超过上限 5000" in one_sentence(refused)
    assert peak < 10 * 2**20, f"{peak / 2**20:.0f} MB allocated to refuse a grid"


# --- every grid value within its parameter's range: refused before any work ------------------

OUT_OF_RANGE = [
    (f"hold_days = [{10**30}]", f"参数 hold_days 的取值 {10**30} 超出范围：应在 1 到 250 之间"),
    ("top_n = [0, 3]", "参数 top_n 的取值 0 超出范围：应在 1 到 100 之间"),
    (
        "stop_loss_pct = { start = 50, stop = 150, step = 50 }",
        "stop_loss_pct 的取值 150.0 超出范围",
    ),
    ("rs10_min = [1e6]", "参数 rs10_min 的取值 1000000.0 超出范围：应在 -100 到 100 之间"),
    ("ttl_sos = [100000]", "参数 ttl_sos 的取值 100000 超出范围：应在 1 到 250 之间"),
    ("rps_gate_b = [[80, 500]]", "参数 rps_gate_b 的第 2 项 500.0 超出范围：应在 0 到 100 之间"),
    ('main_st_limit_change = ["2999-01-01"]', "main_st_limit_change 的取值 '2999-01-01' 超出范围"),
    ("main_st_limit_change = [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]", "类型不对"),
]


@pytest.mark.parametrize(("text", "phrase"), OUT_OF_RANGE, ids=lambda v: v[:24])
def test_a_grid_value_outside_its_range_is_refused_before_any_work(
    home, tmp_path, install_demo, text, phrase
):
    install_demo(home, 60)  # a market the sweep could run on (hold_days 10**30 ran for 34 s)
    grid = tmp_path / "grid.toml"
    grid.write_text(text + "\n", encoding="utf-8")
    assert phrase in one_sentence(cli("backtest", "sweep", str(grid)))
    assert "还没有参数扫描记录" in cli("backtest", "sweeps").stdout


def nested(depth: int) -> str:
    return '{"grid": {"hold_days": ' + "[" * depth + "]" * depth + "}}"


@pytest.mark.parametrize(
    ("arguments", "phrase"),
    [
        (
            '{"grid": {"stop_loss_pct": {"start": 1, "stop": 10, "step": 1e-300}}}',
            "约 10^300 个组合",
        ),
        ('{"grid": {"stop_loss_pct": [NaN, Infinity]}}', "不是有限的数"),
        ('{"grid": {"stop_loss_pct": {"start": 1, "stop": Infinity, "step": 1}}}', "inf 或 nan"),
        (nested(500), "嵌套超过 32 层"),  # parses, then overflowed the redaction: a traceback
        (nested(100_000), "嵌套超过 32 层"),  # did not parse: the whole ask failed
        (
            f'{{"grid": {{"hold_days": [{10**30}]}}}}',
            f"hold_days 的取值 {10**30} 超出范围：应在 1 到 250",
        ),
        (
            '{"grid": {"rps_gate_a": [[65, 70, 500]]}}',
            "rps_gate_a 的第 3 项 500.0 超出范围：应在 -100 到 100",
        ),
    ],
    ids=["tiny-step", "nan-list", "inf-range", "500-deep", "100k-deep", "hold-1e30", "slope-500"],
)
def test_a_model_sending_a_bad_grid_gets_one_sentence_back(home, openai_server, arguments, phrase):
    add_scripted_model(openai_server)
    call = Reply(tool_calls=[("run_backtest_sweep", {})], raw_arguments=arguments)
    openai_server.script(call, Reply(text="网格有误。"), Reply(text="网格有误。"))
    result = cli("ask", "扫描一下止损")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    told = json.dumps(openai_server.bodies[-1]["messages"], ensure_ascii=False)
    assert phrase in told


@pytest.mark.parametrize(
    ("make", "phrase"),
    [
        (lambda tmp: tmp, "是一个文件夹"),
        (lambda tmp: "/dev/zero", "不是普通文件"),
        (lambda tmp: _fifo(tmp / "grid.toml"), "不是普通文件"),
        (lambda tmp: _write(tmp / "grid.toml", "# " + "x" * 70_000 + "\n"), "超过 64 KB"),
        (lambda tmp: _write(tmp / "grid.toml", b"hold_days = [5]\n# \xff\n"), "不是 UTF-8"),
    ],
    ids=["directory", "dev-zero", "fifo", "too-big", "not-utf8"],
)
def test_a_grid_path_that_is_not_a_small_text_file_is_refused_unread(home, tmp_path, make, phrase):
    refused = cli_process("backtest", "sweep", str(make(tmp_path)))  # a hang fails by timeout
    assert phrase in one_sentence(refused)


def _fifo(path):
    os.mkfifo(path)
    return path


def _write(path, content: str | bytes):
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path
