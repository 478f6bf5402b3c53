"""`wyckoff memory list`, and the words every memory listing shows. Imports no Typer, so the
light path (cli/light_commands.py) runs `list_memories` directly; memory.py's Typer command
calls the same function."""

from __future__ import annotations

from wyckoff.cli.output import local_time, print_json, print_notice, print_table
from wyckoff.memory.store import PROVENANCE_LABELS, TYPE_LABELS, Memory, MemoryStore
from wyckoff.store import Store


def memory_store() -> MemoryStore:
    """The memory store of WYCKOFF_HOME."""
    from wyckoff.config import remember_configured_secrets, wyckoff_home

    home = wyckoff_home()
    home.mkdir(parents=True, exist_ok=True)
    remember_configured_secrets(home)  # so a configured key is masked in what is written
    return MemoryStore(Store.in_home(home))


def origin(memory: Memory) -> str:
    """Where a memory came from, in words."""
    return PROVENANCE_LABELS.get(memory.provenance, memory.provenance)


def day(utc_stamp: str) -> str:
    """The local date of a stored UTC time, as every other listing shows it."""
    return local_time(utc_stamp)[:10]


def status(memory: Memory) -> str:
    """Whether a memory holds, or which one replaced it."""
    return "有效" if memory.superseded_by is None else f"已被 {memory.superseded_by} 取代"


def list_memories(memory_type: str | None = None, json_output: bool = False) -> None:
    """`wyckoff memory list`: the memories, newest first, as a table or JSON."""
    memories = memory_store().list_memories(memory_type)
    if json_output:
        print_json({"memories": [m.as_dict() for m in memories]})
    elif not memories:
        print_notice('还没有记忆。用 `wyckoff memory add --type preference "..."` 添加一条。')
    else:
        print_table(
            f"记忆（{len(memories)} 条）",
            ["id", "类型", "内容", "股票", "来源", "创建于", "状态"],
            [
                [
                    m.id,
                    TYPE_LABELS.get(m.type, m.type),
                    m.content,
                    ",".join(m.codes),
                    origin(m),
                    day(m.created_at),
                    status(m),
                ]
                for m in memories
            ],
        )
