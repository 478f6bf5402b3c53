"""One-line Chinese summaries of local tool results, for tool rows in the TUI."""

from __future__ import annotations

from typing import Any

from wyckoff.cli.local_tools.files import human_size


def summarize_local_result(name: str, data: dict[str, Any]) -> str | None:
    """E.g. "写入 research/screen.csv 12.3 KB", "命令退出码 0，输出 240 行"; None when
    `name` is not a local tool."""
    if name == "read_file":
        return f"读取 {data['path']} 第 {data['lines']} 行（共 {data['total_lines']} 行，{data['encoding']}）"
    if name == "write_file":
        verb = {"create": "新建", "overwrite": "覆盖", "append": "追加"}[data["mode"]]
        return f"{verb}写入 {data['path']} {human_size(data['bytes'])}"
    if name == "exec_command":
        lines = len(data["stdout"].splitlines()) + len(data["stderr"].splitlines())
        stopped = f"，{data['stopped']}" if data.get("stopped") else ""
        return f"命令退出码 {data['exit_code']}，输出 {lines} 行{stopped}"
    if name == "web_fetch":
        return f"网页 {data.get('title') or data['url']}（{data['chars']:,} 字）"
    return None
