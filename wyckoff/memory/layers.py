"""Layer refresh: the latest L1 memories summarised into L2 playbooks and L3 persona.

L2/L3 are not upgraded L1s but a fresh summary of the latest 30 L1s. The model is asked
only when it can add something: at least 3 L1s, a source hash (of those L1s) never
refreshed before, and, after the first refresh, at least 3 L1s newer than the last one.
Each written memory records extractor, layer_version, source_l1_ids and source_hash.
"""

from __future__ import annotations

import hashlib

from wyckoff.memory.dedup import AskModel, add_memory
from wyckoff.memory.store import L1_TYPES, MemoryStore
from wyckoff.memory.tagged import parse_tagged

RECENT_L1 = 30
MIN_L1 = 3
MIN_NEW_L1 = 3
PER_LAYER = 3
LAYER_VERSION = 1
LAYER_TAGS = {"画像": "persona", "剧本": "playbook", "交易剧本": "playbook"}

LAYER_REFRESH_PROMPT = """下面是一位 A 股投资者最近的原子记忆（偏好和决策）。基于它们归纳两类高层记忆，每类最多 3 条：
[画像] 用户整体的风险偏好和交易性格（稳定特征，不写临时市场观点或某只股票的当前结论）
[剧本] 可执行的交易剧本：适用场景 + 检查步骤 + 禁止条件（不写没有触发条件的口号）
只输出这两种格式的行。例如：
[画像] 用户重视本金安全和情绪稳定，偏好尾盘二次确认
[剧本] 尾盘二次确认买入：适用于已进入候选池的股票；14:45 后检查支撑、VWAP、收盘位置和量能；跌破确认支撑或极端放量冲高回落时禁止买入"""


def layer_gate(memories: MemoryStore) -> tuple[list, str | None]:
    """(the recent L1s, their source hash) when a refresh may run, else (L1s, None)."""
    atoms = memories.latest(L1_TYPES, RECENT_L1)
    if len(atoms) < MIN_L1:
        return atoms, None
    source_hash = hashlib.sha256(
        "\n".join(f"{m.id}:{m.content}" for m in sorted(atoms, key=lambda m: m.id)).encode()
    ).hexdigest()[:24]
    if memories.layer_run(source_hash):
        return atoms, None
    last = memories.last_layer_l1_id()
    if last is not None and memories.count_l1_after(last) < MIN_NEW_L1:
        return atoms, None
    return atoms, source_hash


def refresh_memory_layers(memories: MemoryStore, ask: AskModel) -> int:
    """Refresh L2/L3 when the gate allows; returns how many layer memories were written."""
    atoms, source_hash = layer_gate(memories)
    if source_hash is None:
        return 0
    listing = "\n".join(f"- [{m.type}] {m.content}" for m in reversed(atoms))
    reply = ask(LAYER_REFRESH_PROMPT, listing)
    source_ids = sorted(m.id for m in atoms)
    metadata = {
        "extractor": "layer_refresh",
        "layer_version": LAYER_VERSION,
        "source_l1_ids": source_ids,
        "source_hash": source_hash,
    }
    # a summary of memories that repeat tool results repeats them too
    provenance = "tool_output" if any(m.is_data for m in atoms) else "model"
    written = 0
    per_type: dict[str, int] = {}
    for memory_type, content in parse_tagged(reply, LAYER_TAGS, limit=20):
        if per_type.get(memory_type, 0) >= PER_LAYER:
            continue
        per_type[memory_type] = per_type.get(memory_type, 0) + 1
        outcome = add_memory(
            memories,
            memory_type,
            content,
            provenance=provenance,
            source_ref="layer_refresh",
            metadata=metadata,
        )
        written += outcome.status == "written"
    memories.record_layer_run(source_hash, source_ids[-1], written)
    return written
