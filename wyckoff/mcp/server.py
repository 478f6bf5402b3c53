"""The MCP adapter: every ToolSpec with an `mcp_tier` at or below the served tier becomes an
MCP tool with the spec's own name, title, description, parameter schema and output schema;
the skills become prompts (prompts.py) and the latest screen, portfolio and brief read-only
resources (resources.py), by the same tier.

A call runs the same tool function the agent runs (`ToolRegistry.run`, with its timeout)
with a ToolContext built from WYCKOFF_HOME. Progress reported by the tool becomes MCP
progress notifications; a client's cancellation sets the tool's cancel flag. A tool that
needs the user's approval asks the client's user through MCP elicitation, showing the
action as the spec's Chinese sentence; without an answer nothing runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import uuid
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from wyckoff.cli.tools import (
    CancelEvent,
    ToolContext,
    ToolRegistry,
    ToolSpec,
    canonical_args,
    json_schema,
)
from wyckoff.config import redact_text, redact_value
from wyckoff.mcp.prompts import mcp_prompt, prompt_result, served_skills
from wyckoff.mcp.resources import Offer, read_offer, served_resources

SERVER_NAME = "wyckoff"
TIERS = {1: "本地历史", 2: "行情与引擎", 3: "用户数据与模型"}
DEFAULT_TIER = 2
CONSENT_KEY = "consent"
CONSENT_KEY_SECRET = secrets.token_bytes(32)  # per process: a binding cannot be forged
NO_ELICITATION = (
    "{title}（{name}）需要用户确认，但当前 MCP 客户端不支持 elicitation（向用户确认），"
    "所以没有执行，什么也没有改变。请在支持 elicitation 的客户端中调用，或在 wyckoff 终端里操作。"
)


class Consent(BaseModel):
    confirm: bool = Field(title="确认执行", description="勾选并提交表示同意执行上面这一个操作")


def served_specs(registry: ToolRegistry, tier: int) -> list[ToolSpec]:
    """The specs served at `tier`, in registry order."""
    specs = (registry.get(name) for name in registry.names)
    return [s for s in specs if s is not None and s.mcp_tier is not None and s.mcp_tier <= tier]


def mcp_tool(spec: ToolSpec) -> types.Tool:
    schema = spec.schema()
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=schema["description"],
        input_schema=schema["parameters"],
        output_schema=json_schema(spec.output) if spec.output else None,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.concurrency_safe,
            destructive_hint=spec.requires_approval,
            open_world_hint=False,
        ),
    )


def build_server(context: ToolContext, tier: int = DEFAULT_TIER) -> Server:
    """An MCP server for the tools of `tier` and below, all run with `context`."""
    specs = {spec.name: spec for spec in served_specs(context.registry, tier)}
    tools = [mcp_tool(spec) for spec in specs.values()]
    input_schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        spec = specs.get(params.name)
        if spec is None:
            return failure(f"wyckoff-mcp 在 tier {tier} 没有名为 {params.name} 的工具。")
        return await run_call(ctx, spec, params, context)

    async def served_one(find, key: str, what: str, listing: str):
        """The prompt or resource `key` served at this tier, else the client's error."""
        found = (await anyio.to_thread.run_sync(find, context, tier)).get(key)
        if found is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"wyckoff-mcp 在 tier {tier} 没有{what}：先用 {listing} 查看。",
            )
        return found

    async def list_prompts(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        skills = await anyio.to_thread.run_sync(served_skills, context, tier)
        return types.ListPromptsResult(prompts=[mcp_prompt(s) for s in skills.values()])

    async def get_prompt(
        ctx: ServerRequestContext, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        what = f"名为 {params.name} 的提示（技能）"
        skill = await served_one(served_skills, params.name, what, "prompts/list")
        return prompt_result(skill, params.arguments)

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        offers = await anyio.to_thread.run_sync(served_resources, context, tier)
        return types.ListResourcesResult(resources=[mcp_resource(o) for o in offers.values()])

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        offer = await served_one(
            served_resources, params.uri, f"资源 {params.uri}", "resources/list"
        )
        text = await anyio.to_thread.run_sync(read_offer, offer, context)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=offer.uri, mime_type=offer.mime_type, text=text)
            ]
        )

    return Server(
        SERVER_NAME,
        title="Wyckoff A 股威科夫工具",
        instructions=(
            "Wyckoff 的 A 股行情、威科夫引擎与持仓工具。结果中的 source 是数据源；"
            "source 为 demo 时是本地合成的演示数据，引用结论时必须说明。"
        ),
        get_tool_input_schema=input_schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def mcp_resource(offer: Offer) -> types.Resource:
    return types.Resource(
        uri=offer.uri,
        name=offer.name,
        title=offer.title,
        description=offer.description,
        mime_type=offer.mime_type,
        annotations=types.Annotations(audience=["user", "assistant"]),
    )


async def run_call(
    ctx: ServerRequestContext,
    spec: ToolSpec,
    request: types.CallToolRequestParams,
    context: ToolContext,
) -> types.CallToolResult | types.InputRequiredResult:
    checked = context.registry.validate({"name": spec.name, "args": request.arguments or {}})
    if isinstance(checked, str):
        return failure(checked)
    _, params = checked
    refused = spec.refusal(params, context) if spec.refusal else None
    if refused:  # the client's user is not asked about a call that would fail
        return failure(refused)
    if spec.requires_approval:
        answer = await ask_consent(ctx, request, spec, context)
        if isinstance(answer, str):
            return failure(answer)
        if answer is not None:  # the question; the client retries with the user's answer
            return answer
    call = context.for_call(cancel_event=CancelEvent(), on_progress=progress_sender(ctx))
    try:
        outcome = await anyio.to_thread.run_sync(
            context.registry.run, spec, params, call, f"mcp-{uuid.uuid4().hex[:12]}",
            abandon_on_cancel=True,
        )  # fmt: skip
    except anyio.get_cancelled_exc_class():
        call.cancel_event.set()  # the tool's own loop sees it and stops
        raise
    if not outcome.ok:
        return failure(outcome.error or "")
    value = outcome.raw
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    structured = redact_value(json.loads(text)) if spec.output is not None else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=redact_text(text))],
        structured_content=structured,
    )


def failure(message: str) -> types.CallToolResult:
    text = redact_text(message)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def progress_sender(ctx: ServerRequestContext):
    """A ToolContext progress sink (called on the tool's thread) that sends MCP progress
    notifications on the server's event loop; a client that asked for none gets none."""
    token = anyio.lowlevel.current_token()
    last = {"value": 0.0}

    def send(event: dict[str, Any]) -> None:
        if event.get("fraction") is not None:
            last["value"] = max(last["value"], round(float(event["fraction"]) * 100, 1))
        message = "：".join(filter(None, [event.get("stage"), event.get("detail")]))
        with contextlib.suppress(Exception):  # progress is best effort; the call goes on
            anyio.from_thread.run(
                ctx.session.report_progress, last["value"], 100.0, message, token=token
            )

    return send


def can_elicit(ctx: ServerRequestContext) -> bool:
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return False
    return is_modern(ctx) or ctx.session.can_send_request


def is_modern(ctx: ServerRequestContext) -> bool:
    """2026-07-28+ connections ask through InputRequiredResult rounds, not server requests."""
    return ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS


async def ask_consent(
    ctx: ServerRequestContext,
    request: types.CallToolRequestParams,
    spec: ToolSpec,
    context: ToolContext,
) -> str | types.InputRequiredResult | None:
    """None when the client's user agreed to exactly this call; else why it was not run, or
    (2026-07-28+) the question to put to the user before the client retries the call."""
    if not can_elicit(ctx):
        return NO_ELICITATION.format(title=spec.title, name=spec.name)
    arguments = request.arguments or {}
    sentence = context.registry.describe(spec.name, arguments, context)
    question = types.ElicitRequestFormParams(
        message=f"Wyckoff 请求执行：{sentence}。同意吗？",
        requested_schema=render_elicitation_schema(Consent),
    )
    if is_modern(ctx):
        binding = consent_binding(spec.name, arguments, sentence)
        answer = (request.input_responses or {}).get(CONSENT_KEY)
        if request.request_state != binding or not isinstance(answer, types.ElicitResult):
            return types.InputRequiredResult(
                input_requests={CONSENT_KEY: types.ElicitRequest(params=question)},
                request_state=binding,
            )
    else:
        answer = await ctx.session.elicit_form(
            message=question.message,
            requested_schema=question.requested_schema,
            related_request_id=ctx.request_id,
        )
    # the boolean true alone: bool("false") and bool("no") are True too
    if answer.action == "accept" and (answer.content or {}).get("confirm") is True:
        return None
    return f"用户没有同意「{sentence}」，没有执行，什么也没有改变。"


def consent_binding(name: str, arguments: dict[str, Any], sentence: str) -> str:
    """Ties a retried call's answer to the very action the user was shown: another tool,
    other arguments or a changed book (a different sentence) mean asking again."""
    message = f"{name}\n{canonical_args(arguments)}\n{sentence}".encode()
    return hmac.new(CONSENT_KEY_SECRET, message, hashlib.sha256).hexdigest()
