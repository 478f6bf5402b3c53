"""Memory recall over 50,000 memories (p50/p95 of `build_memory_context`, goal p95 <= 5 ms)
and the insert rate (one transaction per memory, all indexes, pruning on).
Run: python bench/memory.py [--memories N] [--profile]"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._latency import percentiles  # noqa: E402
from bench._machine import describe_machine  # noqa: E402
from wyckoff.memory.codes import _names  # noqa: E402
from wyckoff.memory.recall import build_memory_context  # noqa: E402
from wyckoff.memory.store import MemoryStore  # noqa: E402
from wyckoff.store import Store  # noqa: E402

QUERIES = 300
THEMES = ["白酒", "半导体", "新能源", "黄金", "科技", "医药", "券商", "军工"]
RULES = [
    "跌破确认支撑不买",
    "尾盘二次确认后再买",
    "极端放量冲高回落不买",
    "单票仓位不超过 15%",
    "开盘半小时内不下单",
    "缩量回踩均线可以低吸",
    "弱市空仓等待指数站上 60 日线",
]
TYPES = ["decision"] * 6 + ["preference"] * 2 + ["playbook", "persona"]


def sample_memory(rng: random.Random, stocks: list[tuple[str, str]]) -> tuple[str, str, list[str]]:
    kind = rng.choice(TYPES)
    rule = rng.choice(RULES)
    if rng.random() < 0.5:
        name, code = rng.choice(stocks)
        return kind, f"{name}{rule}，{rng.choice(THEMES)}板块联动第{rng.randint(1, 999)}次", [code]
    return kind, f"{rng.choice(THEMES)}{rule}，第{rng.randint(1, 999)}条经验", []


def sample_query(rng: random.Random, stocks: list[tuple[str, str]]) -> str:
    name, code = rng.choice(stocks)
    return rng.choice(
        [
            f"{name}现在可以建仓吗",
            f"{code} 放量冲高回落怎么办",
            f"{rng.choice(THEMES)}板块怎么看",
            "尾盘可以买吗",
            f"我想建仓{rng.choice(THEMES)}，跌破支撑怎么处理",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--profile", action="store_true", help="print where recall spends time")
    args = parser.parse_args()
    print(describe_machine())
    rng = random.Random(7)
    stocks = [(name, code) for name, code in _names()[0].items()][:800]
    with tempfile.TemporaryDirectory() as folder:
        memories = MemoryStore(Store(Path(folder) / "bench.db"))
        rows = [sample_memory(rng, stocks) for _ in range(args.memories)]
        started = time.perf_counter()
        for kind, content, codes in rows[:1000]:
            memories.insert(kind, content, codes=codes)
        rate = 1000 / (time.perf_counter() - started)
        for kind, content, codes in rows[1000:]:
            memories.insert(kind, content, codes=codes, prune=False)
        for kind, content, codes in rows[:1000]:  # pruning kept only the limits of these
            memories.insert(kind, content, codes=codes, prune=False)
        total = memories.store.conn.execute("SELECT COUNT(*) FROM agent_memory").fetchone()[0]
        queries = [sample_query(rng, stocks) for _ in range(QUERIES)]
        build_memory_context(memories, queries[0])  # warm the name list and the page cache
        times, cpu_times = [], []
        profile = cProfile.Profile() if args.profile else None
        for query in queries:
            started, cpu = time.perf_counter(), time.process_time()
            if profile:
                profile.runcall(build_memory_context, memories, query)
            else:
                build_memory_context(memories, query)
            cpu_times.append((time.process_time() - cpu) * 1000)
            times.append((time.perf_counter() - started) * 1000)
        print(f"memories in store: {total:,}")
        print(f"insert rate (pruning on): {rate:,.0f} memories/s")
        print(f"recall over {total:,}, {QUERIES} queries (goal p95 <= 5 ms):")
        print(f"  wall  {percentiles(times)}")
        print(f"  CPU   {percentiles(cpu_times)}  (what load on a shared machine does not inflate)")
        if profile:
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
