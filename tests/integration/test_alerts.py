"""Alerts: rules on Wyckoff structure and prices, fired once per rule, stock and date, quiet
for their cooldown, shown in the brief; each structure alert agrees with `analyze`."""

from __future__ import annotations

import json

import pytest

from tests.cli_runner import cli
from wyckoff.engine.health import diagnose
from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.regime import market_regime


def panel_of(home):
    return MarketStore.for_source(home, "demo").load_panel(400)


def checked(*args: str) -> dict:
    result = cli("alert", "check", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def added(*args: str) -> None:
    result = cli("alert", "add", *args)
    assert result.returncode == 0, result.stderr


def test_an_alert_fires_once_per_rule_stock_and_date(demo_home):
    code = panel_of(demo_home).codes[0]
    added("price", "--scope", code, "--above", "0.01")
    first = checked()
    assert [(a["code"], a["rule_id"]) for a in first["fired"]] == [(code, 1)]
    assert checked()["fired"] == []
    history = json.loads(cli("alert", "history", "--json").stdout)["alerts"]
    assert [(a["code"], a["date"], a["kind"]) for a in history] == [(code, first["as_of"], "price")]


def test_the_cooldown_keeps_a_rule_quiet_for_that_many_trading_days(demo_home):
    panel = panel_of(demo_home)
    code, days = panel.codes[0], [str(d) for d in panel.dates[-6:]]
    added("price", "--scope", code, "--above", "0.01", "--cooldown", "2")
    fired_on = [day for day in days if checked("--date", day)["fired"]]
    assert fired_on == [days[0], days[3]]
    assert checked("--date", days[3])["fired"] == []  # and once per day, still


def test_stop_and_exit_alerts_agree_with_analyze(demo_home):
    panel = panel_of(demo_home)
    below, above = None, None
    for code in panel.codes:
        found = diagnose(panel, code, cost=10)
        stop = found.get("stop", {}).get("stop")
        if stop and found["close"] < stop and found["exit"]["status"] == "exit":
            below = below or code
        elif stop and found["close"] > stop:
            above = above or code
        if below and above:
            break
    for code in (below, above):
        assert cli("portfolio", "add", code, "--shares", "100", "--cost", "10").returncode == 0
    added("stop")
    added("exit", "--scope", "holdings")
    fired = checked()["fired"]
    assert {(a["code"], a["rule_id"]) for a in fired} == {(below, 1), (below, 2)}
    scored = json.loads(cli("scorecard", "--kind", "alert", "--json").stdout)["items"]
    assert [(i["code"], i["advice"]) for i in scored] == [(below, "sell")]  # once per day
    analyzed = json.loads(cli("analyze", below, "--cost", "10", "--json").stdout)
    stop_alert = next(a for a in fired if a["rule_id"] == 1)
    assert f"跌破止损 {analyzed['stop']['stop']:.2f}" in stop_alert["message"]
    assert analyzed["exit"]["detail"] in next(a for a in fired if a["rule_id"] == 2)["message"]
    brief = json.loads(cli("brief", "--format", "json").stdout)
    by_kind = sorted(fired, key=lambda a: a["rule_id"])  # stop, then exit: the order of KINDS
    assert [a["message"] for a in brief["alerts"]] == [a["message"] for a in by_kind]


def test_a_trigger_alert_names_the_new_signal_of_the_day(demo_home):
    panel = panel_of(demo_home)
    t = len(panel.dates) - 1
    for code in panel.codes:
        today, before = diagnose(panel, code, t=t), diagnose(panel, code, t=t - 1)
        new = [x for x in today.get("triggers", []) if x not in before.get("triggers", [])]
        if [x for x in new if x in ("Spring", "LPS", "SOS", "EVR")]:
            break
    cli("watch", "add", code)
    added("trigger", "--scope", "watchlist")
    (alert,) = checked()["fired"]
    assert alert["code"] == code and "新信号" in alert["message"]
    assert all(signal in alert["message"] for signal in new if signal in today["triggers"])


def test_a_regime_alert_fires_on_the_day_the_market_turns_risk_off(demo_home):
    panel = panel_of(demo_home)
    regimes = [market_regime(panel, t)["regime"] for t in range(len(panel.dates))]
    alarming = ("RISK_OFF", "CRASH")
    turns = [
        t
        for t in range(1, len(regimes))
        if regimes[t] in alarming and regimes[t - 1] not in alarming
    ]
    added("regime")
    turned, calm = str(panel.dates[turns[-1]]), str(panel.dates[turns[-1] - 1])
    assert checked("--date", calm)["fired"] == []
    (alert,) = checked("--date", turned)["fired"]
    assert alert["code"] == "market" and "禁止开新仓" in alert["message"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("add", "moon"), "没有提醒类型 moon"),
        (("add", "price", "--scope", "600519"), "--above"),
        (("add", "trigger", "--scope", "market"), "范围请用"),
        (("add", "change", "--threshold", "-1"), "大于 0"),
        (("add", "stop", "--cooldown", "9999"), "--cooldown"),
        (("add", "stop", "--scope", "不存在的股"), "找不到股票"),
        (("rm", "42"), "没有编号 42"),
        (("check", "--date", "tomorrow"), "YYYY-MM-DD"),
    ],
)
def test_bad_alert_input_says_why_and_adds_nothing(home, args, says):
    result = cli("alert", *args)
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr
    assert json.loads(cli("alert", "list", "--json").stdout)["rules"] == []


def test_a_date_before_the_first_bar_is_one_sentence(demo_home):
    added("stop")
    result = cli("alert", "check", "--date", "2000-01-03")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "2000-01-03 及以前没有行情" in result.stderr
    assert json.loads(cli("alert", "history", "--json").stdout)["alerts"] == []


def test_a_market_wide_rule_never_pushes_a_stocks_alert_out_of_the_brief(demo_home):
    code = panel_of(demo_home).codes[0]
    added("price", "--scope", code, "--above", "0.01")  # fires first, so it is the oldest
    added("change", "--scope", "market", "--threshold", "0.01")  # fires on most stocks
    brief = json.loads(cli("brief", "--format", "json").stdout)
    day = cli("alert", "history", "--date", brief["date"], "--json").stdout
    every = json.loads(day)["alerts"]
    assert len(every) > 100 and len(brief["alerts"]) == len(every)  # 100 was the old cap
    assert (brief["alerts"][0]["code"], brief["alerts"][0]["kind"]) == (code, "price")
    shown = cli("brief", "--date", brief["date"]).stdout
    assert f"- {code} " in shown.split("## 提醒")[1].splitlines()[1]
    assert f"……另有 {len(every) - 30} 条，见 `wyckoff alert history --date" in shown


def test_the_brief_checks_the_rules_itself_and_a_dry_run_records_nothing(demo_home):
    code = panel_of(demo_home).codes[0]
    added("price", "--scope", code, "--above", "0.01")
    dry = json.loads(cli("brief", "--dry-run", "--format", "json").stdout)
    assert (
        dry["alerts"] == [] and json.loads(cli("alert", "history", "--json").stdout)["alerts"] == []
    )
    brief = json.loads(cli("brief", "--format", "json").stdout)
    assert [(a["code"], a["kind"]) for a in brief["alerts"]] == [(code, "price")]
    assert checked()["fired"] == []  # already recorded by the brief


def test_a_pnl_alert_fires_for_a_holding_whose_loss_is_beyond_the_threshold(demo_home):
    panel = panel_of(demo_home)
    deep, shallow, watched = panel.codes[:3]
    close = {code: float(panel.close[-1, panel.column(code)]) for code in (deep, shallow)}
    for code, loss in ((deep, 0.15), (shallow, 0.05)):
        cost = f"{close[code] / (1 - loss):.3f}"
        assert cli("portfolio", "add", code, "--shares", "100", "--cost", cost).returncode == 0
    assert cli("watch", "add", watched).returncode == 0
    added("pnl", "--threshold", "10")
    added("pnl", "--scope", "watchlist")  # a watched stock has no cost: never fires
    (alert,) = checked()["fired"]
    assert (alert["code"], alert["rule_id"]) == (deep, 1)
    assert alert["message"].startswith("持仓浮亏 -15.0") and "阈值 -10%" in alert["message"]
    listed = cli("alert", "list").stdout
    assert "持仓浮亏 ≥ 10%（按成本价）" in listed
