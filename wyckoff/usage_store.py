"""Recorded model calls in the state db (`usage`): one row per call, summed per model and
purpose (what the call was for)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from wyckoff.config import ModelConfig
    from wyckoff.store import Store
    from wyckoff.token_usage import TokenUsage


PURPOSE_LABELS = {
    "chat": "对话",
    "sub_agent": "子代理",
    "extraction": "记忆提取",
    "layers": "剧本与画像",
    "compaction": "上下文压缩",
    "test": "模型测试",
}


class ModelUsage(TypedDict):
    """One model's calls for one purpose over a period; `cost` sums the priced calls only
    (None if none)."""

    model_id: str
    purpose: str
    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float | None
    priced_calls: int


class SessionUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float | None


def record_usage(
    store: Store,
    model: ModelConfig,
    usage: TokenUsage,
    cost: float | None,
    session_id: str | None = None,
    purpose: str = "chat",
) -> None:
    """Store the tokens and cost of one model call and what it was for (PURPOSE_LABELS)."""
    if purpose not in PURPOSE_LABELS:
        raise ValueError(f"unknown usage purpose {purpose!r}")
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO usage (session_id, purpose, model_id, provider, model, input_tokens,"
            " output_tokens, cache_read_tokens, cache_write_tokens, cost)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                purpose,
                model.id,
                model.provider,
                model.model,
                usage.get("input_tokens", 0),
                usage.get("output_tokens", 0),
                usage.get("cache_read_tokens", 0),
                usage.get("cache_write_tokens", 0),
                cost,
            ),
        )


def session_usage(store: Store, session_id: str) -> SessionUsage:
    """Tokens and cost of one session's conversation calls (chat, sub-agents), as the status
    bar counts them live; memory work and compaction are left to `model usage` (cost None
    when none priced)."""
    row = store.conn.execute(
        """
        SELECT COALESCE(SUM(input_tokens), 0) AS input_tokens,
               COALESCE(SUM(output_tokens), 0) AS output_tokens,
               COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens,
               COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens,
               SUM(cost) AS cost
        FROM usage WHERE session_id = ? AND purpose IN ('chat', 'sub_agent')
        """,
        (session_id,),
    ).fetchone()
    return SessionUsage(**dict(row))


def usage_summary(store: Store, days: int) -> list[ModelUsage]:
    """Tokens and cost per model and purpose over the last `days` days, most used first."""
    rows = store.conn.execute(
        """
        SELECT model_id, purpose, provider, model, COUNT(*) AS calls,
               SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,
               SUM(cache_read_tokens) AS cache_read_tokens, SUM(cache_write_tokens) AS cache_write_tokens,
               SUM(cost) AS cost, COUNT(cost) AS priced_calls
        FROM usage
        WHERE ts >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?)
        GROUP BY model_id, purpose, provider, model
        ORDER BY input_tokens + output_tokens DESC
        """,
        (f"-{int(days)} days",),
    ).fetchall()
    return [ModelUsage(**dict(row)) for row in rows]
