"""Session search over 10,000 messages (p50/p95 of `search_sessions`, goal p95 <= 50 ms):
500 sessions of 20 messages each (questions, answers and tool results, which are not
searched), queried with two-character and longer Chinese words, Latin tokens, several words
at once and a two-character word of no indexed kind (A股, a scan).
Run: python bench/session_search.py"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._latency import query_latency  # noqa: E402
from wyckoff.cli.chat_log import ChatLog  # noqa: E402
from wyckoff.cli.session_search import search_sessions  # noqa: E402
from wyckoff.memory.codes import _names  # noqa: E402
from wyckoff.store import Store  # noqa: E402

SESSIONS, PER_SESSION = 500, 20
QUERIES = 300
THEMES = ["白酒", "半导体", "新能源", "黄金", "科技", "医药", "券商", "军工"]
TERMS = ["MA200", "MACD", "ST", "VWAP", "RSI", "KDJ"]
PHRASES = [
    "跌破确认支撑不买",
    "尾盘二次确认后再买",
    "极端放量冲高回落",
    "缩量回踩均线可以低吸",
    "弱市空仓等待指数站上 60 日线",
    "吸筹阶段的 Spring 之后等 SOS",
    "派发阶段的 UTAD 之后小心",
]


def question(rng: random.Random, names: list[str]) -> str:
    return (
        f"{rng.choice(names)}现在怎么看？{rng.choice(THEMES)}板块{rng.choice(PHRASES)}，"
        f"{rng.choice(TERMS)} 还有用吗"
    )


def answer(rng: random.Random, names: list[str]) -> str:
    parts = [
        f"{rng.choice(names)}目前{rng.choice(PHRASES)}，{rng.choice(TERMS)} 位于关键位置。"
        for _ in range(rng.randint(3, 8))
    ]
    return "".join(parts) + "A股整体偏弱，注意仓位。"


def fill(chat_log: ChatLog, rng: random.Random, names: list[str]) -> None:
    for _ in range(SESSIONS):
        session_id = chat_log.create_session()
        messages = []
        for turn in range(PER_SESSION // 4):
            call = f"c{turn}"
            messages += [
                {"role": "user", "content": question(rng, names)},
                {"role": "assistant", "content": "", "tool_calls": [{"id": call, "name": "analyze_stock", "args": {}}]},
                {"role": "tool", "tool_call_id": call, "name": "analyze_stock", "content": "{" + "数据" * 400 + "}"},
                {"role": "assistant", "content": answer(rng, names)},
            ]  # fmt: skip
        chat_log.replace_messages(session_id, messages)  # one transaction a session


def sample_query(rng: random.Random, names: list[str]) -> str:
    return rng.choice(
        [
            rng.choice(THEMES)[:2],
            rng.choice(names),
            rng.choice(PHRASES)[:5],
            rng.choice(TERMS),
            rng.choice(TERMS).lower(),
            f"{rng.choice(names)} {rng.choice(TERMS)}",
            "A股",
        ]
    )


def main() -> None:
    rng = random.Random(7)
    names = list(_names()[0])[:800]
    with tempfile.TemporaryDirectory() as folder:
        chat_log = ChatLog(Store(Path(folder) / "bench.db"))
        started = time.perf_counter()
        fill(chat_log, rng, names)
        fill_s = time.perf_counter() - started
        store = chat_log.store
        total = store.conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        queries = [sample_query(rng, names) for _ in range(QUERIES)]
        latency = query_latency(lambda query: search_sessions(store, query), queries)
        print(f"messages in store: {total:,} ({SESSIONS} sessions; written in {fill_s:.1f} s)")
        print(f"search over {total:,}: {latency} ({QUERIES} queries; goal p95 <= 50 ms)")


if __name__ == "__main__":
    main()
