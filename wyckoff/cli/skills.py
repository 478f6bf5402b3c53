"""Skills: markdown instructions with front matter (`name`, `description`), built in or in
WYCKOFF_HOME/skills/*.md. The system prompt lists only names and descriptions; the model
fetches the full text with `execute_skill` when a skill fits (lazy loading).

A broken user skill is skipped with a warning naming the file and the problem; a user skill
with a built-in's name overrides it, with a notice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from wyckoff.cli.messages import UserMessage
from wyckoff.cli.tools import ToolContext, ToolFailure, ToolSpec
from wyckoff.config import redact_text
from wyckoff.errors import UsageError

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
USER_INPUT = "{user_input}"
MAX_SKILL_CHARS = 20_000
MCP_TIERS = ("1", "2", "3")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    origin: str  # "built-in" or the file path
    mcp_tier: int | None = None  # front matter `mcp_tier`: the wyckoff-mcp tier that serves it

    def expand(self, user_input: str) -> str:
        text = user_input.strip()
        if USER_INPUT in self.body:
            return self.body.replace(USER_INPUT, text)
        return f"{self.body}\n\n用户补充：{text}" if text else self.body


class SkillError(ValueError):
    pass


def parse_skill(text: str, origin: str) -> Skill:
    if len(text) > MAX_SKILL_CHARS:
        raise SkillError(f"文件超过 {MAX_SKILL_CHARS} 字符")
    match = re.match(r"^---\s*\n(.*?)\n---\s*\n(.*)$", text, re.S)
    if not match:
        raise SkillError("缺少 front matter（文件应以 --- 开头，包含 name 和 description）")
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise SkillError(f"front matter 行格式错误：{line.strip()[:40]}")
        fields[key.strip()] = value.strip().strip("'\"")
    name, description, body = (
        fields.get("name", ""),
        fields.get("description", ""),
        match.group(2).strip(),
    )
    if not NAME_PATTERN.match(name):
        raise SkillError(f"name '{name}' 不合法（需匹配 {NAME_PATTERN.pattern}）")
    if not description:
        raise SkillError("缺少 description")
    if not body:
        raise SkillError("指令正文为空")
    tier = fields.get("mcp_tier")
    if tier is not None and tier not in MCP_TIERS:
        raise SkillError(f"mcp_tier '{tier}' 不合法（可选 {', '.join(MCP_TIERS)}）")
    return Skill(name, description, body, origin, int(tier) if tier else None)


def _regular_file_inside(folder: Path, path: Path) -> bool:
    target = path.resolve()
    return target.is_relative_to(folder.resolve()) and target.is_file()


class SkillLibrary:
    def __init__(self, home: Path) -> None:
        self.skills: dict[str, Skill] = {}
        self.warnings: list[str] = []
        self.notices: list[str] = []
        for entry in sorted(resources.files("wyckoff.skills").iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".md"):
                skill = parse_skill(entry.read_text(encoding="utf-8"), "built-in")
                self.skills[skill.name] = skill
        folder = home / "skills"
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            self._load_user(folder, path)

    def _load_user(self, folder: Path, path: Path) -> None:
        if not _regular_file_inside(folder, path):
            self._warn(
                f"已跳过技能文件 {path}：只读取技能文件夹里的普通文件（不跟随指向外部的链接，不读管道或设备）。"
            )
            return
        try:
            skill = parse_skill(path.read_text(encoding="utf-8"), str(path))
        except (SkillError, UnicodeDecodeError, OSError) as exc:
            self._warn(f"已跳过技能文件 {path}：{exc}")
            return
        existing = self.skills.get(skill.name)
        if existing is not None:
            where = "内置技能" if existing.origin == "built-in" else existing.origin
            self.notices.append(f"用户技能 {path} 覆盖了{where} /{skill.name}")
        self.skills[skill.name] = skill

    def _warn(self, text: str) -> None:
        """A warning about a skill file; it may quote a line of the file, so keys are masked."""
        self.warnings.append(redact_text(text))

    def get(self, name: str) -> Skill:
        skill = self.skills.get(name.lstrip("/"))
        if skill is None:
            raise UsageError(
                f"没有名为 /{name.lstrip('/')} 的技能。可用技能：{', '.join('/' + n for n in self.skills)}。"
            )
        return skill

    def reminder(self) -> str:
        lines = ["可用技能（用户输入 /名称 或需求匹配时，先调用 execute_skill 获取完整指令）："]
        lines += [f"- /{s.name}: {s.description}" for s in self.skills.values()]
        return "\n".join(lines)

    def user_message(self, text: str) -> UserMessage:
        """The user message for what was typed. A `/name args` skill call also tells the model
        to load the skill; `meta.shown` keeps what the user typed, for display."""
        match = re.match(r"^/([a-z][a-z0-9_-]*)(?:\s+(.*))?$", text.strip(), re.S)
        if not match:
            return {"role": "user", "content": text.strip()}
        skill = self.get(match.group(1))
        args = (match.group(2) or "").strip()
        typed = f"/{skill.name} {args}".strip()
        hint = f'[用户调用了技能 /{skill.name}：请先调用 execute_skill(name="{skill.name}", user_input="{args}") 获取指令并照做。]'
        return {"role": "user", "content": f"{typed}\n\n{hint}", "meta": {"shown": typed}}


class ExecuteSkillParams(BaseModel):
    name: str = Field(description="技能名称（不带 /）")
    user_input: str = Field(default="", description="用户对这个技能的补充要求")


def execute_skill(params: ExecuteSkillParams, context: ToolContext) -> dict[str, Any]:
    library = context.skills or SkillLibrary(context.home)
    try:
        skill = library.get(params.name)
    except UsageError as exc:
        raise ToolFailure(exc.message) from None
    return {"skill": skill.name, "instructions": skill.expand(params.user_input)}


EXECUTE_SKILL = ToolSpec(
    name="execute_skill",
    description="获取一个技能的完整指令（技能列表见系统提示）。",
    params=ExecuteSkillParams,
    func=execute_skill,
    title="执行技能",
    concurrency_safe=True,
    summarize=lambda result: f"已载入技能 /{result['skill']} 的指令",
    timeout_s=10,
)
