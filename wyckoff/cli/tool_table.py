"""The README's tool table, generated from the registry's ToolSpecs (the one definition).

`python -m wyckoff.cli.tool_table --write` rewrites the table between the markers in
README.md; a test fails when the README and the specs disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.sub_agents import SubAgents
from wyckoff.cli.tools import ToolRegistry

START = "<!-- tool-table:start（由 python -m wyckoff.cli.tool_table --write 生成，勿手改） -->"
END = "<!-- tool-table:end -->"
README = Path(__file__).resolve().parents[2] / "README.md"


def tool_table(registry: ToolRegistry) -> str:
    """One Markdown row per tool: name, Chinese title, approval, MCP tier, description."""
    rows = [
        "| 工具 | 名称 | 需要批准 | MCP tier | 说明 |",
        "|---|---|---|---|---|",
    ]
    for name in registry.names:
        spec = registry.get(name)
        assert spec is not None
        tier = str(spec.mcp_tier) if spec.mcp_tier is not None else "—"
        approval = "是" if spec.requires_approval else ""
        description = spec.description.replace("|", "\\|")
        rows.append(f"| `{name}` | {spec.title} | {approval} | {tier} | {description} |")
    return "\n".join(rows)


def readme_with_table(readme: str, table: str) -> str:
    """`readme` with the text between the markers replaced by `table`."""
    head, _, rest = readme.partition(START)
    _, found, tail = rest.partition(END)
    if not found:
        raise ValueError(f"README.md 缺少工具表标记 {START} … {END}。")
    return f"{head}{START}\n{table}\n{END}{tail}"


def main_agent_tools() -> ToolRegistry:
    """Every tool the main agent is given: the default registry and the delegate tools (an
    MCP server's tools are the user's own and not listed)."""
    registry = default_registry()
    for spec in SubAgents(runtime=None).specs():  # their definitions only: nothing delegates
        registry.register(spec)
    return registry


def main() -> None:
    table = tool_table(main_agent_tools())
    if "--write" in sys.argv[1:]:
        README.write_text(readme_with_table(README.read_text(encoding="utf-8"), table), "utf-8")
    else:
        sys.stdout.write(table + "\n")


if __name__ == "__main__":
    main()
