"""The run_backtest_sweep tool (background): a parameter grid or a walk-forward test of the
backtest, saved for `wyckoff backtest sweeps`. The model chooses what to sweep, never where:
the sweep runs where the user's settings say (a local cluster of worker processes, or the
user's own Dask cluster), because a cluster runs the code it is given and its answers are
unpickled in this process."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from wyckoff.agents.backtest import backtest_span
from wyckoff.cli.tools import ToolContext, ToolSpec
from wyckoff.config import SweepConfig
from wyckoff.engine.sweep_grid import MAX_COMBINATIONS, parse_grid
from wyckoff.engine.sweep_store import save_sweep
from wyckoff.engine.walk_forward import summary_sentence

TOOL_GRID_CAP = 64  # the agent's default; the user may raise it
RESULT_ROWS = 20  # ranked rows returned (all are saved)
STARTED = 0.05  # the progress shown while the cluster starts; the tasks share the rest


class SweepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")  # an unknown argument is refused, not dropped

    grid: dict[str, Any] = Field(
        description=(
            "参数网格：参数名 -> 取值列表、{start, stop, step} 区间（含 stop）或单个值。"
            "离场参数 hold_days / top_n / stop_loss_pct / take_profit_pct / trailing，"
            "以及任何 EngineConfig 阈值（如 rs10_min）；每个参数的取值有范围"
            "（如 hold_days 1–250、top_n 1–100），超出范围的网格被拒绝"
        )
    )
    start: str | None = Field(default=None, description="开始日期 YYYY-MM-DD")
    end: str | None = Field(default=None, description="结束日期 YYYY-MM-DD；省略为最新")
    metric: str = Field(default="sharpe_ratio", description="排序与挑选最优组合的指标")
    walk_forward: str | None = Field(
        default=None, description="滚动检验 TRAIN:TEST（交易日），如 120:60"
    )
    board: Literal["all", "main", "chinext", "star"] = "all"
    max_combinations: int = Field(
        default=TOOL_GRID_CAP,
        ge=1,
        le=MAX_COMBINATIONS,
        description="组合数上限；超出时先请用户确认，用户要求时才调高",
    )

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        from wyckoff.engine.sweep import METRICS

        if value not in METRICS:
            raise ValueError(f"排序指标 {value} 不存在，可选：{'、'.join(METRICS)}")
        return value

    @field_validator("walk_forward")
    @classmethod
    def _train_test(cls, value: str | None) -> str | None:
        if value is None:
            return value
        train, _, test = value.partition(":")
        if not (train.isdigit() and test.isdigit() and int(train) >= 20 and int(test) >= 5):
            raise ValueError("walk_forward 要写成 训练天数:测试天数，如 120:60（训练至少 20 天）")
        return value


def run_backtest_sweep(
    params: SweepParams, context: ToolContext, where: SweepConfig
) -> dict[str, Any]:
    """The sweep of `params`, run where the user's `where` says."""
    from wyckoff.engine.sweep import dask_client, local_workers, run_sweep

    grid = parse_grid(params.grid, params.max_combinations)
    market, panel, start_t, end_t = backtest_span(context, params.start, params.end)
    walk = tuple(int(n) for n in params.walk_forward.split(":")) if params.walk_forward else None
    context.progress(
        "启动集群", where.cluster or f"本地 {local_workers(where.workers)} 个进程", STARTED
    )
    with dask_client(where.workers, where.cluster) as client:
        result = run_sweep(
            panel,
            grid,
            start_t,
            end_t,
            client=client,
            metric=params.metric,
            board=params.board,
            walk_forward=walk,
            progress=lambda stage, done, total, share: context.progress(
                stage, f"{done}/{total}", STARTED + (1 - STARTED) * share
            ),
            cancelled=context.cancelled,
        )
    result = market.envelope(str(panel.dates[end_t]), data_caveats=panel.caveats, **result)
    result["sweep_id"] = save_sweep(context.home, result)
    return result


def summarize_sweep(result: dict[str, Any]) -> str:
    if "folds" in result:
        return f"滚动检验 {len(result['folds'])} 段。" + summary_sentence(result["summary"])
    best = result["results"][0]["metrics"]
    return (
        f"{result['combinations']} 个组合，按 {result['metric']} 最优："
        f"{result['results'][0]['params']}，复利收益 {best['cash_return_pct']}%，"
        f"同期沪深300 {best['csi300_return_pct']}%，超额 {best['excess_csi300_pct']} 个百分点"
    )


def for_agent(result: dict[str, Any]) -> dict[str, Any]:
    """The tool's answer: the top rows only (the full table is saved)."""
    if "results" in result and len(result["results"]) > RESULT_ROWS:
        result = {**result, "results": result["results"][:RESULT_ROWS]}
        result["results_note"] = f"只列出前 {RESULT_ROWS} 名；完整结果已保存"
    return result


def backtest_sweep_tool(params: SweepParams, context: ToolContext) -> dict[str, Any]:
    where = context.read_config().sweep or SweepConfig()
    return for_agent(run_backtest_sweep(params, context, where))


SWEEP_TOOL = ToolSpec(
    name="run_backtest_sweep",
    description="回测参数扫描或滚动（walk-forward）检验（后台任务）：离场参数和引擎阈值的网格，"
    "信号按引擎配置只算一次，在多个进程上并行运行（在哪里运行由用户设置）。",
    params=SweepParams,
    func=backtest_sweep_tool,
    title="参数扫描",
    background=True,
    summarize=summarize_sweep,
    timeout_s=3600,
)
