"""The watchlist: `wyckoff watch` and the agent's watchlist tools (changes need approval)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import add_scripted_model, cli
from tests.model_servers import Reply


def watched(tag: str | None = None) -> list[dict]:
    args = ("--tag", tag) if tag else ()
    return json.loads(cli("watch", "list", "--json", *args).stdout)["watchlist"]


def test_watch_adds_by_code_or_name_merges_tags_and_undo_walks_back(home):
    added = cli("watch", "add", "茅台", "000001", "--tag", "白酒", "--note", "等回踩")
    assert added.returncode == 0 and "已加入自选：600519 贵州茅台" in added.stderr
    assert cli("watch", "add", "６００５１９", "--tag", "核心").returncode == 0
    assert [(w["code"], w["tags"], w["note"]) for w in watched()] == [
        ("000001", ["白酒"], "等回踩"),
        ("600519", ["白酒", "核心"], "等回踩"),
    ]
    assert [w["code"] for w in watched("核心")] == ["600519"]
    removed = cli("watch", "rm", "贵州茅台")
    assert removed.returncode == 0 and [w["code"] for w in watched()] == ["000001"]
    assert cli("watch", "undo").returncode == 0
    assert watched()[1]["tags"] == ["白酒", "核心"]
    assert cli("watch", "undo").returncode == 0  # the tag added to 600519
    assert watched()[1]["tags"] == ["白酒"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("add", "不存在的股"), "找不到股票"),
        (("add", "600519", "--tag", "长" * 30), "标签最长"),
        (("add", "600519", "--note", "长" * 300), "备注最长"),
        (("rm", "000002"), "自选股里没有 000002"),
        (("undo",), "没有可撤销"),
    ],
)
def test_bad_watch_input_changes_nothing_and_says_why(home, args, says):
    cli("watch", "add", "000001", "--tag", "银行")
    before = watched()
    result = cli("watch", *args)
    if args == ("undo",):
        cli("watch", "undo")  # the add above is undone first; then nothing is left to undo
        before, result = watched(), cli("watch", "undo")
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr
    assert watched() == before


def test_the_agent_changes_the_watchlist_only_with_approval(home, openai_server):
    add_scripted_model(openai_server)
    call = ("update_watchlist", {"action": "add", "code": "茅台", "tags": ["白酒"]})
    openai_server.script(Reply(tool_calls=[call]), Reply(text="需要你批准。"))
    refused = cli("ask", "把茅台加到自选")
    assert refused.returncode == 0 and "--approve update_watchlist" in refused.stderr
    assert watched() == []
    openai_server.script(
        Reply(tool_calls=[call]),
        Reply(tool_calls=[("watchlist", {})]),
        Reply(text="已加入。"),
    )
    applied = cli("ask", "把茅台加到自选", "--approve", "update_watchlist")
    assert applied.returncode == 0, applied.stderr
    assert [(w["code"], w["tags"]) for w in watched()] == [("600519", ["白酒"])]
    listed = openai_server.bodies[-1]["messages"][-1]["content"]
    assert "600519" in listed and "白酒" in listed
