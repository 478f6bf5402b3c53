"""Replies that look like success but are not: they must fail (retryable), never pass as answers."""

from __future__ import annotations

import json

import pytest

from tests.conftest import add_scripted_model, cli, model_config
from tests.model_servers import Reply
from wyckoff.cli.model_registry import make_provider
from wyckoff.cli.providers.base import ProviderError

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
