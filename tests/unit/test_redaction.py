"""Secret masking: every configured key value is masked wherever it occurs and key-shaped
tokens where a token starts, while ordinary text (tags, file names, URLs, code, Chinese)
comes back byte for byte, through the chat log as well."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply
from wyckoff.cli.chat_log import ChatLog
from wyckoff.config import redact_text, redact_value
from wyckoff.store import Store

CONFIGURED_KEY = "Zq9~odd.key:value42"  # no known shape: only its value can find it

ORDINARY_TEXT = [
    "<task-notification>\ntask_id: bg-3\nstatus: done\n</task-notification>",
    "报告已写入 desk-research-2026.md 和 risk-management-2026-q4.xlsx",
    "https://example.com/docs/task-queue-worker-01?ask-price=12&disk-usage=99",
    "pip install flask-sqlalchemy-extensions mask-rcnn-weights whisk-0123456789",
    "kiosk-mode-enabled = true  # see desk-setup-guide-v2",
    "def risk_check(task): return task.name.startswith('desk-research-')",
    "宁德时代（300750）跌破 180 不建仓；task-notification 已送达，disk-cleanup-job 完成。",
    "The flag-bearer carried it; a bearer instrument pays whoever holds it.",
    "AIzaFooBar is a class name, not a key.",
    "git checkout -b task-1234567890-fix && echo ok",
]

KEY_SHAPED = [
    ("key=sk-live0123456789", "key=***"),
    ("密钥是sk-proj-AbC123xyz456，别外传", "密钥是***，别外传"),
    ('{"note": "sk-ant-api03-abcdefgh12345"}', '{"note": "***"}'),
    ("export OPENAI_API_KEY=sk-abcdefgh1234", "export OPENAI_API_KEY=***"),
    ("(AIzaSyA1234567890abcdefghijkl)", "(***)"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", "Authorization: ***"),
    (f"它的密钥是 {CONFIGURED_KEY} 。", "它的密钥是 *** 。"),
    (f"inside-a-word{CONFIGURED_KEY}too", "inside-a-word***too"),
]


@pytest.fixture(autouse=True)
def configured_key(monkeypatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", CONFIGURED_KEY)


@pytest.mark.parametrize("text", ORDINARY_TEXT)
def test_ordinary_text_comes_back_byte_for_byte(text):
    assert redact_text(text) == text
    assert redact_value({"content": text, "items": [text]}) == {"content": text, "items": [text]}


@pytest.mark.parametrize(("text", "masked"), KEY_SHAPED)
def test_every_key_shaped_sample_and_the_configured_key_are_masked(text, masked):
    assert redact_text(text) == masked


def test_a_background_notification_is_stored_as_it_was_written(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    chat_log = ChatLog(Store.in_home(home))
    session = chat_log.create_session("t")
    notification = f"{ORDINARY_TEXT[0]}\n密钥 sk-live0123456789"
    chat_log.append(session, {"role": "user", "content": notification})
    (stored,) = chat_log.load(session)
    assert stored["content"] == f"{ORDINARY_TEXT[0]}\n密钥 ***"


@pytest.mark.parametrize("pieces", [1, 7, 23, 60, 200])
def test_a_streamed_reply_shows_keys_masked_and_words_whole_however_it_is_split(
    openai_server, pieces
):
    add_scripted_model(openai_server)
    reply = (
        f"页面里的密钥 sk-proj-Abc123456789xyz 和 {CONFIGURED_KEY}，报告在 desk-research-2026.md，"
        "请求头 Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc。"
    )
    openai_server.script(Reply(text=reply, pieces=pieces))
    result = cli("ask", "看看", "-o", "stream-json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    shown = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert (
        shown
        == "页面里的密钥 *** 和 ***，报告在 desk-research-2026.md，请求头 Authorization: ***。"
    )
