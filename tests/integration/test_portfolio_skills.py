"""Portfolio, AI reports, strategy decisions and skills, end to end through the CLI and the
scripted model servers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import add_scripted_model, cli, marked_data, model_config
from tests.engine_fixtures import DAYS, make_panel, series, store_from_panel
from tests.model_servers import Reply
from wyckoff.agents.portfolio import Portfolio
from wyckoff.agents.reports import (
    DecisionParams,
    ReportParams,
    generate_ai_report,
    generate_strategy_decision,
)
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.providers.factory import make_provider
from wyckoff.cli.skills import SkillLibrary
from wyckoff.cli.tools import ToolContext
from wyckoff.store import Store


def positions(home) -> list[dict]:
    return json.loads(cli("portfolio", "list", "--json").stdout)["positions"]


def test_portfolio_commands_validate_and_change_nothing_on_error(home):
    assert (
        cli(
            "portfolio",
            "add",
            "600519",
            "--name",
            "贵州茅台",
            "--shares",
            "200",
            "--cost",
            "1500",
            "--buy-dt",
            "20260105",
        ).returncode
        == 0
    )
    before = positions(home)
    for args, message in (
        (
            ["add", "600519", "--name", "平安银行", "--shares", "100", "--cost", "10"],
            "代码与名称不符",
        ),
        (["add", "000001", "--shares", "0", "--cost", "10"], "股数必须是正整数"),
        (["add", "000001", "--shares", "100", "--cost", "-1"], "成本价必须大于 0"),
        (
            ["add", "000001", "--shares", "100", "--cost", "10", "--buy-dt", "20260231"],
            "不是有效日期",
        ),
        (["add", "000001", "--shares", "100", "--cost", "10", "--buy-dt", "20991231"], "在未来"),
        (["add", "999999", "--shares", "100", "--cost", "10"], "不是 A 股代码表中的股票"),
        (["rm", "000001"], "持仓里没有 000001"),
    ):
        result = cli("portfolio", *args)
        assert (
            result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
        ), (args, result.stderr)
    assert positions(home) == before


def test_portfolio_add_averages_cost_and_undo_reverts_each_change(home):
    cli("portfolio", "add", "000001", "--shares", "100", "--cost", "10", "--buy-dt", "20260105")
    cli("portfolio", "add", "000001", "--shares", "300", "--cost", "12", "--buy-dt", "20260106")
    (position,) = positions(home)
    assert (
        position["shares"] == 400
        and position["cost_price"] == pytest.approx(11.5)
        and position["name"] == "平安银行"
    )
    cli("portfolio", "cash", "50000")
    assert cli("portfolio", "undo").returncode == 0
    listed = json.loads(cli("portfolio", "list", "--json").stdout)
    assert listed["cash"] == 0
    cli("portfolio", "undo")
    assert positions(home)[0]["shares"] == 100
    history = json.loads(cli("portfolio", "history", "--json").stdout)["history"]
    assert [h["action"] for h in history[:4]] == ["undo", "undo", "set_cash", "add"] and all(
        h["actor"] == "cli" for h in history
    )


@pytest.fixture
def agent_on_demo(home, openai_server, install_demo):
    install_demo(home, 300)
    cli("data", "use", "demo")
    add_scripted_model(openai_server)
    return openai_server


def test_checkup_skill_runs_execute_skill_then_portfolio_diagnose(agent_on_demo, home):
    cli("portfolio", "add", "000001", "--shares", "1000", "--cost", "9.5", "--buy-dt", "20260105")
    agent_on_demo.script(
        Reply(tool_calls=[("execute_skill", {"name": "checkup", "user_input": "重点看风险"})]),
        Reply(tool_calls=[("portfolio", {"mode": "diagnose"})]),
        Reply(text="体检完成：平安银行（演示数据）。"),
    )
    result = cli("ask", "/checkup 重点看风险", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "体检完成：平安银行（演示数据）。"
    first = agent_on_demo.bodies[0]["messages"]
    assert (
        "execute_skill" in first[-1]["content"] and "/checkup" in first[0]["content"]
    )  # skills listed in the system prompt
    skill_result = json.loads(
        marked_data(agent_on_demo.bodies[1]["messages"][-1]["content"], "execute_skill")
    )
    assert (
        'portfolio(mode="diagnose")' in skill_result["instructions"]
        and "重点看风险" in skill_result["instructions"]
    )
    diagnosis = json.loads(
        marked_data(agent_on_demo.bodies[2]["messages"][-1]["content"], "portfolio")
    )
    (holding,) = diagnosis["positions"]
    assert (
        holding["code"] == "000001"
        and holding["health"] in ("healthy", "caution", "danger")
        and holding["reasons"]
    )
    assert diagnosis["source"] == "demo" and diagnosis["data_note"]


def test_unknown_slash_skill_is_a_usage_error(agent_on_demo):
    result = cli("ask", "/nosuch")
    assert result.returncode == 2 and "没有名为 /nosuch 的技能" in result.stderr


def test_headless_update_portfolio_needs_approve(agent_on_demo, home):
    call = (
        "update_portfolio",
        {
            "action": "add",
            "code": "600519",
            "name": "贵州茅台",
            "shares": 100,
            "cost_price": 1500,
            "buy_dt": "20260105",
        },
    )
    agent_on_demo.script(Reply(tool_calls=[call]), Reply(text="需要你批准。"))
    refused = cli("ask", "帮我记录买入 100 股茅台")
    assert refused.returncode == 0 and "--approve update_portfolio" in refused.stderr
    assert positions(home) == []
    agent_on_demo.script(Reply(tool_calls=[call]), Reply(text="已记录。"))
    applied = cli("ask", "帮我记录买入 100 股茅台", "--approve", "update_portfolio")
    assert applied.returncode == 0
    (position,) = positions(home)
    assert (position["code"], position["shares"]) == ("600519", 100)
    assert (
        json.loads(cli("portfolio", "history", "--json").stdout)["history"][0]["actor"] == "agent"
    )


def test_ask_user_consent_applies_to_that_action_only(agent_on_demo, home):
    from wyckoff.cli.runtime import AgentRuntime

    store = Store.in_home(home)
    action = {
        "action": "add",
        "code": "600519",
        "name": "贵州茅台",
        "shares": 100,
        "cost_price": 1500,
        "buy_dt": "20260105",
    }
    agent_on_demo.script(
        Reply(
            tool_calls=[
                (
                    "ask_user",
                    {
                        "question": "记录买入 100 股茅台？",
                        "options": ["确认", "取消"],
                        "action": {"tool": "update_portfolio", "args": action},
                    },
                )
            ]
        ),
        Reply(tool_calls=[("update_portfolio", {**action, "shares": 1000})]),
        Reply(tool_calls=[("update_portfolio", action)]),
        Reply(text="完成"),
    )
    provider = make_provider(model_config(agent_on_demo), stream_timeout_s=5)
    runtime = AgentRuntime(
        provider, default_registry(), home=home, store=store, ask_user=lambda q: {"answer": "确认"}
    )
    events = list(runtime.run_stream([{"role": "user", "content": "记录茅台"}]))
    errors = [e["error"] for e in events if e["type"] == "tool_error"]
    assert len(errors) == 1 and "需要用户批准" in errors[0]
    assert [(p["code"], p["shares"]) for p in Portfolio(store).positions()] == [("600519", 100)]


# --- reports and decisions ----------------------------------------------------------------------


def _context(home, server) -> ToolContext:
    store = Store.in_home(home)
    return ToolContext(
        home=home,
        registry=default_registry(),
        store=store,
        provider=make_provider(model_config(server), stream_timeout_s=5),
    )


def _market(home, filler_drift: float) -> None:
    home.mkdir(parents=True, exist_ok=True)
    cli("data", "use", "tushare", "--token", "tok-0123456789")
    bench = 3000 * np.cumprod(np.full(DAYS, 1 + filler_drift))
    store_from_panel(
        home, make_panel(series((DAYS, 0.002)), fillers=40, filler_drift=filler_drift, bench=bench)
    )


def test_report_sorts_stocks_from_model_text_and_the_decision_sizes_in_lots(home, openai_server):
    _market(home, filler_drift=0.0005)
    Portfolio(Store.in_home(home)).set_cash(200_000)
    verdicts = {
        "stocks": [
            {"code": "600000", "category": "起跳板", "reason": "多头排列，回踩缩量"},
            {"code": "600001", "category": "逻辑破产", "reason": "跌破支撑"},
        ]
    }
    openai_server.script(
        Reply(text="结论如下：\n```json\n" + json.dumps(verdicts, ensure_ascii=False) + "\n```"),
        Reply(text='{"rationales": {"600000": "趋势完好，小仓位试探"}}'),
    )
    context = _context(home, openai_server)
    report = generate_ai_report(ReportParams(stock_codes=["600000", "600001", "600002"]), context)
    assert report["categories"]["起跳板"] == ["600000"] and report["categories"]["逻辑破产"] == [
        "600001"
    ]
    assert report["categories"]["未分类"] == ["600002"]
    sent = openai_server.bodies[0]["messages"][-1]["content"]
    assert "last_15_days" in sent and len(sent) < 6000  # compressed features, not raw bars

    decision = generate_strategy_decision(DecisionParams(), context)
    (order,) = decision["orders"]
    assert order["code"] == "600000" and order["action"] in ("PROBE", "ATTACK")
    assert order["shares"] > 0 and order["shares"] % 100 == 0
    assert (
        order["stop"] < order["close"]
        and order["shares"] * order["close"] <= 0.2 * decision["equity"] + 1e-6
    )
    assert order["rationale"] == "趋势完好，小仓位试探"
    assert Portfolio(Store.in_home(home)).positions() == []  # nothing executed
    (scored,) = json.loads(cli("scorecard", "--kind", "decision", "--json").stdout)["items"]
    assert (scored["code"], scored["advice"], scored["stop"], scored["note"]) == (
        "600000",
        "buy",
        order["stop"],
        order["action"],
    )  # the decision's buy, with its stop, is on the scorecard


def test_decision_blocks_buys_in_risk_off_and_exits_broken_holdings(home, openai_server):
    _market(home, filler_drift=-0.012)  # everything falls: breadth collapses
    book = Portfolio(Store.in_home(home))
    book.set_cash(100_000)
    context = _context(home, openai_server)
    openai_server.script(Reply(text="{}"))
    decision = generate_strategy_decision(DecisionParams(candidate_codes=["600001"]), context)
    assert decision["regime"] == "RISK_OFF" and not decision["buy_allowed"]
    (order,) = decision["orders"]
    assert order["action"] == "WAIT" and order["shares"] == 0 and "禁止开新仓" in order["rationale"]


def test_a_suspended_holding_is_held_and_valued_at_its_last_close(home, openai_server):
    home.mkdir(parents=True, exist_ok=True)
    cli("data", "use", "tushare", "--token", "tok-0123456789")
    panel = make_panel(series((DAYS, 0.002)), fillers=40)
    for name in ("open", "high", "low", "close", "volume", "amount"):
        getattr(panel, name)[-3:, 0] = np.nan  # 600000 suspended for the last three days
    last_close = float(panel.close[-4, 0])
    store_from_panel(home, panel)
    book = Portfolio(Store.in_home(home))
    book.set_cash(50_000)
    book.add("600000", None, 1_000, 10.0, "20250105")
    openai_server.script(Reply(text="{}"))
    context = _context(home, openai_server)
    decision = generate_strategy_decision(DecisionParams(candidate_codes=["600000"]), context)
    (order,) = [o for o in decision["orders"] if o["code"] == "600000"]
    assert order["action"] == "HOLD" and order["shares"] == 0 and "停牌" in order["rationale"]
    assert order["close"] == round(last_close, 2)
    assert decision["equity"] == round(50_000 + 1_000 * last_close, 2)

    book.remove("600000")  # as a candidate, a suspended stock cannot be bought today
    openai_server.script(Reply(text="{}"))
    decision = generate_strategy_decision(DecisionParams(candidate_codes=["600000"]), context)
    (order,) = decision["orders"]
    assert order["action"] == "WAIT" and order["shares"] == 0 and "停牌" in order["rationale"]


def test_broken_skill_files_are_contained(home):
    folder = home / "skills"
    folder.mkdir(parents=True)
    (folder / "nofront.md").write_text("只是正文")
    (folder / "badname.md").write_text("---\nname: Bad Name\ndescription: x\n---\nbody")
    (folder / "nodesc.md").write_text("---\nname: nodesc\n---\nbody")
    (folder / "binary.md").write_bytes(b"\xff\xfe\x00garbage")
    (folder / "dcf.md").write_text(
        "---\nname: dcf\ndescription: DCF 估值\n---\n请对 {user_input} 做 DCF 估值。"
    )
    (folder / "screen.md").write_text(
        "---\nname: screen\ndescription: 我的筛选\n---\n只筛主板 {user_input}"
    )
    library = SkillLibrary(home)
    assert len(library.warnings) == 4 and all("已跳过技能文件" in w for w in library.warnings)
    assert any("nofront.md" in w and "front matter" in w for w in library.warnings)
    assert library.get("dcf").expand("600519") == "请对 600519 做 DCF 估值。"
    assert library.get("screen").origin.endswith("screen.md") and library.notices
    assert "/checkup" in library.reminder() and "/dcf" in library.reminder()
    listed = cli("skills", "list")
    assert listed.returncode == 0 and "/dcf" in listed.stdout and "已跳过技能文件" in listed.stderr


def test_portfolio_diagnosis_uses_one_stop_for_the_level_the_exit_and_the_reasons(demo_home):
    # the holder's stop sits 1% under the close and above the engine's stop: it is the stop
    # shown, the one the exit status checks and the one the near-stop warning names
    from tests.integration.test_local_tools import call, result
    from wyckoff.engine.health import diagnose
    from wyckoff.engine.market_store import MarketStore

    panel = MarketStore.for_source(demo_home, "demo").load_panel(400)
    for code in panel.codes:
        engine = diagnose(panel, code)
        own_stop = round(engine.get("close", 0) / 1.01, 2)
        if engine.get("stop", {}).get("stop") and engine["stop"]["stop"] < own_stop * 0.97:
            break
    cost = str(engine["close"])
    added = cli(
        "portfolio", "add", code, "--shares", "100", "--cost", cost, "--stop-loss", str(own_stop)
    )
    assert added.returncode == 0, added.stderr
    (row,) = result(call(demo_home, "portfolio", mode="diagnose"))["positions"]
    shown = f"{own_stop:.2f}"
    assert row["stop_level"] == own_stop
    assert row["exit_status"]["status"] == "hold" and shown in row["exit_status"]["detail"]
    assert any(shown in reason for reason in row["reasons"] if "止损" in reason)
    assert not any(f"{engine['stop']['stop']:.2f}" in reason for reason in row["reasons"])


def test_the_approval_names_the_holding_the_agent_will_remove_by_a_fragment(agent_on_demo, home):
    cli("portfolio", "add", "600519", "--shares", "100", "--cost", "1500")
    context = _context(home, agent_on_demo)
    args = {"action": "remove", "code": "茅台"}
    shown = context.registry.describe("update_portfolio", args, context)
    assert shown == "删除持仓 600519 贵州茅台（100 股）"
    agent_on_demo.script(Reply(tool_calls=[("update_portfolio", args)]), Reply(text="已删除。"))
    applied = cli("ask", "茅台清仓了", "--approve", "update_portfolio")
    assert applied.returncode == 0 and positions(home) == []
