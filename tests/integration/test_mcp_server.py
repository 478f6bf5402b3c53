"""`wyckoff-mcp` driven by the real `mcp` client SDK: as a subprocess over stdio and over
streamable HTTP on 127.0.0.1, and in process for cancellation."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams
from pydantic import BaseModel

from tests.conftest import NETGUARD, cli
from wyckoff.cli.builtin_tools import default_registry, mcp_registry
from wyckoff.cli.tool_table import README, main_agent_tools, readme_with_table, tool_table
from wyckoff.cli.tools import ToolContext, ToolRegistry, ToolSpec, json_schema
from wyckoff.mcp.server import build_server
from wyckoff.store import Store

SCRIPT = shutil.which("wyckoff-mcp", path=str(Path(sys.executable).parent))
TOKEN = "test-token-0123456789abcdef"
TIER_1 = ["query_history", "query_tail_buy"]
TIER_2 = [
    "query_tail_buy",
    "intraday_analysis",
    "intraday_rescue_check",
    "search_stock_by_name",
    "analyze_stock",
    "get_market_overview",
    "get_market_history",
    "screen_stocks",
    "run_backtest",
    "query_history",
    "market_regime",
    "wyckoff_diagnose",
    "run_funnel_simulation",
]
TIER_3 = [
    *TIER_2,
    "portfolio",
    "update_portfolio",
    "watchlist",
    "update_watchlist",
    "generate_ai_report",
    "generate_strategy_decision",
    "tail_check",
]


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory, install_demo) -> Path:
    """A home on the demo market (400 synthetic stocks), shared by the read-only tests."""
    path = tmp_path_factory.mktemp("mcp") / "home"
    install_demo(path, 400)
    assert cli("data", "use", "demo", env={"WYCKOFF_HOME": str(path)}).returncode == 0
    return path


def server_env(home: Path, **extra: str) -> dict[str, str]:
    python_path = os.pathsep.join(filter(None, [str(NETGUARD), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "WYCKOFF_HOME": str(home), "PYTHONPATH": python_path, **extra}


@asynccontextmanager
async def stdio_session(home: Path, *args: str, **session_options: Any):
    params = StdioServerParameters(command=SCRIPT, args=list(args), env=server_env(home))
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, **session_options) as session,
    ):
        await session.initialize()
        yield session


def run(main) -> Any:
    async def bounded():
        with anyio.fail_after(120):
            return await main()

    return anyio.run(bounded)


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--tier", "1"], TIER_1), ([], TIER_2), (["--tier", "3"], TIER_3)],
    ids=["tier1", "default-tier2", "tier3"],
)
def test_each_tier_lists_its_tools_with_the_registrys_definitions(home, args, expected):
    async def main():
        async with stdio_session(home, *args) as session:
            return (await session.list_tools()).tools

    tools = run(main)
    assert sorted(t.name for t in tools) == sorted(expected)
    registry = mcp_registry()
    for tool in tools:
        spec = registry.get(tool.name)
        assert tool.title == spec.title and tool.description == spec.description
        assert tool.input_schema == spec.schema()["parameters"]
        assert tool.output_schema == (json_schema(spec.output) if spec.output else None)
        assert tool.annotations.destructive_hint == spec.requires_approval


def test_tier2_serves_the_intraday_tools_on_the_demo_minutes(demo_home, monkeypatch):
    from wyckoff.engine.market_store import MarketStore

    last = MarketStore.for_source(demo_home, "demo").execute("SELECT MAX(date) FROM bars")[0][0]
    monkeypatch.setenv("WYCKOFF_NOW", f"{last}T14:50:00+08:00")  # the server inherits it

    async def main():
        async with stdio_session(demo_home) as session:
            found = await session.call_tool("search_stock_by_name", {"keyword": "银行"})
            code = found.structured_content["results"][0]["code"]
            analysis = await session.call_tool("intraday_analysis", {"code": code})
            rescue = await session.call_tool("intraday_rescue_check", {"code": code})
            return analysis, rescue

    analysis, rescue = run(main)
    assert not analysis.is_error and not rescue.is_error, text_of(analysis) + text_of(rescue)
    shown = json.loads(text_of(analysis))
    assert shown["minutes"]["as_of"] == f"{last} 14:50" and shown["data_note"]
    assert shown["strength"]["score"] == sum(shown["strength"]["parts"].values())
    assert json.loads(text_of(rescue))["verdict"] in ("持有观察", "减仓", "离场")


def test_tier2_tools_run_on_the_demo_market_with_structured_output_and_the_demo_label(demo_home):
    registry = default_registry()
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def main():
        results = {}
        async with stdio_session(demo_home) as session:
            found = await session.call_tool("search_stock_by_name", {"keyword": "银行"})
            results["search_stock_by_name"] = found
            first = found.structured_content["results"][0]["code"]
            calls = [
                ("analyze_stock", {"code": first}),
                ("analyze_stock", {"code": first, "mode": "price", "days": 5}),
                ("get_market_overview", {}),
                ("get_market_history", {"days": 10}),
                ("run_backtest", {}),
            ]
            for name, args in calls:
                results[f"{name}{args.get('mode', '')}"] = await session.call_tool(name, args)
            results["screen_stocks"] = await session.call_tool(
                "screen_stocks", {}, progress_callback=on_progress
            )
            refused = await session.call_tool("portfolio", {})
        return results, refused

    results, refused = run(main)
    for key, result in results.items():
        name = key.removesuffix("price")
        assert not result.is_error, text_of(result)
        structured = result.structured_content
        registry.get(name).output.model_validate(structured)
        assert json.loads(text_of(result)) == structured
        assert structured["source"] == "demo"
        assert "演示数据" in structured["data_note"] and "演示数据" in text_of(result)
    assert len(results["analyze_stockprice"].structured_content["bars"]) == 5
    assert results["analyze_stock"].structured_content["health_label"]
    assert results["screen_stocks"].structured_content["summary"]["total_scanned"] == 400
    values = [value for value, _, _ in progress]
    assert len(progress) >= 3 and values == sorted(values) and all(t == 100 for _, t, _ in progress)
    assert any("全市场漏斗" in (message or "") for _, _, message in progress)
    assert refused.is_error and "没有名为 portfolio 的工具" in text_of(refused)


class Answer:
    """A client's elicitation callback: records what the user was shown, answers as told."""

    def __init__(self, action: str, confirm: object = True) -> None:
        self.action, self.confirm, self.shown = action, confirm, []

    async def __call__(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.shown.append(params.message)
        content = {"confirm": self.confirm} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


ERAS = ["handshake", "2026-07-28"]


def call_update(home: Path, answer: Answer | None, era: str) -> types.CallToolResult:
    """update_portfolio from a client of either protocol era: the handshake era asks with a
    server request mid-call, 2026-07-28 with an input-required round the client answers."""
    options = {"elicitation_callback": answer} if answer else {}
    arguments = {"action": "set_cash", "cash": 12345}

    async def main():
        if era == "handshake":
            async with stdio_session(home, "--tier", "3", **options) as session:
                return await session.call_tool("update_portfolio", arguments)
        server = StdioServerParameters(command=SCRIPT, args=["--tier", "3"], env=server_env(home))
        async with Client(server, **options) as client:
            assert client.session.protocol_version == era
            return await client.call_tool("update_portfolio", arguments)

    return run(main)


def saved_cash(home: Path) -> tuple[float, int]:
    store = Store.in_home(home)
    row = store.conn.execute("SELECT amount FROM portfolio_cash WHERE id = 1").fetchone()
    changes = store.conn.execute("SELECT COUNT(*) FROM portfolio_history").fetchone()[0]
    return (float(row[0]) if row else 0.0), changes


@pytest.mark.parametrize("era", ERAS)
def test_update_portfolio_runs_only_after_the_clients_user_agrees_to_the_sentence(home, era):
    answer = Answer("accept")
    result = call_update(home, answer, era)
    assert answer.shown == ["Wyckoff 请求执行：把现金从 0.00 元改为 12,345.00 元。同意吗？"]
    assert not result.is_error, text_of(result)
    assert result.structured_content == {
        "action": "set_cash",
        "before": {"cash": 0.0},
        "after": {"cash": 12345.0},
    }
    assert saved_cash(home) == (12345.0, 1)


@pytest.mark.parametrize(
    "answer",
    [Answer("decline"), Answer("cancel"), Answer("accept", confirm=False)]
    # a client that sends the wrong type: only the boolean true is a yes
    + [Answer("accept", confirm=value) for value in ("false", "no", 0, "", 1)],
    ids=["declined", "dismissed", "submitted-unticked", "false", "no", "zero", "empty", "one"],
)
@pytest.mark.parametrize("era", ERAS)
def test_update_portfolio_changes_nothing_without_a_yes(home, answer, era):
    answer.shown.clear()
    result = call_update(home, answer, era)
    assert len(answer.shown) == 1
    assert result.is_error
    assert (
        text_of(result)
        == "用户没有同意「把现金从 0.00 元改为 12,345.00 元」，没有执行，什么也没有改变。"
    )
    assert saved_cash(home) == (0.0, 0)


@pytest.mark.parametrize("era", ERAS)
def test_update_portfolio_is_refused_when_the_client_cannot_ask_its_user(home, era):
    result = call_update(home, None, era)
    assert result.is_error
    assert "不支持 elicitation" in text_of(result) and "什么也没有改变" in text_of(result)
    assert saved_cash(home) == (0.0, 0)


@asynccontextmanager
async def in_process_session(server):
    """A real ClientSession on the server over in-memory streams (handshake era)."""
    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as group,
    ):
        group.start_soon(
            lambda: server.run(*server_streams, server.create_initialization_options())
        )
        async with ClientSession(*client_streams) as session:
            await session.initialize()
            yield session
        group.cancel_scope.cancel()


class WaitParams(BaseModel):
    pass


def test_client_cancellation_stops_the_running_tool(home):
    """A tool that runs until told to stop: the client's cancel must reach it."""
    stopped = threading.Event()

    def wait_for_cancel(params: WaitParams, context: ToolContext) -> str:
        step = 0
        while not context.cancelled() and step < 3000:
            context.progress("等待", f"第 {step} 步", min(step / 3000, 1))
            step += 1
            time.sleep(0.01)
        if context.cancelled():
            stopped.set()
        return "finished"

    spec = ToolSpec(
        name="wait_for_cancel",
        description="等到取消",
        params=WaitParams,
        func=wait_for_cancel,
        title="等待取消",
        mcp_tier=2,
    )
    registry = ToolRegistry([spec])
    server = build_server(ToolContext(home=home, registry=registry), tier=2)

    async def main():
        async with in_process_session(server) as session:
            started = anyio.Event()

            async def on_progress(value, total, message) -> None:
                started.set()

            call_scope = anyio.CancelScope()

            async def call() -> None:
                with call_scope:
                    await session.call_tool("wait_for_cancel", {}, progress_callback=on_progress)

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await started.wait()
                call_scope.cancel()
            # checked while the connection is open: closing it would cancel the call too
            seen = await anyio.to_thread.run_sync(stopped.wait, 30)
            still_serving = [t.name for t in (await session.list_tools()).tools]
        return seen, still_serving

    seen, still_serving = run(main)
    assert seen, "the tool never saw the client's cancellation"
    assert still_serving == ["wait_for_cancel"]


class LeakyResult(BaseModel):
    echo: str


def test_results_and_errors_never_carry_a_known_secret(home, monkeypatch):
    secret = "sk-live-0123456789abcdefghij"
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    calls = []

    def leaky(params: WaitParams, context: ToolContext) -> dict:
        calls.append(params)
        if len(calls) > 1:
            raise RuntimeError(f"upstream said: bad key {secret}")
        return {"echo": f"key={secret}"}

    spec = ToolSpec(
        name="leaky",
        description="泄露",
        params=WaitParams,
        func=leaky,
        title="泄露",
        output=LeakyResult,
        mcp_tier=2,
    )
    server = build_server(ToolContext(home=home, registry=ToolRegistry([spec])), tier=2)

    async def main():
        async with in_process_session(server) as session:
            return [await session.call_tool("leaky", {}) for _ in range(2)]

    shown, failed = run(main)
    assert shown.structured_content == {"echo": "key=***"} and secret not in text_of(shown)
    assert failed.is_error and secret not in text_of(failed) and "***" in text_of(failed)


@pytest.fixture
def http_server(demo_home) -> Iterator[str]:
    """wyckoff-mcp on a port it binds itself (--port 0), read from the address it prints: a
    port picked here and then freed could be taken by another test's server meanwhile."""
    process = subprocess.Popen(
        [SCRIPT, "--http", "--port", "0"],
        env=server_env(demo_home, WYCKOFF_MCP_TOKEN=TOKEN),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        announced = process.stderr.readline()  # bound and listening once this is written
        address = re.search(r"http://127\.0\.0\.1:\d+/mcp", announced)
        assert address, announced + process.stderr.read()
        yield address.group(0)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_http_on_loopback_requires_the_bearer_token_and_serves_the_tools(http_server):
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    assert httpx.post(http_server, json=hello, headers=headers).status_code == 401
    wrong = {**headers, "Authorization": "Bearer not-the-token-at-all"}
    assert httpx.post(http_server, json=hello, headers=wrong).status_code == 401

    async def main():
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            client,
            streamable_http_client(http_server, http_client=client) as (
                read,
                write,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool("get_market_overview", {})
            return names, result

    names, result = run(main)
    assert sorted(names) == sorted(TIER_2)
    assert not result.is_error and result.structured_content["source"] == "demo"
    assert "演示数据" in result.structured_content["data_note"]


def test_wyckoff_uses_wyckoff_mcp_over_http_as_another_mcp_server(http_server, home):
    """The client side against wyckoff-mcp over HTTP: the token is read from the named
    variable when connecting, never written to mcp.json."""
    added = cli("mcp", "add", "self", "--url", http_server, "--bearer-env", "SELF_TOKEN")
    assert added.returncode == 0, added.stderr
    assert TOKEN not in (home / "mcp.json").read_text()
    tested = cli("mcp", "test", "self", env={"SELF_TOKEN": TOKEN})
    assert tested.returncode == 0, tested.stderr
    assert "self__get_market_overview" in tested.stdout and "是" in tested.stdout
    unset = cli("mcp", "test", "self")
    assert unset.returncode == 1 and "环境变量 SELF_TOKEN 没有设置" in unset.stderr
    wrong = cli("mcp", "test", "self", env={"SELF_TOKEN": "not-the-token-at-all"})
    assert wrong.returncode == 1 and "需要有效的 Bearer token" in wrong.stderr
    assert "Traceback" not in unset.stderr + wrong.stderr


def test_http_on_a_port_already_in_use_is_one_sentence(demo_home):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [SCRIPT, "--http", "--port", str(port)],
            env=server_env(demo_home, WYCKOFF_MCP_TOKEN=TOKEN),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2 and f"无法在 127.0.0.1:{port} 上监听" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [({}, "请先设置环境变量 WYCKOFF_MCP_TOKEN"), ({"WYCKOFF_MCP_TOKEN": "short"}, "太短")],
    ids=["no-token", "short-token"],
)
def test_http_beyond_loopback_refuses_to_start_without_a_real_token(home, env, message):
    result = subprocess.run(
        [SCRIPT, "--http", "--host", "0.0.0.0", "--port", "0"],
        env=server_env(home, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_readme_tool_table_matches_the_tool_definitions():
    readme = README.read_text(encoding="utf-8")
    assert readme_with_table(readme, tool_table(main_agent_tools())) == readme, (
        "README 的工具表与 ToolSpec 不一致：运行 python -m wyckoff.cli.tool_table --write"
    )


def test_a_yes_to_one_action_cannot_be_replayed_for_another(home):
    """2026-07-28: the answer comes back with the retried call; it only counts for the
    arguments the user was shown."""
    yes = types.ElicitResult(action="accept", content={"confirm": True})

    async def main():
        server = StdioServerParameters(command=SCRIPT, args=["--tier", "3"], env=server_env(home))
        async with Client(server, elicitation_callback=Answer("accept")) as client:
            session = client.session
            shown = {"action": "set_cash", "cash": 1}
            question = await session.call_tool("update_portfolio", shown, allow_input_required=True)
            assert isinstance(question, types.InputRequiredResult)
            (request,) = question.input_requests.values()
            assert "把现金从 0.00 元改为 1.00 元" in request.params.message
            swapped = await session.call_tool(
                "update_portfolio",
                {"action": "set_cash", "cash": 99_999_999},
                input_responses=dict.fromkeys(question.input_requests, yes),
                request_state=question.request_state,
                allow_input_required=True,
            )
            forged = await session.call_tool(
                "update_portfolio",
                shown,
                input_responses=dict.fromkeys(question.input_requests, yes),
                request_state="made-up",
                allow_input_required=True,
            )
            return swapped, forged

    swapped, forged = run(main)
    assert isinstance(swapped, types.InputRequiredResult)  # asked again, about 99,999,999
    (request,) = swapped.input_requests.values()
    assert "99,999,999.00 元" in request.params.message
    assert isinstance(forged, types.InputRequiredResult)
    assert saved_cash(home) == (0.0, 0)


def in_process_client(home: Path, tier: int = 2) -> Client:
    context = ToolContext(home=home, registry=mcp_registry(), store=Store.in_home(home))
    return Client(build_server(context, tier))


def test_a_numeric_code_from_a_client_is_read_as_the_six_digit_code(demo_home):
    """The MCP Inspector's form sends `code` as a number; 1 is 000001, not an error."""

    async def main():
        async with in_process_client(demo_home) as client:
            padded = await client.call_tool("analyze_stock", {"code": 1})
            found = await client.call_tool("search_stock_by_name", {"keyword": 2})
            history = await client.call_tool("query_history", {"source": "signal", "code": 1})
            return padded, found, history

    padded, found, history = run(main)
    assert not padded.is_error, text_of(padded)
    assert padded.structured_content["code"] == "000001"
    assert found.structured_content["results"][0]["code"] == "000002"
    assert not history.is_error, text_of(history)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"code": ["600519"]}, "code：需要文字（字符串）"),
        ({"code": 6_005_190}, "code：股票代码是 6 位数字，收到 6005190"),
        ({"code": 600519.5}, "code：股票代码是 6 位数字"),
        ({"code": "600519", "days": "x"}, "days：需要一个整数"),
        ({"code": "600519", "mode": 5}, "mode：可选 'diagnose', 'price'"),
        ({}, "code：缺少这一项"),
    ],
)
def test_argument_errors_over_mcp_are_chinese_sentences(demo_home, args, expected):
    async def main():
        async with in_process_client(demo_home) as client:
            return await client.call_tool("analyze_stock", args)

    result = run(main)
    assert result.is_error
    assert text_of(result) == (
        f"analyze_stock 的参数无效：{expected}" + text_of(result).partition(expected)[2]
    )
    assert text_of(result).endswith("请按工具的参数定义重新调用。")
    assert not re.search(r"[A-Z][a-z]+ should|valid string|Input ", text_of(result))


PAST_DAY = "2026-06-01"  # a Monday of the demo market, a year and a half into its history


def call_each(home: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[types.CallToolResult]:
    async def main():
        async with in_process_client(home) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return run(main)


def test_the_market_on_a_past_date_is_served_at_tier_2_and_says_it_is_point_in_time(demo_home):
    registry = mcp_registry()
    regime, diagnosis, funnel, latest = call_each(
        demo_home,
        [
            ("market_regime", {"date": PAST_DAY}),
            ("wyckoff_diagnose", {"code": 1, "date": PAST_DAY}),
            ("run_funnel_simulation", {"date": "2026/05/31"}),  # a Sunday: Friday's close
            ("market_regime", {}),
        ],
    )
    for name, result in [
        ("market_regime", regime),
        ("wyckoff_diagnose", diagnosis),
        ("run_funnel_simulation", funnel),
    ]:
        assert not result.is_error, text_of(result)
        registry.get(name).output.model_validate(result.structured_content)
        assert "无未来函数" in result.structured_content["point_in_time"]
        assert "演示数据" in result.structured_content["data_note"]
    assert regime.structured_content["as_of"] == PAST_DAY
    assert latest.structured_content["as_of"] > PAST_DAY
    assert diagnosis.structured_content["code"] == "000001"
    assert (
        diagnosis.structured_content["market_regime"]["regime"]
        == (regime.structured_content["regime"])
    )
    assert funnel.structured_content["as_of"] == "2026-05-29"
    assert f"只用 {'2026-05-29'} 收盘及以前的行情" in funnel.structured_content["point_in_time"]
    assert funnel.structured_content["summary"]["report_candidates"] > 0


def test_the_funnel_replay_reads_nothing_after_its_date(demo_home, tmp_path):
    """Rewrite every bar after the replayed day: the replay is the same, while the latest
    day's regime (which reads them) changes."""
    import duckdb

    home = tmp_path / "home"
    shutil.copytree(demo_home, home)
    calls = [("run_funnel_simulation", {"date": PAST_DAY}), ("market_regime", {})]
    before = call_each(home, calls)
    (store,) = home.glob("market-demo.duckdb")
    with duckdb.connect(str(store)) as conn:
        conn.execute(
            "UPDATE bars SET volume = volume * 5, close = close * CASE WHEN date = "
            "(SELECT max(date) FROM bars) THEN 0.7 ELSE 1.3 END WHERE date > ?",
            [PAST_DAY],
        )
    after = call_each(home, calls)
    assert after[0].structured_content == before[0].structured_content
    assert after[1].structured_content != before[1].structured_content


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "date：缺少这一项"),
        ({"date": "2026-13-05"}, "date：日期 2026-13-05 无效"),
        ({"date": "2001-01-01"}, "2001-01-01 及以前没有行情，至少需要 250 个交易日"),
    ],
)
def test_a_funnel_replay_without_a_usable_date_is_one_chinese_sentence(demo_home, args, expected):
    (result,) = call_each(demo_home, [("run_funnel_simulation", args)])
    assert result.is_error and expected in text_of(result)
    assert "Error" not in text_of(result)


def prompts_and_resources(home: Path, tier: int, reads: list[str] = (), prompts=()) -> dict:
    """What a client at `tier` sees: prompt names, resource URIs, and the named reads."""

    async def main():
        seen: dict[str, Any] = {}
        async with in_process_client(home, tier) as client:
            seen["prompts"] = sorted(p.name for p in (await client.list_prompts()).prompts)
            seen["resources"] = sorted(r.uri for r in (await client.list_resources()).resources)
            for uri in reads:
                seen[uri] = await refused_or(client.read_resource(uri))
            for name, arguments in prompts:
                seen[name] = await refused_or(client.get_prompt(name, arguments))
        return seen

    return run(main)


async def refused_or(request):
    """The answer to a request, or the server's error message when it refused it."""
    try:
        answer = await request
    except MCPError as exc:
        return exc.error.message
    return answer.contents[0] if isinstance(answer, types.ReadResourceResult) else answer


def test_skills_are_prompts_served_by_the_tier_of_the_tools_they_need(home):
    (home / "skills").mkdir(parents=True)
    (home / "skills" / "mine.md").write_text(
        "---\nname: mine\ndescription: 我的复盘\n---\n按我的规则复盘：{user_input}\n", "utf-8"
    )
    (home / "skills" / "shared.md").write_text(
        "---\nname: shared\ndescription: 公开的\nmcp_tier: 1\n---\n调用 query_history。\n", "utf-8"
    )
    (home / "skills" / "bad.md").write_text(
        "---\nname: bad\ndescription: 层级写错\nmcp_tier: 9\n---\n随便\n", "utf-8"
    )
    tier1 = prompts_and_resources(home, 1)
    tier2 = prompts_and_resources(home, 2)
    tier3 = prompts_and_resources(home, 3, prompts=[("mine", {"user_input": "只看昨天"})])
    assert tier1["prompts"] == ["shared"]
    assert tier2["prompts"] == ["backtest", "screen", "shared"]
    assert tier3["prompts"] == [
        "backtest",
        "checkup",
        "mine",
        "report",
        "screen",
        "shared",
        "strategy",
        "tail",
    ]
    (message,) = tier3["mine"].messages
    assert message.role == "user" and message.content.text == "按我的规则复盘：只看昨天"


def test_a_prompt_above_the_tier_is_refused_in_chinese(home):
    refused = prompts_and_resources(home, 2, prompts=[("checkup", {})])["checkup"]
    assert (
        refused == "wyckoff-mcp 在 tier 2 没有名为 checkup 的提示（技能）：先用 prompts/list 查看。"
    )


def test_the_latest_screen_portfolio_and_brief_are_read_only_resources_by_tier(demo_home, tmp_path):
    from wyckoff.agents.portfolio import Portfolio

    home = tmp_path / "home"
    shutil.copytree(demo_home, home)
    (screen,) = call_each(home, [("screen_stocks", {})])
    Portfolio(Store.in_home(home)).set_cash(50_000, actor="cli")
    (home / "briefs").mkdir()
    (home / "briefs" / "2026-12-02.md").write_text("# 旧简报\n", "utf-8")
    time.sleep(0.01)
    (home / "briefs" / "2026-12-03.md").write_text("# 今日简报\n大盘中性。\n", "utf-8")
    uris = ["wyckoff://screen/latest", "wyckoff://portfolio", "wyckoff://brief/latest"]

    tier1 = prompts_and_resources(home, 1, reads=uris[:1])
    tier2 = prompts_and_resources(home, 2)
    tier3 = prompts_and_resources(home, 3, reads=uris)

    assert tier1["resources"] == tier2["resources"] == ["wyckoff://screen/latest"]
    assert tier3["resources"] == sorted(uris)
    latest = json.loads(tier1["wyckoff://screen/latest"].text)
    shown = screen.structured_content["top_candidates"]
    assert [c["code"] for c in latest["candidates"]] == [c["code"] for c in shown]
    assert latest["as_of"] == screen.structured_content["as_of"] and latest["source"] == "demo"
    assert json.loads(tier3["wyckoff://portfolio"].text)["cash"] == 50_000
    brief = tier3["wyckoff://brief/latest"]
    assert brief.text == "# 今日简报\n大盘中性。\n" and brief.mime_type == "text/markdown"
    refused = prompts_and_resources(home, 2, reads=["wyckoff://portfolio"])["wyckoff://portfolio"]
    assert (
        refused == "wyckoff-mcp 在 tier 2 没有资源 wyckoff://portfolio：先用 resources/list 查看。"
    )


def test_a_brief_that_links_out_of_the_briefs_folder_is_not_served(home, tmp_path):
    secret = tmp_path / "private.md"
    secret.write_text("别人的文件", "utf-8")
    (home / "briefs").mkdir(parents=True)
    (home / "briefs" / "today.md").symlink_to(secret)
    assert prompts_and_resources(home, 3)["resources"] == sorted(
        ["wyckoff://screen/latest", "wyckoff://portfolio"]
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--tier", "5"], "错误：--tier 只能是 1, 2, 3，收到 5。用 `wyckoff-mcp -h` 查看用法。\n"),
        (
            ["--http", "--port", "x"],
            "错误：--port 需要一个整数，收到 x。用 `wyckoff-mcp -h` 查看用法。\n",
        ),
        (["--bogus"], "错误：不认识的参数 --bogus。用 `wyckoff-mcp -h` 查看用法。\n"),
    ],
)
def test_a_bad_wyckoff_mcp_command_line_is_one_chinese_sentence(home, args, expected):
    result = subprocess.run(
        [SCRIPT, *args], env=server_env(home), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and result.stderr == expected
