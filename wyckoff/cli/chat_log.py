"""The chat log: sessions and every message in SQLite, saved as the conversation goes.

A `Conversation` is the message list the runtime works on; appending to it also writes
the message, so a crash loses at most the message being streamed, and a compacted history
replaces the old one in a single transaction. Loading a session repairs what a crash left:
a tool call without its result gets an "interrupted" result, so no provider rejects the
history.

A message's `meta` (model, usage, and `kind` for what the program wrote in the user's role)
is stored in columns of its own and comes back on load. Rows saved before kinds existed got
theirs once, from how their text starts, when the db was migrated (store migration 7).

One process at a time holds a session: a Conversation takes an exclusive lock file for its
session (released when the process exits, even by kill -9), and a second process opening
the same session is told, in one sentence, that it is busy.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
import weakref
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, cast, overload

from wyckoff.cli.messages import Message, ToolCall, is_user_words, shown_text, tool_calls_of
from wyckoff.cli.output import local_time
from wyckoff.cli.session_search import index_message, is_searched, queue_session, unindex_session
from wyckoff.errors import UsageError
from wyckoff.faults import crash_point

if TYPE_CHECKING:
    from wyckoff.store import Store

INTERRUPTED_RESULT = "工具调用被中断（程序在得到结果前退出），没有结果。"
META_COLUMNS = ("model", "provider", "input_tokens", "output_tokens", "elapsed_s", "kind", "shown")
MESSAGE_COLUMNS = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "reasoning_content",
    "provider_data",
    *META_COLUMNS,
)
LOCKS_DIR = "locks"


class SessionHold:
    """This process's exclusive lock on one session; released when no Conversation uses it."""

    def __init__(self, handle: IO) -> None:
        self.handle = handle


_HELD: weakref.WeakValueDictionary[str, SessionHold] = weakref.WeakValueDictionary()


class ChatLog:
    def __init__(self, store: Store) -> None:
        self.store = store

    def hold(self, session_id: str) -> SessionHold:
        """Lock the session for this process, or say at once that another process has it."""
        import fcntl

        held = _HELD.get(session_id)
        if held is not None:
            return held
        folder = self.store.path.parent / LOCKS_DIR
        folder.mkdir(mode=0o700, exist_ok=True)
        handle = open(  # noqa: SIM115 (held open while the session is in use)
            folder / f"session-{session_id}.lock", "a", opener=_private_opener
        )
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise UsageError(
                f"会话 {session_id} 正忙：另一个 Wyckoff 进程（终端界面或另一条 `wyckoff ask`）正在使用它，"
                "请等它结束后再试，或不加 --continue/--session 开始新会话。"
            ) from None
        held = _HELD[session_id] = SessionHold(handle)
        return held

    def create_session(self, title: str = "", parent_id: str | None = None) -> str:
        session_id = uuid.uuid4().hex[:12]
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO sessions (id, title, parent_id) VALUES (?, ?, ?)",
                (session_id, title[:80], parent_id),
            )
        return session_id

    def append(self, session_id: str, message: Message) -> None:
        with self.store.transaction() as conn:
            message = _insert(conn, session_id, message)
            title_needed = is_user_words(message)
            conn.execute(
                "UPDATE sessions SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),"
                " title = CASE WHEN title = '' AND ? THEN ? ELSE title END WHERE id = ?",
                (title_needed, str(shown_text(message))[:80], session_id),
            )

    def rewrite_calls(self, session_id: str, message: Message) -> None:
        """The session's last assistant message, stored again with `message`'s tool calls
        (an approved call ran with the arguments the user edited)."""
        calls = without_secrets(message).get("tool_calls")
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE messages SET tool_calls = ? WHERE session_id = ? AND seq = (SELECT"
                " MAX(seq) FROM messages WHERE session_id = ? AND role = 'assistant')",
                (_json_or_none(calls), session_id, session_id),
            )

    def load(self, session_id: str) -> list[Message]:
        """The session's messages, repaired so every tool call has a result."""
        self.require(session_id)
        rows = self.store.conn.execute(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        return repair_tool_pairs([_message_from_row(row) for row in rows])

    def require(self, session_id: str) -> dict[str, Any]:
        row = self.store.conn.execute(
            "SELECT * FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise UsageError(f"没有找到会话 {session_id}：用 `wyckoff session list` 查看已有会话。")
        return dict(row)

    def latest_session(self) -> str | None:
        row = self.store.conn.execute(
            "SELECT s.id FROM sessions s WHERE EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"
            " ORDER BY s.updated_at DESC LIMIT 1"
        ).fetchone()
        return row[0] if row else None

    def list_sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        """Sessions with a question from the user and an answer, newest first: runs that
        failed before any answer, and background follow-ups alone, are not worth resuming."""
        asked = "m.role = 'user' AND m.kind IS NULL"
        rows = self.store.conn.execute(
            "SELECT s.id, s.created_at, s.updated_at, s.parent_id,"
            " COALESCE(NULLIF(s.title, ''), (SELECT substr(COALESCE(m.shown, m.content), 1, 80) FROM messages m"
            f"  WHERE m.session_id = s.id AND {asked} ORDER BY m.seq LIMIT 1)) AS title,"
            " (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS messages"
            " FROM sessions s"
            f" WHERE EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND {asked})"
            " AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.role = 'assistant')"
            " ORDER BY s.updated_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [dict(row) for row in rows]

    def replace_messages(self, session_id: str, messages: Iterable[Message]) -> None:
        """Store a compacted history in place of the old one (the old one is in the archive):
        all or nothing, so a crash or a bad message leaves the old history whole."""
        with self.store.transaction() as conn:
            unindex_session(conn, session_id)
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            for message in messages:
                _insert(conn, session_id, message)
            crash_point("chat-log-rewrite")

    def fork(self, session_id: str) -> str:
        """A new session holding a copy of this one's messages."""
        source = self.require(session_id)
        new_id = self.create_session(title=f"{source['title']}（分支）", parent_id=session_id)
        with self.store.transaction() as conn:
            copied = ", ".join(("seq", *MESSAGE_COLUMNS, "created_at"))
            conn.execute(
                f"INSERT INTO messages (session_id, {copied})"
                f" SELECT ?, {copied} FROM messages WHERE session_id = ?",
                (new_id, session_id),
            )
            queue_session(conn, new_id)
        return new_id


class Conversation:
    """The live message list of one session. It reads like a list (iteration, len, indexing,
    slices as plain lists), and changes only through `append` and `replace_all`, both of
    which write to the chat log: no mutation can skip it."""

    def __init__(
        self,
        chat_log: ChatLog | None,
        session_id: str | None,
        messages: Iterable[Message] = (),
    ) -> None:
        self._messages: list[Message] = list(messages)
        self.chat_log = chat_log
        self.session_id = session_id
        self.hold: SessionHold | None = None

    @classmethod
    def start(cls, chat_log: ChatLog) -> Conversation:
        session_id = chat_log.create_session()
        conversation = cls(chat_log, session_id)
        conversation.hold = chat_log.hold(session_id)
        return conversation

    @classmethod
    def resume(cls, chat_log: ChatLog, session_id: str) -> Conversation:
        chat_log.require(session_id)
        hold = chat_log.hold(session_id)  # before loading: the other process may still append
        conversation = cls(chat_log, session_id, chat_log.load(session_id))
        conversation.hold = hold
        return conversation

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._messages[index]  # a slice is a copy: editing it changes nothing here

    def __repr__(self) -> str:
        return f"Conversation({self.session_id!r}, {len(self)} messages)"

    def append(self, message: Message) -> None:
        self._messages.append(message)
        if self.chat_log is not None and self.session_id is not None:
            self.chat_log.append(self.session_id, message)

    def calls_edited(self) -> None:
        """The last assistant message's calls were changed in place (a call approved with
        edited arguments): the saved copy says what ran."""
        if self.chat_log is not None and self.session_id is not None:
            last = next(m for m in reversed(self._messages) if m["role"] == "assistant")
            self.chat_log.rewrite_calls(self.session_id, last)

    def replace_all(self, messages: list[Message]) -> None:
        """The whole history at once (a compaction), written in one transaction first."""
        if self.chat_log is not None and self.session_id is not None:
            self.chat_log.replace_messages(self.session_id, messages)
        self._messages = list(messages)


def repair_tool_pairs(messages: list[Message]) -> list[Message]:
    """Give every tool call without a result an "interrupted" result right after its batch."""
    repaired: list[Message] = []
    pending: list[ToolCall] = []

    def flush() -> None:
        for call in pending:
            repaired.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["name"],
                    "content": INTERRUPTED_RESULT,
                }
            )
        pending.clear()

    for message in messages:
        if message["role"] == "tool":
            if any(c["id"] == message.get("tool_call_id") for c in pending):
                pending[:] = [c for c in pending if c["id"] != message.get("tool_call_id")]
                repaired.append(message)
            continue  # a result whose call is gone would be rejected: drop it
        flush()
        repaired.append(message)
        pending = list(tool_calls_of(message))
    flush()
    return repaired


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def _insert(conn: sqlite3.Connection, session_id: str, message: Message) -> Message:
    """Every message reaches the database through here, so every one is redacted; returns
    the message as stored."""
    message = without_secrets(message)
    meta: dict[str, Any] = dict(message.get("meta") or {}) if message["role"] != "tool" else {}
    seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?", (session_id,)
    ).fetchone()[0]
    columns = ("session_id", "seq", *MESSAGE_COLUMNS)
    message_id = conn.execute(
        f"INSERT INTO messages ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        (
            session_id,
            seq,
            message["role"],
            message.get("content") or "",
            _json_or_none(message.get("tool_calls")),
            message.get("tool_call_id"),
            message.get("name"),
            message.get("reasoning_content"),
            _json_or_none(message.get("provider_data")),
            *(meta.get(column) for column in META_COLUMNS),
        ),
    ).lastrowid
    text = meta.get("shown") or message.get("content") or ""
    if text and message_id is not None and is_searched(message["role"], meta.get("kind")):
        index_message(conn, message_id, str(text))
    return message


def _message_from_row(row: sqlite3.Row) -> Message:
    message: dict[str, Any] = {"role": row["role"], "content": row["content"]}
    if row["tool_calls"]:
        message["tool_calls"] = json.loads(row["tool_calls"])
    if row["tool_call_id"]:
        message["tool_call_id"] = row["tool_call_id"]
    if row["name"]:
        message["name"] = row["name"]
    if row["reasoning_content"] is not None:
        message["reasoning_content"] = row["reasoning_content"]
    if row["provider_data"]:
        message["provider_data"] = json.loads(row["provider_data"])
    meta = {column: row[column] for column in META_COLUMNS if row[column] is not None}
    if meta:
        message["meta"] = meta
    return cast(Message, message)  # the row was written from a Message


def without_secrets(message: Message) -> Message:
    """The message with every known key cut out of what people and models read (not out of
    `provider_data`, whose signatures must come back byte for byte)."""
    from wyckoff.config import redact_value

    readable = {
        k: v for k, v in message.items() if k in ("content", "tool_calls", "reasoning_content")
    }
    return cast(Message, {**message, **redact_value(readable)})  # same keys, same types


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def export_markdown(session: dict[str, Any], messages: Iterable[Message]) -> str:
    lines = [
        f"# {session['title'] or '会话'} ({session['id']})",
        "",
        f"创建于 {local_time(session['created_at'])}",
        "",
    ]
    for message in messages:
        if message["role"] == "user":
            lines += ["## 用户", "", message["content"], ""]
        elif message["role"] == "assistant":
            if message.get("content"):
                lines += ["## 助手", "", message["content"], ""]
            for call in message.get("tool_calls") or []:
                lines += [
                    f"- 调用 `{call['name']}` {json.dumps(call.get('args') or {}, ensure_ascii=False)}"
                ]
            if message.get("tool_calls"):
                lines.append("")
        else:
            content = message.get("content") or ""
            preview = content if len(content) <= 500 else content[:500] + "……"
            lines += [
                f"<details><summary>工具结果 {message.get('name', '')}</summary>",
                "",
                "```",
                preview,
                "```",
                "</details>",
                "",
            ]
    return "\n".join(lines)
