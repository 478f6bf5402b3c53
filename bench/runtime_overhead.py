"""Per-round overhead of AgentRuntime with an instant in-process provider and a no-op tool,
and memory growth per 100 rounds. Run: python bench/runtime_overhead.py [--rounds N]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel  # noqa: E402

from bench._machine import describe_machine  # noqa: E402
from wyckoff.cli.builtin_tools import default_registry  # noqa: E402
from wyckoff.cli.chat_log import ChatLog, Conversation  # noqa: E402
from wyckoff.cli.providers.base import LLMProvider, token_usage  # noqa: E402
from wyckoff.cli.runtime import AgentRuntime  # noqa: E402
from wyckoff.cli.tools import ToolSpec  # noqa: E402
from wyckoff.config import ModelConfig  # noqa: E402
from wyckoff.store import Store  # noqa: E402


class InstantProvider(LLMProvider):
    """Answers at once: a no-op tool call for `rounds` rounds, then text."""

    wire_format = "openai"

    def __init__(self, rounds: int) -> None:
        super().__init__(
            ModelConfig(id="instant", provider="openai", model="instant"), context_window=128_000
        )
        self.left = rounds

    def _stream(self, messages, tools, system_prompt):
        if self.left > 0:
            self.left -= 1
            yield {
                "type": "tool_calls",
                "calls": [{"id": f"c{self.left}", "name": "noop", "args": {"n": self.left}}],
            }
        else:
            yield {"type": "text_delta", "text": "done"}
        yield {"type": "usage", **token_usage(input_tokens=10, output_tokens=1)}


class NoopParams(BaseModel):
    n: int


NOOP = ToolSpec(
    name="noop",
    description="does nothing",
    params=NoopParams,
    func=lambda p, c: "ok",
    title="空操作",
    concurrency_safe=True,
)


def run(rounds: int, home: Path, full: bool, measure_memory: bool) -> float | int:
    """Seconds per round, or (with measure_memory) bytes grown over the run."""
    registry = default_registry()
    registry.register(NOOP)
    store = Store.in_home(home) if full else None
    messages = Conversation.start(ChatLog(store)) if full else []
    messages.append({"role": "user", "content": "go"})
    runtime = AgentRuntime(
        InstantProvider(rounds),
        registry,
        home=home,
        store=store,
        max_rounds=rounds + 1,
        record_traces=full,
    )
    if measure_memory:  # tracemalloc slows everything: never time under it
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
    started = time.perf_counter()
    events = list(runtime.run_stream(messages))
    elapsed = time.perf_counter() - started
    assert events[-1]["status"] == "completed", events[-1]
    if not measure_memory:
        return elapsed / (rounds + 1)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def main() -> None:
    print(describe_machine())
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        bare, full = (run(rounds, Path(tmp), full=f, measure_memory=False) for f in (False, True))
        bare_mem, full_mem = (
            run(rounds, Path(tmp), full=f, measure_memory=True) for f in (False, True)
        )
    print(f"runtime overhead, {rounds} tool rounds")
    print(
        f"  per round, in memory only            {bare * 1000:6.2f} ms   memory +{bare_mem / rounds * 100 / 1024:7.1f} KiB per 100 rounds"
    )
    print(
        f"  per round, chat log + usage + trace  {full * 1000:6.2f} ms   memory +{full_mem / rounds * 100 / 1024:7.1f} KiB per 100 rounds"
    )


if __name__ == "__main__":
    main()
