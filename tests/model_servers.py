"""Scripted model servers on 127.0.0.1 speaking the providers' wire formats.

A test scripts provider-neutral `Reply` objects; each server renders them as OpenAI
chat.completions, Anthropic messages or Gemini generateContent (streaming SSE or whole
JSON) and records every request body for assertions. The Anthropic server rejects what
the real API rejects: more than 4 cache_control blocks, a tool_use without its
tool_result in the very next message, and a tool_result for an unknown tool_use.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = ""
    thinking: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: tuple[int, int, int, int] = (
        100,
        20,
        0,
        0,
    )  # input (uncached), output, cache read, cache write
    status: int = 200
    error_message: str = "scripted error"
    error_type: str = ""
    fail_mid_stream: bool = False  # stream some text, then an error event
    stall_s: float = 0.0  # sleep after the headers, before the first event
    delay_s: float = 0.0  # sleep before answering at all
    pieces: int = 3  # how many deltas the text is split into
    piece_delay_s: float = 0.0  # pause between events (paced streaming)
    raw_arguments: str | None = (
        None  # send these tool-call arguments verbatim (malformed JSON tests)
    )
    ollama_index0: bool = False  # OpenAI: stream every call at index 0
    gemini_ids: bool = False  # Gemini: give function calls ids
    cut_stream: bool = False  # stream the text, then close without the provider's end marker
    html_body: bool = False  # HTTP 200 with an HTML page instead of the API's answer
    retry_after: float | None = None  # error replies: send a `retry-after` header (seconds)
    hold: threading.Event | None = None  # answer only once the test sets it


class ScriptedServer:
    """Base: a threaded HTTP server with a queue of replies and a log of requests."""

    kind = ""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.routes: list[tuple[str, list[Reply]]] = []  # (marker in the request, replies)
        self.requests: list[dict[str, Any]] = []
        self.unsupported_params: set[str] = set()
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.call_counter = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"__raw__": raw.decode(errors="replace")}
                server.handle(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> ScriptedServer:
        with self.lock:
            self.replies.extend(replies)
        return self

    def route(self, marker: str, *replies: Reply) -> ScriptedServer:
        """Replies for requests whose body contains `marker` (a sub-agent's task), taken
        before the main queue: concurrent conversations each get their own script."""
        with self.lock:
            self.routes.append((marker, list(replies)))
        return self

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        text = json.dumps(body, ensure_ascii=False)
        with self.lock:
            for marker, replies in self.routes:
                if replies and marker in text:
                    return replies.pop(0)
            return self.replies.pop(0) if self.replies else None

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    def wait_for_requests(self, count: int, timeout_s: float = 60) -> bool:
        """Whether `count` requests have arrived (waiting for them up to `timeout_s`)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.requests) >= count, timeout_s)

    def next_call_id(self, prefix: str) -> str:
        with self.lock:
            self.call_counter += 1
            return f"{prefix}{self.call_counter}"

    # --- request handling ---------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self.lock:
            self.requests.append(
                {"path": handler.path, "headers": dict(handler.headers), "body": body}
            )
            self.arrived.notify_all()
        problem = self.validate(body)
        if problem:
            self.send_json(handler, 400, self.error_body(400, problem, "invalid_request_error"))
            return
        reply = self._next_reply(body)
        if reply is None:
            self.send_json(
                handler, 418, self.error_body(418, "no scripted reply left", "script_exhausted")
            )
            return
        if reply.hold is not None:
            reply.hold.wait(timeout=120)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.html_body:
            self.send_html(handler)
            return
        if reply.status != 200:
            self.send_json(
                handler,
                reply.status,
                self.error_body(reply.status, reply.error_message, reply.error_type),
                {} if reply.retry_after is None else {"retry-after": f"{reply.retry_after:g}"},
            )
            return
        if self.is_stream(handler, body):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.close_connection = True
            if reply.stall_s:
                time.sleep(reply.stall_s)
            try:
                for event in self.stream_events(reply, body):
                    handler.wfile.write(event.encode())
                    handler.wfile.flush()
                    if reply.piece_delay_s:
                        time.sleep(reply.piece_delay_s)
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            self.send_json(handler, 200, self.whole_response(reply, body))

    def send_json(
        self, handler, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def send_html(self, handler) -> None:
        """What a captive portal or a misrouted proxy answers: a web page, status 200."""
        data = b"<html><head><title>Welcome</title></head><body>Please log in.</body></html>"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def validate(self, body: dict[str, Any]) -> str | None:
        for name in self.unsupported_params:
            if name in body:
                return f"Unrecognized request argument supplied: {name}"
        return None

    # Subclasses: is_stream, stream_events, whole_response, error_body


def split_text(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(pieces, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(data: dict[str, Any], event: str | None = None) -> str:
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {json.dumps(data, ensure_ascii=False)}\n\n"


class OpenAIServer(ScriptedServer):
    kind = "openai"

    def is_stream(self, handler, body) -> bool:
        return bool(body.get("stream"))

    def error_body(self, status, message, error_type) -> dict[str, Any]:
        return {
            "error": {
                "message": message,
                "type": error_type or "api_error",
                "code": error_type or None,
            }
        }

    def _chunk(self, delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": choices,
        }

    def _usage(self, reply: Reply) -> dict[str, Any]:
        uncached, output, cache_read, _ = reply.usage
        return {
            "prompt_tokens": uncached + cache_read,
            "completion_tokens": output,
            "total_tokens": uncached + cache_read + output,
            "prompt_tokens_details": {"cached_tokens": cache_read},
        }

    def _arguments(self, reply: Reply, args: dict[str, Any]) -> str:
        return (
            reply.raw_arguments
            if reply.raw_arguments is not None
            else json.dumps(args, ensure_ascii=False)
        )

    def stream_events(self, reply: Reply, body: dict[str, Any]):
        yield sse(self._chunk({"role": "assistant", "content": ""}))
        for piece in split_text(reply.thinking, reply.pieces):
            yield sse(self._chunk({"reasoning_content": piece}))
        for number, piece in enumerate(split_text(reply.text, reply.pieces)):
            yield sse(self._chunk({"content": piece}))
            if reply.fail_mid_stream and number == 0:
                yield sse({"error": {"message": reply.error_message, "type": "server_error"}})
                return
        if reply.cut_stream:
            return  # no finish_reason, no [DONE]
        for index, (name, args) in enumerate(reply.tool_calls):
            position = 0 if reply.ollama_index0 else index
            call_id = self.next_call_id("call_")
            arguments = self._arguments(reply, args)
            yield sse(
                self._chunk(
                    {
                        "tool_calls": [
                            {
                                "index": position,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for piece in split_text(arguments, 2):
                yield sse(
                    self._chunk(
                        {"tool_calls": [{"index": position, "function": {"arguments": piece}}]}
                    )
                )
        yield sse(self._chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            yield sse({**self._chunk(None), "usage": self._usage(reply)})
        yield "data: [DONE]\n\n"

    def whole_response(self, reply: Reply, body) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.thinking:
            message["reasoning_content"] = reply.thinking
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self.next_call_id("call_"),
                    "type": "function",
                    "function": {"name": n, "arguments": self._arguments(reply, a)},
                }
                for n, a in reply.tool_calls
            ]
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "m"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": self._usage(reply),
        }


class AnthropicServer(ScriptedServer):
    kind = "anthropic"

    def is_stream(self, handler, body) -> bool:
        return bool(body.get("stream"))

    def error_body(self, status, message, error_type) -> dict[str, Any]:
        default_type = {
            529: "overloaded_error",
            429: "rate_limit_error",
            401: "authentication_error",
            404: "not_found_error",
        }
        return {
            "type": "error",
            "error": {
                "type": error_type or default_type.get(status, "api_error"),
                "message": message,
            },
        }

    def validate(self, body: dict[str, Any]) -> str | None:
        marked = sum(
            1 for block in _all_blocks(body) if isinstance(block, dict) and "cache_control" in block
        )
        if marked > 4:
            return f"A maximum of 4 blocks with cache_control may be provided. Found {marked}."
        return check_tool_pairing(body.get("messages", []))

    def _usage(self, reply: Reply) -> dict[str, int]:
        uncached, output, cache_read, cache_write = reply.usage
        return {
            "input_tokens": uncached,
            "output_tokens": output,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        }

    def stream_events(self, reply: Reply, body):
        usage = self._usage(reply)
        start = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": body.get("model"),
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        yield sse({"type": "message_start", "message": start}, "message_start")
        index = 0
        if reply.thinking:
            yield sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
                "content_block_start",
            )
            for piece in split_text(reply.thinking, reply.pieces):
                yield sse(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    },
                    "content_block_delta",
                )
            yield sse(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "signature_delta",
                        "signature": "sig-" + str(len(reply.thinking)),
                    },
                },
                "content_block_delta",
            )
            yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
            index += 1
        if reply.text:
            yield sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            for number, piece in enumerate(split_text(reply.text, reply.pieces)):
                yield sse(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    "content_block_delta",
                )
                if reply.fail_mid_stream and number == 0:
                    yield sse(
                        {
                            "type": "error",
                            "error": {"type": "overloaded_error", "message": reply.error_message},
                        },
                        "error",
                    )
                    return
                yield sse({"type": "ping"}, "ping")
            if reply.cut_stream:
                return  # no message_stop
            yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
            index += 1
        for name, args in reply.tool_calls:
            call_id = self.next_call_id("toolu_")
            yield sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
                "content_block_start",
            )
            arguments = (
                reply.raw_arguments
                if reply.raw_arguments is not None
                else json.dumps(args, ensure_ascii=False)
            )
            for piece in split_text(arguments, 2):
                yield sse(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                    "content_block_delta",
                )
            yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
            index += 1
        stop = "tool_use" if reply.tool_calls else "end_turn"
        yield sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
            "message_delta",
        )
        yield sse({"type": "message_stop"}, "message_stop")

    def whole_response(self, reply: Reply, body) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.thinking:
            content.append({"type": "thinking", "thinking": reply.thinking, "signature": "sig"})
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for name, args in reply.tool_calls:
            content.append(
                {"type": "tool_use", "id": self.next_call_id("toolu_"), "name": name, "input": args}
            )
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": content,
            "model": body.get("model"),
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": self._usage(reply),
        }


def _all_blocks(body: dict[str, Any]):
    system = body.get("system")
    if isinstance(system, list):
        yield from system
    yield from body.get("tools", [])
    for message in body.get("messages", []):
        if isinstance(message.get("content"), list):
            yield from message["content"]


def check_tool_pairing(messages: list[dict[str, Any]]) -> str | None:
    """The Anthropic API's rule: every tool_use is answered first thing in the next message."""
    for position, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if not ids:
                continue
            following = messages[position + 1] if position + 1 < len(messages) else None
            next_blocks = (
                following.get("content") if following and following.get("role") == "user" else []
            )
            next_blocks = next_blocks if isinstance(next_blocks, list) else []
            leading = []
            for block in next_blocks:
                if block.get("type") != "tool_result":
                    break
                leading.append(block.get("tool_use_id"))
            missing = [i for i in ids if i not in leading]
            if missing:
                return (
                    f"messages.{position + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message."
                )
        elif message.get("role") == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            previous = messages[position - 1] if position > 0 else {}
            previous_blocks = (
                previous.get("content") if isinstance(previous.get("content"), list) else []
            )
            known = {b.get("id") for b in previous_blocks if b.get("type") == "tool_use"}
            unknown = [r for r in results if r not in known]
            if unknown:
                return (
                    f"messages.{position}.content: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {', '.join(unknown)}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
    return None


class GeminiServer(ScriptedServer):
    kind = "gemini"

    def is_stream(self, handler, body) -> bool:
        return ":streamGenerateContent" in handler.path

    def error_body(self, status, message, error_type) -> dict[str, Any]:
        names = {
            429: "RESOURCE_EXHAUSTED",
            400: "INVALID_ARGUMENT",
            401: "UNAUTHENTICATED",
            403: "PERMISSION_DENIED",
            404: "NOT_FOUND",
            503: "UNAVAILABLE",
            500: "INTERNAL",
        }
        return {
            "error": {
                "code": status,
                "message": message,
                "status": error_type or names.get(status, "UNKNOWN"),
            }
        }

    def _usage(self, reply: Reply) -> dict[str, int]:
        uncached, output, cache_read, _ = reply.usage
        return {
            "promptTokenCount": uncached + cache_read,
            "candidatesTokenCount": output,
            "cachedContentTokenCount": cache_read,
            "totalTokenCount": uncached + cache_read + output,
        }

    def _parts(self, reply: Reply) -> list[list[dict[str, Any]]]:
        """Parts grouped by the response chunk they arrive in."""
        groups: list[list[dict[str, Any]]] = []
        for piece in split_text(reply.thinking, reply.pieces):
            groups.append([{"text": piece, "thought": True}])
        for piece in split_text(reply.text, reply.pieces):
            groups.append([{"text": piece}])
        calls = []
        for position, (name, args) in enumerate(reply.tool_calls):
            call: dict[str, Any] = {"name": name, "args": args}
            if reply.gemini_ids:
                call["id"] = self.next_call_id("gc_")
            part: dict[str, Any] = {"functionCall": call}
            if position == 0:
                part["thoughtSignature"] = base64.b64encode(f"sig-{name}".encode()).decode()
            calls.append(part)
        if calls:
            groups.append(calls)
        return groups or [[{"text": ""}]]

    def stream_events(self, reply: Reply, body):
        groups = self._parts(reply)
        for number, parts in enumerate(groups):
            last = number == len(groups) - 1 and not reply.cut_stream  # cut: no finishReason
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if last:
                candidate["finishReason"] = "STOP"
            chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": "m"}
            if last:
                chunk["usageMetadata"] = self._usage(reply)
            yield f"data: {json.dumps(chunk, ensure_ascii=False)}\r\n\r\n"
            if reply.fail_mid_stream and number == 0:
                yield f"data: {json.dumps(self.error_body(500, reply.error_message, 'INTERNAL'))}\r\n\r\n"
                return

    def whole_response(self, reply: Reply, body) -> dict[str, Any]:
        parts = [p for group in self._parts(reply) for p in group]
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": self._usage(reply),
        }


SERVERS = {"openai": OpenAIServer, "claude": AnthropicServer, "gemini": GeminiServer}
