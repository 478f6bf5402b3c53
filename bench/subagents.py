"""Wall time of three delegations in one reply, one at a time vs. side by side, with a
scripted model that takes 1 s per reply (each sub-agent: a tool call, then its answer).
Run: python bench/subagents.py [--delay S]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel  # noqa: E402

from bench._machine import describe_machine  # noqa: E402
from tests.conftest import model_config  # noqa: E402
from tests.model_servers import OpenAIServer, Reply  # noqa: E402
from wyckoff.cli.providers.factory import make_provider  # noqa: E402
from wyckoff.cli.runtime import AgentRuntime  # noqa: E402
from wyckoff.cli.sub_agents import SUB_AGENTS, SubAgents  # noqa: E402
from wyckoff.cli.tools import ToolRegistry, ToolSpec  # noqa: E402

ROLES = ("research", "analysis", "trading")


class CodeParams(BaseModel):
    code: str


def quote_tool(name: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description="行情",
        params=CodeParams,
        func=lambda p, c: {"code": p.code, "close": 10.5},
        title=name,
        concurrency_safe=True,
    )


def one_turn(server: OpenAIServer, home: Path, max_parallel: int, delay: float) -> float:
    """Seconds for: main delegates to all three roles, each answers, main sums up."""
    calls = [(f"delegate_to_{role}", {"task": f"BENCH-{role}"}) for role in ROLES]
    server.script(Reply(tool_calls=calls, delay_s=delay), Reply(text="汇总", delay_s=delay))
    for role in ROLES:
        tool = SUB_AGENTS[role].tools[0]
        server.route(
            f"BENCH-{role}",
            Reply(tool_calls=[(tool, {"code": "600519"})], delay_s=delay),
            Reply(text=f"{role} 结论。", delay_s=delay),
        )
    registry = ToolRegistry([quote_tool(SUB_AGENTS[role].tools[0]) for role in ROLES])
    provider = make_provider(model_config(server), stream_timeout_s=30)
    runtime = AgentRuntime(provider, registry, home=home, record_traces=False)
    SubAgents(runtime, max_parallel=max_parallel).attach()
    started = time.perf_counter()
    events = list(runtime.run_stream([{"role": "user", "content": "研究、分析并给出交易计划"}]))
    assert events[-1]["status"] == "completed", events[-1]
    return time.perf_counter() - started


def main() -> None:
    print(describe_machine())
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per model reply")
    delay = parser.parse_args().delay
    server = OpenAIServer()
    try:
        with tempfile.TemporaryDirectory() as folder:
            one_by_one = one_turn(server, Path(folder), 1, delay)
            side_by_side = one_turn(server, Path(folder), 3, delay)
    finally:
        server.close()
    print(f"3 次委派，每次模型回复 {delay:g}s（主 Agent 2 次回复 + 每个子智能体 2 次回复）")
    print(f"  逐个运行（并行上限 1）：{one_by_one:.2f}s")
    print(f"  并行运行（并行上限 3）：{side_by_side:.2f}s")
    print(f"  节省：{one_by_one - side_by_side:.2f}s（{1 - side_by_side / one_by_one:.0%}）")


if __name__ == "__main__":
    main()
