"""Replies that look like success but are not: they must fail (retryable), never pass as answers."""

from __future__ import annotations

import json
import socket

import pytest

from tests.conftest import add_scripted_model, cli, model_config
from tests.model_servers import Reply
from wyckoff.cli.providers.base import ProviderError
from wyckoff.cli.providers.factory import make_provider

HI = [{"role": "user", "content": "你好"}]
BROKEN = {
    "cut": Reply(text="市场整体偏强，因为", cut_stream=True),
    "html": Reply(html_body=True),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_cut_or_html_reply_is_a_retryable_error(any_server, broken):
    any_server.script(BROKEN[broken])
    provider = make_provider(model_config(any_server), stream_timeout_s=5)
    with pytest.raises(ProviderError) as caught:
        provider.chat(HI, [])
    assert caught.value.retryable
    assert "不完整" in caught.value.message or "无法解析" in caught.value.message


@pytest.fixture
def two_models(openai_server):
    """`primary` and `backup` on one scripted server: replies are served in order."""
    add_scripted_model(openai_server, "primary")
    add_scripted_model(openai_server, "backup")
    assert cli("model", "default", "primary").returncode == 0
    assert cli("model", "fallback", "backup").returncode == 0
    return openai_server


def test_a_cut_stream_without_fallback_fails_the_ask(openai_server):
    add_scripted_model(openai_server, "local")
    openai_server.script(Reply(text="市场整体偏强，因为", cut_stream=True))
    result = cli("ask", "今天怎么样", "-o", "json")
    payload = json.loads(result.stdout)
    assert result.returncode == 1 and payload["status"] == "error"
    assert "不完整" in payload["error"]


def test_the_fallback_answers_after_a_cut_stream_and_the_partial_text_is_marked(two_models):
    two_models.script(
        Reply(text="主模型的半句", cut_stream=True, pieces=1), Reply(text="备用模型的完整回答。")
    )
    result = cli("ask", "今天怎么样")
    assert result.returncode == 0, result.stderr
    abandoned, _, answer = result.stdout.partition("主模型的半句")
    assert answer.strip().splitlines()[-1] == "备用模型的完整回答。"
    assert "作废" in answer  # the partial text is clearly marked as abandoned
    assert "已切换到备用模型 backup" in result.stderr


@pytest.fixture
def unreachable_url():
    """A port whose listen backlog is full: a connection attempt hangs, as to a dead host."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    filler = socket.create_connection(listener.getsockname())
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        filler.close()
        listener.close()


@pytest.mark.parametrize("provider", ["openai", "claude"])
def test_an_unreachable_primary_hands_over_as_a_connection_failure(
    openai_server, unreachable_url, provider
):
    base_url = unreachable_url + ("/v1" if provider == "openai" else "")
    added = cli(
        "model", "add", "primary", "--provider", provider, "--model", "m",
        "--base-url", base_url, "--api-key", "sk-test-0123456789",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    add_scripted_model(openai_server, "backup")
    assert cli("model", "default", "primary").returncode == 0
    assert cli("model", "fallback", "backup").returncode == 0
    openai_server.script(Reply(text="备用模型的回答。"))
    result = cli("ask", "你好", "-o", "stream-json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    switch = next(e for e in events if e["type"] == "provider_switch")
    assert "无法连接模型 primary" in switch["reason"] and "没有连上" in switch["reason"]
    assert events[-1]["status"] == "completed" and events[-1]["text"] == "备用模型的回答。"
