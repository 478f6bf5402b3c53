"""The skills (/screen, /checkup, …, built in and the user's own) as MCP prompts, by tier.

A skill's front matter may say its tier (`mcp_tier: 2`: /screen, whose closing advice names
a tier-3 tool it does not need). Otherwise a built-in skill is served at the highest tier
of the tools its text names (/checkup calls portfolio: tier 3), so a client never gets
steps it cannot carry out, and a user's skill at tier 3 at least: its text is the user's
own data.
"""

from __future__ import annotations

import re

import mcp_types as types

from wyckoff.cli.skills import Skill, SkillLibrary
from wyckoff.cli.tools import ToolContext
from wyckoff.config import redact_text

USER_SKILL_TIER = 3
USER_INPUT = "user_input"


def skill_tier(skill: Skill, tool_tiers: dict[str, int]) -> int:
    if skill.mcp_tier is not None:
        return skill.mcp_tier
    named = [
        tier
        for name, tier in tool_tiers.items()
        if re.search(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", skill.body)
    ]
    return max([1 if skill.origin == "built-in" else USER_SKILL_TIER, *named])


def served_skills(context: ToolContext, tier: int) -> dict[str, Skill]:
    """The skills served at `tier`, read from disk on each request (a skill the user adds
    while the server runs is there at the next listing)."""
    registry = context.registry
    specs = (registry.get(name) for name in registry.names)
    tool_tiers = {s.name: s.mcp_tier for s in specs if s is not None and s.mcp_tier is not None}
    skills = SkillLibrary(context.home).skills.values()
    return {s.name: s for s in skills if skill_tier(s, tool_tiers) <= tier}


def mcp_prompt(skill: Skill) -> types.Prompt:
    return types.Prompt(
        name=skill.name,
        title=f"/{skill.name}",
        description=skill.description,
        arguments=[
            types.PromptArgument(
                name=USER_INPUT, description="对这个技能的补充要求（可省略）", required=False
            )
        ],
    )


def prompt_result(skill: Skill, arguments: dict[str, str] | None) -> types.GetPromptResult:
    text = skill.expand((arguments or {}).get(USER_INPUT, ""))
    return types.GetPromptResult(
        description=skill.description,
        messages=[
            types.PromptMessage(
                role="user", content=types.TextContent(type="text", text=redact_text(text))
            )
        ],
    )
