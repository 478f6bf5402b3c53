"""Never the wrong stock: only an exact code or name (or a unique fragment) resolves; anything
else lists the candidates, on the command line, for the agent and in the portfolio."""

from __future__ import annotations

import json

import pytest

from tests.conftest import add_scripted_model, cli


@pytest.mark.parametrize(
    ("typed", "listed"),
    [
        ("60051", "600510.SH 黑牡丹"),
        ("6005", "600500.SH 中化国际"),
        ("600", "600000.SH 浦发银行"),
        ("银行", "600000.SH 浦发银行"),
        ("000001.SH", "000001.SZ 平安银行"),
    ],
)
def test_analyze_lists_candidates_instead_of_guessing(demo_home, typed, listed):
    result = cli("analyze", typed)
    assert result.returncode == 2, result.stderr
    assert listed in result.stderr and "健康度" not in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("typed", ["000001", "000001.SZ", "sz000001", "０００００１", "平安银行"])
def test_analyze_resolves_an_exact_code_or_name(demo_home, typed):
    result = cli("analyze", typed, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["code"] == "000001"


def test_the_agent_gets_the_candidates_to_ask_about(demo_home, openai_server):
    from tests.model_servers import Reply

    add_scripted_model(openai_server)
    openai_server.script(
        Reply(tool_calls=[("analyze_stock", {"code": "银行"})]),
        Reply(text="你指的是哪一家银行？"),
    )
    result = cli("ask", "看看银行", "-o", "json")
    assert result.returncode == 0, result.stderr
    tool_message = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"][0]
    assert "平安银行" in tool_message["content"] and "浦发银行" in tool_message["content"]
    assert "health" not in tool_message["content"]


def test_portfolio_add_accepts_a_name_and_refuses_an_ambiguous_one(home):
    added = cli("portfolio", "add", "贵州茅台", "--shares", "100", "--cost", "1500")
    assert added.returncode == 0, added.stderr
    listed = json.loads(cli("portfolio", "list", "--json").stdout)
    assert [p["code"] for p in listed["positions"]] == ["600519"]
    ambiguous = cli("portfolio", "add", "银行", "--shares", "100", "--cost", "10")
    assert ambiguous.returncode == 2 and "平安银行" in ambiguous.stderr
    removed = cli("portfolio", "rm", "贵州茅台")
    assert removed.returncode == 0 and "已删除：600519 贵州茅台" in removed.stderr


@pytest.mark.parametrize("typed", ["茅台", "600519.SH", "６００５１９", "贵州茅台"])
def test_portfolio_rm_finds_the_held_position_by_any_spelling_and_undo_restores_it(home, typed):
    cli("portfolio", "add", "600519", "--shares", "100", "--cost", "1500")
    removed = cli("portfolio", "rm", typed)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(cli("portfolio", "list", "--json").stdout)["positions"] == []
    assert cli("portfolio", "undo").returncode == 0
    listed = json.loads(cli("portfolio", "list", "--json").stdout)["positions"]
    assert [(p["code"], p["shares"]) for p in listed] == [("600519", 100)]


@pytest.mark.parametrize(("typed", "listed"), [("五粮液", ""), ("银行", "600000.SH 浦发银行")])
def test_portfolio_rm_of_an_unheld_or_ambiguous_name_exits_2_and_changes_nothing(
    home, typed, listed
):
    for code in ("600519", "000001", "600000"):
        cli("portfolio", "add", code, "--shares", "100", "--cost", "10")
    before = cli("portfolio", "list", "--json").stdout
    refused = cli("portfolio", "rm", typed)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "持仓里没有" in refused.stderr and typed in refused.stderr and listed in refused.stderr
    assert cli("portfolio", "list", "--json").stdout == before


def test_a_short_name_from_the_alias_list_resolves_where_a_fragment_cannot(home):
    # 招行 is no fragment of 招商银行, and 格力 fits 格力电器 and 格力博
    for typed, code in (("招行", "600036"), ("格力", "000651")):
        added = cli("portfolio", "add", typed, "--shares", "100", "--cost", "10")
        assert added.returncode == 0, added.stderr
        assert code in {
            p["code"] for p in json.loads(cli("portfolio", "list", "--json").stdout)["positions"]
        }
