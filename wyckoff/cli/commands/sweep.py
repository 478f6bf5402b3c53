"""`wyckoff backtest sweep GRID.toml`, `wyckoff backtest sweeps` and `wyckoff backtest
cluster`: parameter sweeps and walk-forward tests of the backtest, shown as ranked Rich tables
and an optional heatmap, and where they run (the user's choice, saved in wyckoff.json)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wyckoff.cli.commands.market import JsonOption, _call, _context, _note, _params, backtest
from wyckoff.cli.output import print_json, print_notice, print_table
from wyckoff.engine.sweep_grid import MAX_COMBINATIONS, parse_grid, read_grid_file
from wyckoff.engine.sweep_store import list_sweeps
from wyckoff.engine.walk_forward import summary_sentence, swept_names
from wyckoff.errors import UsageError

if TYPE_CHECKING:
    from wyckoff.config import SweepConfig

CLUSTER_WARNING = (
    "Dask 集群会运行你交给它的代码，并把结果以 pickle 传回本机还原（等于让它在本机执行代码）："
    "只连接你自己的集群。"
)
WorkersOption = Annotated[
    int | None, typer.Option("--workers", help="本地工作进程数（最多为本机核数）")
]
ClusterOption = Annotated[
    str | None,
    typer.Option(
        "--cluster", help=f"在你自己的 Dask 集群上运行，如 tcp://HOST:8786。{CLUSTER_WARNING}"
    ),
]
METRIC_LABELS = {
    "trades": "交易数",
    "win_rate_pct": "胜率%",
    "avg_ret_pct": "平均%",
    "median_ret_pct": "中位%",
    "var95_pct": "VaR95%",
    "cvar95_pct": "CVaR95%",
    "max_consecutive_losses": "最长连亏",
    "sharpe_ratio": "夏普",
    "simple_return_pct": "简单收益%",
    "simple_max_drawdown_pct": "简单回撤%",
    "cash_return_pct": "复利收益%",
    "cash_max_drawdown_pct": "复利回撤%",
    "excess_csi300_pct": "超额(沪深300)%",
    "excess_market_pct": "超额(全市场)%",
}
TABLE_METRICS = (  # the rest are in --json and --csv
    "trades",
    "win_rate_pct",
    "avg_ret_pct",
    "sharpe_ratio",
    "simple_return_pct",
    "simple_max_drawdown_pct",
    "cash_return_pct",
    "cash_max_drawdown_pct",
    "excess_csi300_pct",
)
VIEWS_NOTE = "简单：每日持仓等权收益相加（不复利，含 0.5% 单边摩擦）；复利：10 万元现金账户，按手数、佣金和印花税计。"


def sweep(
    grid_file: Annotated[Path, typer.Argument(metavar="FILE", help="参数网格 TOML 文件")],
    start: Annotated[str | None, typer.Option("--start", help="YYYY-MM-DD")] = None,
    end: Annotated[str | None, typer.Option("--end", help="YYYY-MM-DD")] = None,
    workers: WorkersOption = None,
    cluster: ClusterOption = None,
    metric: Annotated[str, typer.Option("--metric", help="排序指标")] = "sharpe_ratio",
    walk_forward: Annotated[
        str | None, typer.Option("--walk-forward", help="TRAIN:TEST 交易日，如 120:60")
    ] = None,
    board: Annotated[str, typer.Option("--board")] = "all",
    top: Annotated[int, typer.Option("--top", help="表中列出前几名")] = 20,
    heatmap: Annotated[
        str | None, typer.Option("--heatmap", help="两个参数的热力图，如 hold_days,stop_loss_pct")
    ] = None,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="导出全部结果为 CSV")] = None,
    json_output: JsonOption = False,
) -> None:
    """参数扫描与滚动检验 / sweep a parameter grid (or walk forward) on a Dask cluster.

    默认在 `wyckoff backtest cluster` 保存的地方运行（未设置时为本机进程池）。"""
    from wyckoff.agents.sweep import SweepParams, run_backtest_sweep

    table = read_grid_file(grid_file)
    axes = _heatmap_axes(heatmap, parse_grid(table).describe())  # a bad grid stops here
    params = _params(
        SweepParams,
        grid=table,
        start=start,
        end=end,
        metric=metric,
        walk_forward=walk_forward,
        board=board,
        max_combinations=MAX_COMBINATIONS,
    )
    if walk_forward and axes:
        raise UsageError("--heatmap 只用于普通扫描，滚动检验（--walk-forward）不画热力图。")
    where = _where(workers, cluster)
    result = _call(
        lambda params, context: run_backtest_sweep(params, context, where),
        params,
        label="参数扫描",
    )
    if csv_path:
        _write_csv(csv_path, result)
    if json_output:
        print_json(result)
        return
    _note(result)
    typer.echo(
        f"区间 {result['period']['start']} ~ {result['period']['end']}：{result['combinations']} 个组合，"
        f"{result['engine_configs']} 套引擎配置（信号只算 {result['signal_computations']} 次），"
        f"{result['tasks']} 个任务；扫描编号 {result['sweep_id']}"
    )
    if "folds" in result:
        _print_folds(result)
    else:
        _print_ranking(result, top)
        if axes:
            _print_heatmap(result, *axes)
        _print_window_benchmarks(result)
    typer.echo(VIEWS_NOTE)
    typer.echo(f"超额 = 复利收益 − 同期基准收益；全市场基准为{result['benchmarks']['market']}。")
    if csv_path:
        typer.echo(f"全部结果已导出到 {csv_path}")


def _where(workers: int | None, cluster: str | None) -> SweepConfig:
    """Where this sweep runs: the flags (one of them), else the saved settings."""
    from wyckoff.config import SweepConfig, load_config

    if workers is not None and cluster is not None:
        raise UsageError("--workers 用于本机进程池，--cluster 用于已有集群：两者只能选一个。")
    if cluster is not None:
        return _params(SweepConfig, cluster=cluster)
    if workers is not None:
        return SweepConfig(workers=_local_workers(workers))
    return load_config(_context().home).sweep or SweepConfig()


def _local_workers(workers: int) -> int:
    from wyckoff.engine.sweep import local_cores

    cores = local_cores()
    if not 1 <= workers <= cores:
        raise UsageError(
            f"--workers 要在 1 到 {cores} 之间（本机 {cores} 个核心，多开进程只会互相争抢）。"
        )
    return workers


def cluster(
    address: Annotated[
        str | None, typer.Argument(help="tcp://HOST:PORT（你自己的 Dask 集群）或 local（本机）")
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="本机进程数（只用于 local，最多为本机核数）")
    ] = None,
) -> None:
    """查看或设置参数扫描在哪里运行 / show or set where sweeps run (yours to choose)."""
    from wyckoff.config import SweepConfig, load_config, save_config, wyckoff_home

    home = wyckoff_home()
    config = load_config(home)
    if address is None and workers is None:
        print_notice(_describe_where(config.sweep or SweepConfig()))
        return
    if address not in (None, "local") and workers is not None:
        raise UsageError("--workers 只用于本机进程池（local），已有集群的进程数由集群自己决定。")
    if address in (None, "local"):
        where = SweepConfig(workers=None if workers is None else _local_workers(workers))
    else:
        where = _params(SweepConfig, cluster=address)
    save_config(config.model_copy(update={"sweep": where}), home)
    print_notice(f"已保存：{_describe_where(where)}")
    if where.cluster:
        print_notice(CLUSTER_WARNING)


def _describe_where(where: SweepConfig) -> str:
    if where.cluster:
        return f"参数扫描在 Dask 集群 {where.cluster} 上运行（命令行与智能体都用这个设置）。"
    size = f"{where.workers} 个进程" if where.workers else "每个核心一个进程"
    return f"参数扫描在本机运行，{size}（命令行与智能体都用这个设置）。"


def sweeps(json_output: JsonOption = False) -> None:
    """列出以往的参数扫描 / list past sweeps."""
    rows = list_sweeps(_context().home)
    if json_output:
        print_json(rows)
        return
    if not rows:
        typer.echo("还没有参数扫描记录：用 wyckoff backtest sweep GRID.toml 运行一次。")
        return
    print_table(
        "以往的参数扫描",
        ["编号", "时间", "数据源", "区间", "指标", "滚动检验", "组合数", "最优参数"],
        [
            [
                r["id"],
                r["created_at"],
                "demo（演示数据）" if r["source"] == "demo" else r["source"],
                f"{r['start_date']} ~ {r['end_date']}",
                r["metric"],
                r["walk_forward"] or "",
                r["combinations"],
                _params_text(r["best_params"]),
            ]
            for r in rows
        ],
    )


def _params_text(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _swept(result: dict[str, Any]) -> list[str]:
    return swept_names(result["grid"])


def _print_ranking(result: dict[str, Any], top: int) -> None:
    names = _swept(result)
    shown = result["results"][:top]
    print_table(
        f"按 {METRIC_LABELS[result['metric']]} 排名（前 {len(shown)} / {len(result['results'])}）",
        ["#", *names, *(METRIC_LABELS[m] for m in TABLE_METRICS)],
        [
            [
                rank,
                *(row["params"][n] for n in names),
                *(metric_text(m, row["metrics"][m]) for m in TABLE_METRICS),
            ]
            for rank, row in enumerate(shown, 1)
        ],
    )


COUNT_METRICS = {"trades", "max_consecutive_losses"}


def metric_text(name: str, value: float | None) -> str:
    """A metric as the table shows it: counts whole, the rest with 2 decimals (the unit is in
    the column's name)."""
    if value is None:
        return "—"
    if name in COUNT_METRICS:
        return f"{value:,}"
    return f"{round(value, 2) + 0.0:,.2f}"


def _print_window_benchmarks(result: dict[str, Any]) -> None:
    """Every combination ran over the same window: one line for the market over it."""
    from wyckoff.agents.market_data import signed_pct

    first = result["results"][0]["metrics"]
    typer.echo(
        f"同期基准：沪深300 {signed_pct(first['csi300_return_pct'])}，"
        f"全市场 {signed_pct(first['market_return_pct'])}；"
        f"{sum(1 for r in result['results'] if (r['metrics']['excess_csi300_pct'] or 0) > 0)}"
        f" / {len(result['results'])} 个组合跑赢沪深300。"
    )


def _print_folds(result: dict[str, Any]) -> None:
    metric, label = result["metric"], METRIC_LABELS[result["metric"]]
    folds = result["folds"]
    print_table(
        f"滚动检验 {result['walk_forward']['train_days']}:{result['walk_forward']['test_days']}："
        f"训练窗口选 {label} 最优组合，下一测试窗口样本外检验",
        [
            "#",
            "训练",
            "测试",
            "所选参数",
            f"样本内{label}",
            f"样本外{label}",
            "样本内复利%",
            "样本外复利%",
            "样本外沪深300%",
            "样本外全市场%",
            "样本外超额%",
        ],
        [
            [
                number,
                f"{f['train']['start']}~{f['train']['end']}",
                f"{f['test']['start']}~{f['test']['end']}",
                _params_text({n: f["params"][n] for n in _swept(result)}),
                f["in_sample"][metric],
                f["out_of_sample"][metric],
                f["in_sample"]["cash_return_pct"],
                f["out_of_sample"]["cash_return_pct"],
                f["out_of_sample"]["csi300_return_pct"],
                f["out_of_sample"]["market_return_pct"],
                f["out_of_sample"]["excess_csi300_pct"],
            ]
            for number, f in enumerate(folds, 1)
        ],
    )
    for fold in folds:
        typer.echo(fold["sentence"])
    typer.echo(summary_sentence(result["summary"]))


def _heatmap_axes(spec: str | None, grid: dict[str, list[Any]]) -> tuple[str, str] | None:
    if not spec:
        return None
    names = [name.strip() for name in spec.split(",")]
    if len(names) != 2 or any(name not in grid for name in names) or names[0] == names[1]:
        raise UsageError(
            f"--heatmap 要写两个网格里的不同参数，用逗号分隔，如 hold_days,stop_loss_pct；"
            f"网格里有：{'、'.join(grid)}。"
        )
    return names[0], names[1]


def _print_heatmap(result: dict[str, Any], rows_param: str, cols_param: str) -> None:
    """Each cell: the best value of the metric among the combinations with that pair."""
    from rich.console import Console
    from rich.table import Table

    metric = result["metric"]
    best: dict[tuple, Any] = {}
    for row in result["results"]:  # ranked: the first seen for a pair is its best
        pair = (row["params"][rows_param], row["params"][cols_param])
        best.setdefault(pair, row["metrics"][metric])
    values = sorted(v for v in best.values() if v is not None)
    table = Table(
        title=f"热力图：{METRIC_LABELS[metric]}（行 {rows_param}，列 {cols_param}，取其余参数中的最优）",
        title_justify="left",
    )
    table.add_column(f"{rows_param} \\ {cols_param}")
    columns = result["grid"][cols_param]
    for value in columns:
        table.add_column(str(value), justify="right")
    for row_value in result["grid"][rows_param]:
        cells = [best.get((row_value, col)) for col in columns]
        table.add_row(str(row_value), *(_cell(v, values, metric) for v in cells))
    Console().print(table)


def _cell(value: Any, ordered: list[Any], metric: str) -> str:
    from wyckoff.engine.sweep import LOWER_IS_BETTER

    if value is None:
        return "—"
    share = ordered.index(value) / max(len(ordered) - 1, 1)
    if metric in LOWER_IS_BETTER:
        share = 1 - share
    colour = "red" if share < 1 / 3 else "yellow" if share < 2 / 3 else "green"
    return f"[{colour}]{value}[/{colour}]"


def _write_csv(path: Path, result: dict[str, Any]) -> None:
    rows = (
        [
            {
                "train": f"{f['train']['start']}~{f['train']['end']}",
                "test": f"{f['test']['start']}~{f['test']['end']}",
                **f["params"],
                **{f"in_{k}": v for k, v in f["in_sample"].items()},
                **{f"out_{k}": v for k, v in f["out_of_sample"].items()},
            }
            for f in result["folds"]
        ]
        if "folds" in result
        else [{**r["params"], **r["metrics"]} for r in result["results"]]
    )
    source = result.get("source")  # demo rows say so in every line
    rows = [{"source": "demo（演示数据）" if source == "demo" else source, **r} for r in rows]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


backtest_app = typer.Typer(
    help="漏斗策略回测、参数扫描与滚动检验 / backtest, parameter sweeps, walk-forward.",
    rich_markup_mode=None,
)
backtest_app.callback(invoke_without_command=True)(backtest)
backtest_app.command("sweep")(sweep)
backtest_app.command("sweeps")(sweeps)
backtest_app.command("cluster")(cluster)
