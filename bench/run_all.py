"""Run every benchmark in bench/ and write their figures to docs/bench.md, each beside the wall
time, the CPU time (user + sys) and the machine's load average of its run, with the floor of a
bare interpreter (`python -c pass`) on top. The page is written by this command, never by hand.
Run: python bench/run_all.py [--quick]  (--quick: fewer runs, and the benchmarks that build the
full demo market are listed as not run)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._machine import FLOOR_RUNS, Run, floor, run_child  # noqa: E402

PAGE = ROOT / "docs" / "bench.md"
STARTUP_NOTE = (
    "启动时间：`wyckoff --help` 直接输出缓存的帮助文本（与 Typer 生成的完全一致）；`model list` 等只读轻命令的"
    "常用写法不经 Typer（cli/light_commands.py）；其他命令只导入并构建要运行的那一个（cli/app.py 的命令表）。",
    "Typer 0.29 用 pydantic 转换每个命令行参数，所以经 Typer 分派的命令都要先付 `import typer` 与 `import pydantic`"
    " 的代价（数字见 `startup.py` 一节）；`ask` 还要导入模型 SDK。重量级库都只在需要它们的函数里导入。",
)


class Benchmark(NamedTuple):
    script: str
    goal: str  # what the figure should stay within, as the project set it
    args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] | None = ()  # None: too heavy for a quick run


BENCHMARKS = (
    Benchmark(
        "startup.py",
        "`--help` ≤ 60 ms；`model list` ≤ 150 ms；`ask` 比导入 SDK 多 ≤ 300 ms",
        quick_args=("--runs", "3"),
    ),
    Benchmark("runtime_overhead.py", "每轮 ≤ 2 ms（仅内存）", quick_args=("--rounds", "50")),
    Benchmark("compaction.py", "1,000 条消息规划 ≤ 50 ms；cl100k ≥ 5 MB/s"),
    Benchmark("memory.py", "召回 p95 ≤ 5 ms"),
    Benchmark("session_search.py", "10,000 条消息搜索 p95 ≤ 50 ms"),
    Benchmark("local_tools.py", "—"),
    Benchmark("subagents.py", "并行用时 ≈ 最长的一个，而非总和", quick_args=("--delay", "0.3")),
    Benchmark("tui.py", "首次绘制 ≤ 500 ms；流式文本无丢失"),
    Benchmark(
        "sweep.py",
        "信号复用带来约 15 倍；2 个工作进程 ≥ 单进程的 1.3 倍",
        quick_args=("--stocks", "200", "--days", "60"),
    ),
    Benchmark("funnel.py", "完整漏斗 ≤ 3 s；单只诊断 ≤ 10 ms", quick_args=None),
    Benchmark("backtest.py", "250 日回测 ≤ 60 s", quick_args=None),
    Benchmark("triggers.py", "一个触发信号在平常日子里命中 ≤ 5% 的股票", quick_args=None),
    Benchmark("event_study.py", "十年全市场（4,800 × 2,500）两核数分钟内", quick_args=None),
    Benchmark("demo_build.py", "峰值内存远低于 1 GB", quick_args=None),
    Benchmark(
        "web.py",
        "热服务器首页 ≤ 300 ms；个股数据 ≤ 200 ms；对话事件到页面 ≤ 50 ms",
        quick_args=("--stocks", "400", "--runs", "5"),
    ),
    Benchmark("warm_commands.py", "热启动 `analyze` ≤ 400 ms，`screen` ≤ 800 ms", quick_args=None),
    Benchmark("alerts.py", "200 条提醒规则覆盖全市场，热检查 < 2 s", quick_args=None),
)


class Measured(NamedTuple):
    wall_s: float
    cpu_s: float
    load: float
    output: str
    ok: bool


def measure(argv: list[str]) -> Measured:
    """One child process: wall time, the CPU time of it and everything it waited for."""
    load = os.getloadavg()[0]
    result, run = run_child(argv, cwd=ROOT, capture_output=True, text=True)
    output = result.stdout if result.returncode == 0 else result.stdout + result.stderr
    return Measured(run.wall_s, run.cpu_s, load, output.strip(), result.returncode == 0)


def run_benchmarks(quick: bool) -> list[tuple[Benchmark, tuple[str, ...] | None, Measured | None]]:
    rows = []
    for bench in BENCHMARKS:
        args = bench.quick_args if quick else bench.args
        shown = "(skipped)" if args is None else " ".join(args)
        print(f"{bench.script} {shown}", file=sys.stderr, flush=True)
        measured = (
            None if args is None else measure([sys.executable, f"bench/{bench.script}", *args])
        )
        rows.append((bench, args, measured))
    return rows


def page(quick: bool, floor_s: Run, rows, load_before, load_after) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    mode = "快速运行（`--quick`：次数更少，构建完整演示市场的基准未运行）" if quick else "完整运行"
    lines = [
        "# 基准数字",
        "",
        "本页由 `python bench/run_all.py"
        + (" --quick" if quick else "")
        + "` 生成，不要手工编辑；",
        "重新测量就再运行一次这条命令。每个基准也可以单独运行（`python bench/NAME.py`，参数见脚本开头）。",
        "",
        f"- 生成时间：{when}；{mode}",
        f"- 机器：{os.cpu_count()} 核，{platform.system()} {platform.machine()}，"
        f"Python {platform.python_version()}",
        f"- 机器负载（1/5/15 分钟平均）：开始时 {fmt_load(load_before)}，结束时 {fmt_load(load_after)}"
        "（这台机器由多人共用，负载高时所有数字都会变慢；同一命令多次运行也有约 ±30% 的波动）",
        f"- 裸解释器下限 `python -c pass`（{FLOOR_RUNS} 次中位数）：墙钟 {floor_s.wall_s * 1000:.0f} ms，"
        f"CPU {floor_s.cpu_s * 1000:.0f} ms",
        f"- PYTHONDONTWRITEBYTECODE：{bytecode_note()}",
        "",
        "墙钟时间与 CPU 时间（用户态 + 内核态，含子进程）是整个脚本的，包括它的准备工作"
        "（如构建临时演示行情库）；每个基准自己测的数字在它的输出里，与“目标”比较的是那些数字。",
        "",
        *STARTUP_NOTE,
        "",
        "| 基准 | 参数 | 墙钟 | CPU | 运行时负载 | 目标 |",
        "|---|---|---|---|---|---|",
    ]
    for bench, args, measured in rows:
        lines.append(table_row(bench, args, measured))
    for bench, _, measured in rows:
        if measured is not None:
            status = "" if measured.ok else "（失败）"
            lines += ["", f"## `{bench.script}`{status}", "", "```", measured.output, "```"]
    return "\n".join(lines) + "\n"


def table_row(bench: Benchmark, args: tuple[str, ...] | None, measured: Measured | None) -> str:
    name = f"`{bench.script}`"
    if measured is None:
        return f"| {name} | 快速运行中未运行 | — | — | — | {bench.goal} |"
    shown = f"`{' '.join(args)}`" if args else "默认"
    failed = "（失败）" if not measured.ok else ""
    return (
        f"| {name}{failed} | {shown} | {measured.wall_s:.1f} s | {measured.cpu_s:.1f} s "
        f"| {measured.load:.1f} | {bench.goal} |"
    )


def bytecode_note() -> str:
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return "未设置（.pyc 缓存照常写入，数字是热缓存的）"
    return "已设置：可编辑安装下改过的模块每次都重新编译，命令数字偏高（见 README 的安装说明）"


def fmt_load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.1f}" for value in load)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, skip the heavy ones")
    parser.add_argument("--out", type=Path, default=PAGE, help="where to write the page")
    args = parser.parse_args()
    load_before = os.getloadavg()
    floor_s = floor()
    rows = run_benchmarks(args.quick)
    args.out.write_text(page(args.quick, floor_s, rows, load_before, os.getloadavg()))
    print(f"wrote {args.out}", file=sys.stderr)
    if not all(measured.ok for _, _, measured in rows if measured is not None):
        raise SystemExit("some benchmarks failed: see their output in the page")


if __name__ == "__main__":
    main()
