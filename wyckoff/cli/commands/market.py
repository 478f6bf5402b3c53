"""Direct market commands (no model needed): screen, analyze, market, backtest, data.

Each runs the same tool function the agent uses, shows a Rich table (or `--json` for
scripts) and a progress bar on long work. Demo results are labelled on every output.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from wyckoff.cli import numbers as num
from wyckoff.cli.output import print_json, print_notice, print_table
from wyckoff.engine.sources.choice import SOURCES, chosen_source, resolve_source, tushare_token
from wyckoff.errors import UsageError
from wyckoff.store import Store

data_app = typer.Typer(
    help="行情数据 / market data: sync, status, use, import.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
JsonOption = Annotated[bool, typer.Option("--json", help="输出 JSON")]
SCREEN_LEGEND = """说明：
  排序  先列触发信号的股票，再按评分从高到低；未触发的排在所有触发的之后，哪怕评分更高。
  评分  综合相对强度、入选通道数、是否触发信号和 RPS120 的排序分；只用于本次筛选内排序，不是百分制或概率。
  Spring  弹簧：跌破区间支撑后放量收回。
  LPS     最后支撑点：缩量回踩 20 日均线不破。
  EVR     努力与结果：放量但价格几乎不动（可能有资金承接）。
  SOS     强势信号：放量大涨，创 60 日新高或上穿 50 日均线。
  波动收敛 / 趋势回踩  振幅与成交量收缩 / 上升趋势中的缩量回调。"""


def _context():
    """A command calls its tool function directly: no registry of every tool to build."""
    from wyckoff.cli.tools import ToolContext, ToolRegistry
    from wyckoff.config import wyckoff_home

    home = wyckoff_home()
    return ToolContext(home=home, registry=ToolRegistry(), store=Store.in_home(home))


def _progress_bar():
    """A transient Rich progress bar on stderr (Rich imported only when it is shown)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def _with_progress(label: str, work):
    """Run `work(progress)` under a progress bar whose stages `progress(stage, detail, fraction)` set."""
    with _progress_bar() as bar:
        task = bar.add_task(label, total=1.0)
        return work(
            lambda stage, detail, fraction: bar.update(
                task, description=f"{stage} {detail}", completed=fraction or 0
            )
        )


def _build_demo(home) -> bool:
    """Build the demo store now, with progress, unless it is already complete."""
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.engine.sources.demo import demo_complete, ensure_demo

    if demo_complete(MarketStore.for_source(home, "demo")):
        return False
    _with_progress("生成演示数据", lambda progress: ensure_demo(home, progress))
    return True


def _call(func, params, *, label: str | None = None) -> dict[str, Any]:
    """Run a tool function with its progress on stderr; tool failures become clear errors."""
    context = _context()
    if not sys.stderr.isatty():
        context.on_progress = StageLog().update
        return func(params, context)
    with _progress_bar() as bar:
        task = bar.add_task(label or "处理中", total=1.0)

        def update(progress: dict[str, Any]) -> None:
            bar.update(task, description=_describe(progress), completed=progress["fraction"] or 0)

        context.on_progress = update
        return func(params, context)


def _describe(progress: dict[str, Any]) -> str:
    return " ".join(x for x in (progress.get("stage"), progress.get("detail")) if x)


class StageLog:
    """Without a terminal (logs, pipes) no bar can be drawn: one stderr line per stage, and
    one per tenth of a long stage, so a slow run still shows where it is."""

    def __init__(self) -> None:
        self.last: tuple[str, int] | None = None

    def update(self, progress: dict[str, Any]) -> None:
        step = (progress.get("stage") or "", int((progress.get("fraction") or 0) * 10))
        if step != self.last:
            self.last = step
            sys.stderr.write(f"… {_describe(progress)}\n")
            sys.stderr.flush()


def _same_destination(first, second) -> bool:
    """Whether two streams end up in the same place (one terminal, or `2>&1`)."""
    try:
        return os.path.sameopenfile(first.fileno(), second.fileno())
    except (OSError, ValueError):  # not a real file (tests capture output in memory)
        return False


def _note(result: dict[str, Any]) -> None:
    source = f"数据源：{result.get('source')}，截至 {result.get('as_of')}"
    print_notice(source)
    if result.get("data_note"):  # on stdout: a piped or saved output keeps the demo label
        typer.echo(f"⚠ {result['data_note']}")
        if not _same_destination(sys.stdout, sys.stderr):  # and on the screen, once
            print_notice(f"⚠ {result['data_note']}")
    for caveat in result.get("data_caveats") or []:
        typer.echo(f"⚠ 数据缺口 — {caveat}")
    if result.get("bar_note"):  # during the session the latest bar is not a close
        typer.echo(f"⚠ {result['bar_note']}")


def screen(
    board: Annotated[str, typer.Option("--board", help="all | main | chinext | star")] = "all",
    limit: Annotated[int, typer.Option("--limit", help="显示前几只候选；0 为第三层全部")] = 20,
    json_output: JsonOption = False,
) -> None:
    """全市场威科夫漏斗筛选 / run the four-layer funnel over the whole market."""
    from wyckoff.agents.screening import ScreenParams, screen_stocks
    from wyckoff.agents.signal_record import record_lines

    params = _params(ScreenParams, board=board, limit=limit)
    result = _call(screen_stocks, params, label="全市场筛选")
    if json_output:
        print_json(result)
        return
    s = result["summary"]
    _note(result)
    typer.echo(
        f"扫描 {num.count(s['total_scanned'])} 只 → 第一层 {num.count(s['layer1_passed'])} → "
        f"第二层 {num.count(s['layer2_passed'])} → 第三层 {num.count(s['layer3_passed'])} → "
        f"触发信号 {num.count(s['report_candidates'])}"
    )
    typer.echo(f"市场状态：{result['regime_label']}（{result['trade_mode']}）")
    print_table(
        "候选股（先列触发信号的，再按评分从高到低）",
        ["代码", "名称", "行业", "收盘", "通道", "信号", "评分"],
        [
            [
                c["code"],
                c["name"],
                c["industry"],
                num.price(c["close"]),
                "+".join(c["channels"]),
                "、".join(c["triggers"]),
                f"{c['score']:.1f}",
            ]
            for c in result["top_candidates"]
        ],
    )
    if result["shown"] < result["total"]:
        typer.echo(
            f"第三层共 {result['total']} 只，只显示排序前 {result['shown']} 只（`--limit 0` 显示全部）。"
        )
    if result["top_sectors"]:
        typer.echo("强势行业：" + "、".join(s["industry"] for s in result["top_sectors"]))
    records = [result["record"], *result["signal_records"]] if result.get("record") else []
    if records:
        typer.echo(
            "历史记录（本地行情库）：\n" + "\n".join(f"  · {x}" for x in record_lines(records))
        )
    if result["top_candidates"]:
        typer.echo(SCREEN_LEGEND)


def analyze(
    stock: Annotated[str, typer.Argument(help="6 位代码或股票名称")],
    cost: Annotated[float, typer.Option("--cost", help="持仓成本价")] = 0.0,
    json_output: JsonOption = False,
) -> None:
    """诊断一只股票 / diagnose one stock."""
    from wyckoff.agents.signal_record import record_lines
    from wyckoff.agents.stocks import AnalyzeParams, analyze_stock

    result = _call(analyze_stock, _params(AnalyzeParams, code=stock, cost=cost), label="个股诊断")
    if json_output:
        print_json(result)
        return
    _note(result)
    ma = result["ma"]
    lines = [
        f"{result['code']} {result['name']}（{result['industry']}） 收盘 {num.price(result['close'])}",
        f"健康度：{result['health_label']}",
        *[f"  · {reason}" for reason in result["reasons"]],
        f"阶段：{result['phase']}    均线：{ma['pattern']}（MA20 {num.price(ma['ma20'])} / "
        f"MA50 {num.price(ma['ma50'])} / MA200 {num.price(ma['ma200'])}）",
        f"通道：{'、'.join(result['channels']) or '无'}    信号：{'、'.join(result['triggers']) or '无'}",
        *[f"  · {line}" for line in record_lines(result.get("signal_records") or [])],
        f"止损：{num.price(result['stop']['stop'])}（{result['stop']['label']}）  {result['exit']['detail']}",
        f"RPS50 {_known(result['rps50'])}  RPS120 {_known(result['rps120'])}  "
        f"距年内高点 {_known_pct(result['from_year_high_pct'])}  "
        f"距年内低点 {_known_pct(result['from_year_low_pct'])}",
        "收益："  # the JSON's keys 5d/20d are days, as `market` writes them: 5日/20日
        + "  ".join(
            f"{k.removesuffix('d')}日 {_known_pct(v)}" for k, v in result["returns_pct"].items()
        ),
    ]
    if result.get("pnl_pct") is not None:
        lines.append(
            f"持仓盈亏：{num.pct(result['pnl_pct'], signed=True)}（成本 {num.price(result['cost'])}）"
        )
    typer.echo("\n".join(lines))


def _known(value: float | None) -> str:
    """A number, or "—（未知）" when the history is too short to know it."""
    return "—（未知）" if value is None else f"{value:.1f}"


def _known_pct(value: float | None) -> str:
    return "—（未知）" if value is None else num.pct(value, signed=True)


def market(json_output: JsonOption = False) -> None:
    """大盘概览 / market overview."""
    from wyckoff.agents.overview import NoParams, get_market_overview

    result = _call(get_market_overview, NoParams(), label="大盘概览")
    if json_output:
        print_json(result)
        return
    _note(result)
    print_table(
        "主要指数",
        ["代码", "名称", "收盘", "涨跌", "20日"],
        [
            [
                i["code"],
                i["name"],
                num.price(i["close"]),
                num.pct(i["pct_change"], signed=True),
                num.pct(i["ret20_pct"], signed=True),
            ]
            for i in result["indices"]
        ],
    )
    ad, regime = result["advance_decline"], result["regime"]
    typer.echo(
        f"上涨 {num.count(ad['up'])} / 下跌 {num.count(ad['down'])} / 平 {num.count(ad['flat'])}；"
        f"站上 20 日均线 {num.pct(regime['breadth_pct'])}"
    )
    typer.echo(
        f"市场状态：{regime['label']} — {regime['reason']}（{'允许开新仓' if regime['buy_allowed'] else '禁止开新仓'}）"
    )


def backtest(
    ctx: typer.Context,
    start: Annotated[
        str | None, typer.Option("--start", help="开始日期 YYYY-MM-DD（默认结束前 250 个交易日）")
    ] = None,
    end: Annotated[
        str | None, typer.Option("--end", help="结束日期 YYYY-MM-DD（默认最新）")
    ] = None,
    hold_days: Annotated[int, typer.Option("--hold-days", help="最长持有交易日数")] = 10,
    top_n: Annotated[int, typer.Option("--top-n", help="每个信号日买入评分最高的几只")] = 3,
    board: Annotated[str, typer.Option("--board", help="all | main | chinext | star")] = "all",
    stop_loss_pct: Annotated[float, typer.Option("--stop-loss-pct", help="固定止损 %")] = 8.0,
    take_profit_pct: Annotated[float, typer.Option("--take-profit-pct", help="止盈 %")] = 20.0,
    json_output: JsonOption = False,
) -> None:
    """漏斗策略回测 / point-in-time backtest of the funnel."""
    if ctx.invoked_subcommand:  # `backtest sweep` / `backtest sweeps`
        return
    from wyckoff.agents.backtest import BacktestParams, run_backtest_tool

    params = _params(
        BacktestParams,
        start=start,
        end=end,
        hold_days=hold_days,
        top_n=top_n,
        board=board,
        stop_loss_pct=stop_loss_pct,
        take_profit_pct=take_profit_pct,
    )
    result = _call(run_backtest_tool, params, label="回测")
    if json_output:
        print_json(result)
        return
    _note(result)
    typer.echo(
        f"区间 {result['period']['start']} ~ {result['period']['end']}，交易 {result['trades']} 笔"
    )
    typer.echo(
        f"胜率 {num.pct(result['win_rate_pct'])}  平均 {num.pct(result['avg_ret_pct'], signed=True)}  "
        f"中位数 {num.pct(result['median_ret_pct'], signed=True)}  "
        f"VaR95 {num.pct(result['var95_pct'], signed=True)}  "
        f"CVaR95 {num.pct(result['cvar95_pct'], signed=True)}  "
        f"最长连亏 {result['max_consecutive_losses']} 笔  夏普 {_sharpe(result['sharpe_ratio'])}"
    )
    for view in (result["simple_view"], result["cash_portfolio"]):
        typer.echo(
            f"{view['label']}：收益 {num.pct(view['total_return_pct'], signed=True)}，"
            f"最大回撤 {num.pct(view['max_drawdown_pct'])}"
        )
        if view.get("note"):
            typer.echo(f"  注：{view['note']}")
    _print_benchmark(result["benchmark"])
    typer.echo(f"⚠ {result['strategy_record']}")
    shown = result["trade_list"][-10:]
    truncated = f"，只列出最近 {len(shown)} 笔" if result["trades"] > len(shown) else ""
    print_table(
        f"交易明细：共 {result['trades']} 笔{truncated}",
        ["代码", "名称", "买入", "卖出", "买价", "卖价", "收益", "原因"],
        [
            [
                t["code"],
                t["name"],
                t["entry_date"],
                t["exit_date"],
                num.price(t["entry"]),
                num.price(t["exit"]),
                num.pct(t["ret_pct"], signed=True),
                t["reason"],
            ]
            for t in shown
        ],
    )
    if any(t["open_at_end"] for t in result["trade_list"]):
        typer.echo(
            "期末持有/期末停牌：回测结束时尚未卖出，按最后收盘价（停牌的按停牌前收盘价）估值计入统计。"
        )


def _print_benchmark(benchmark: dict[str, Any]) -> None:
    """The market over the same window, and whether the strategy beat it."""
    from wyckoff.agents.market_data import signed_pct

    shown = "，".join(
        f"{row['name']} {signed_pct(row['return_pct'])}" for row in benchmark["indices"]
    )
    period = benchmark["period"]
    typer.echo(f"同期基准（{period['start']} ~ {period['end']}）：{shown}")
    typer.echo(f"对比：{benchmark['verdict']}")
    if benchmark.get("note"):
        typer.echo(f"  注：{benchmark['note']}。")


ARGUMENTS = {"code": "STOCK"}  # params fields that are positional arguments, by their name


def _params(model, **values):
    """The tool's params from the command's options; a bad value is named by its option
    (`--hold-days`), not by the field behind it."""
    from pydantic import ValidationError

    from wyckoff.cli.usage_errors import invalid_options

    try:
        return model(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise invalid_options(exc, values, ARGUMENTS) from None


# --- wyckoff data ------------------------------------------------------------------------------


@data_app.command("use")
def use(
    source: Annotated[
        str, typer.Argument(help="auto | tushare | akshare | baostock | demo | import")
    ],
    token: Annotated[
        str | None, typer.Option("--token", help="tushare token（保存在 0600 配置中）")
    ] = None,
) -> None:
    """选择数据源 / choose the data source."""
    from wyckoff.config import config_lock, load_config, save_config, wyckoff_home

    if source not in SOURCES:
        raise UsageError(f"未知的数据源 '{source}'：可选 {', '.join(SOURCES)}。")
    home = wyckoff_home()
    with config_lock(home):
        config = load_config(home)
        if source == "tushare" and not (token or tushare_token(config)):
            raise UsageError(
                "tushare 需要 token：运行 `wyckoff data use tushare --token TOKEN`，或设置环境变量 TUSHARE_TOKEN。"
                "数据源没有改变。"
            )
        data = config.data.model_copy(
            update={"source": source, **({"tushare_token": token} if token else {})}
        )
        save_config(config.model_copy(update={"data": data}), home)
    note = "（演示数据是本地合成的行情，所有结果都会标注 demo）" if source == "demo" else ""
    print_notice(f"数据源：{source}{note}。")
    if source == "demo" and _build_demo(home):
        print_notice("演示行情库已生成（合成数据，不是真实行情）。")


@data_app.command("status")
def status(json_output: JsonOption = False) -> None:
    """数据覆盖情况 / what the market store holds."""
    from wyckoff.config import load_config, wyckoff_home
    from wyckoff.engine.market_store import MarketStore

    home = wyckoff_home()
    config = load_config(home)
    source = resolve_source(config)
    store = MarketStore.for_source(home, source)
    if source == "demo" and store.path.exists() and _build_demo(home):
        print_notice("演示行情库上次没有生成完整（生成时被中断），已重新生成。")
    info = {"chosen": chosen_source(config), **store.status()}
    if json_output:
        print_json(info)
        return
    rows = [
        [label, _status_value(info[key])] for key, label in STATUS_LABELS.items() if key in info
    ]
    print_table("行情数据", ["项目", "值"], rows)
    for caveat in info.get("caveats") or []:
        typer.echo(f"⚠ 数据缺口 — {caveat}")
    if source == "demo":
        typer.echo("⚠ 演示数据：本地合成的行情，不是真实市场数据。")


STATUS_LABELS = {
    "chosen": "设置的数据源",
    "source": "实际使用的数据源",
    "file": "数据文件",
    "exists": "文件已建立",
    "stocks": "股票数",
    "delisted_or_suspended": "其中退市或暂停上市",
    "stocks_with_bars": "有行情的股票数",
    "bars": "日线条数",
    "bar_sources": "日线来源",
    "indices": "指数个数",
    "first_date": "最早日期",
    "last_date": "最新日期",
    "size_mb": "文件大小（MB）",
}


def _status_value(value: Any) -> str:
    if isinstance(value, bool):
        return "是" if value else "否"
    if isinstance(value, dict):
        return "，".join(f"{key} {count} 条" for key, count in value.items()) or "—"
    return "—" if value is None else str(value)


def _sharpe(value: float | None) -> str:
    """No trades, no Sharpe ratio: "—" as every other unknown number, never "None"."""
    return num.UNKNOWN if value is None else str(value)


@data_app.command("sync")
def sync(
    days: Annotated[int, typer.Option("--days", min=1, max=3000, help="同步最近 N 个交易日")] = 400,
    codes: Annotated[str | None, typer.Option("--codes", help="只同步这些代码，逗号分隔")] = None,
) -> None:
    """增量同步行情（可断点续传）/ incremental, resumable sync."""
    from wyckoff.config import load_config, wyckoff_home
    from wyckoff.engine.sources.sync import sync as run_sync

    home = wyckoff_home()
    config = load_config(home)
    code_list = [c.strip() for c in codes.split(",")] if codes else None
    result = _with_progress(
        "同步", lambda progress: run_sync(home, config, days, code_list, progress)
    )
    print_notice(sync_sentence(result))


def sync_sentence(result: dict[str, Any]) -> str:
    """What a sync did, in a sentence (not the result's keys: `source=demo，note=…`)."""
    if "note" in result:
        return f"数据源 {result['source']}：{result['note']}"
    days = f"{result['dates']:,} 个交易日，" if "dates" in result else ""
    return f"同步完成（{result['source']}）：{days}写入 {result.get('rows', 0):,} 条日线。"


@data_app.command("import")
def import_file(
    file: Annotated[str, typer.Argument(help="CSV 或 Parquet 文件（格式见 docs/data.md）")],
    index: Annotated[bool, typer.Option("--index", help="文件是指数日线")] = False,
) -> None:
    """导入自己的日线 / load daily bars from a CSV or Parquet file."""
    from pathlib import Path

    from wyckoff.config import config_lock, load_config, save_config, wyckoff_home
    from wyckoff.engine.bar_import import import_bars
    from wyckoff.engine.listing_status import DELISTED_AFTER_DAYS
    from wyckoff.engine.market_store import MarketStore

    home = wyckoff_home()
    home.mkdir(parents=True, exist_ok=True)
    written = import_bars(MarketStore.for_source(home, "import"), Path(file).expanduser(), index)
    what = "指数日线" if index else "日线"
    print_notice(
        f"已导入 {what} {written.get('bars', written.get('index_bars'))} 条"
        f"（{written.get('stocks', written.get('indices'))} 个代码）到导入行情库。"
    )
    if written.get("delisted_from_bars"):
        print_notice(
            f"行情库中有 {written['delisted_from_bars']} 只股票的日线比最后一天早 "
            f"{DELISTED_AFTER_DAYS} 个交易日以上就停止，按在最后一根 K 线退市处理；"
            "文件中的 list_status / delist_date 列可更正（见 docs/data.md）。"
        )
    with config_lock(home):
        config = load_config(home)
        switched = config.data.source != "import"
        if switched:
            data = config.data.model_copy(update={"source": "import"})
            save_config(config.model_copy(update={"data": data}), home)
    if switched:
        print_notice("数据源已切换为 import（你导入的数据）；`wyckoff data use SOURCE` 可切回。")
