"""Compaction planning time for 1,000 messages (everything but the model call) and offline
token estimation: throughput, and how far the no-encoding heuristic is from cl100k.
Run: python bench/compaction.py"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe_machine  # noqa: E402
from tests.integration.test_compaction import research_conversation  # noqa: E402
from wyckoff.cli.compaction import (
    find_tail_start,
    select_anchors,
    serialize_for_summary,
    shrink_stale_tool_results,
    tail_budget,
)  # noqa: E402
from wyckoff.cli.runtime import SYSTEM_PROMPT  # noqa: E402
from wyckoff.cli.tokens import count_messages, count_text, encoding, heuristic_count  # noqa: E402


def plan(messages: list[dict], window: int) -> None:
    count_messages(messages)
    start = find_tail_start(messages, tail_budget(window))
    head = messages[:start]
    select_anchors(head)
    serialize_for_summary(shrink_stale_tool_results(head))


def main() -> None:
    print(describe_machine())
    encoding()  # load once, as a long session would
    messages = research_conversation(250)[:1000]
    started = time.perf_counter()
    plan(messages, 128_000)
    cold = time.perf_counter() - started
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        plan(messages, 128_000)
        runs.append(time.perf_counter() - started)
    text = "\n".join(json.dumps(m, ensure_ascii=False) for m in messages)
    rates = []
    for _ in range(3):
        count_text.cache_clear()
        started = time.perf_counter()
        count_text(text)
        rates.append(len(text.encode()) / (time.perf_counter() - started) / 1e6)
    throughput = max(rates)
    samples = {
        "mixed research chat": text[:200_000],
        "system prompt": SYSTEM_PROMPT,
        "skills (markdown)": "\n".join(
            p.read_text(encoding="utf-8") for p in Path("wyckoff/skills").glob("*.md")
        ),
        "stock names": Path("wyckoff/data/a_share_list.csv").read_text(encoding="utf-8")[:30_000],
    }
    print(
        f"compaction planning, {len(messages)} messages: {cold * 1000:.1f} ms cold (every message tokenised), {min(runs) * 1000:.1f} ms with counts cached"
    )
    print(
        f"token estimation (cl100k, offline): {throughput:.1f} MB/s over {len(text.encode()) / 1e6:.1f} MB"
    )
    print("heuristic vs cl100k (no encoding file available):")
    for name, sample in samples.items():
        exact, guess = count_text(sample), heuristic_count(sample)
        print(
            f"  {name:<22} cl100k {exact:7d}  heuristic {guess:7d}  ({(guess - exact) / exact:+.1%})"
        )


if __name__ == "__main__":
    main()
