"""The event study's result as people read it: Chinese tables in the terminal and one
self-contained HTML page (no script, no outside file)."""

from __future__ import annotations

from html import escape
from typing import Any

import typer

from wyckoff.cli.output import print_table

COLUMNS = [
    "信号",
    "事件",
    "不可买入",
    "已完成",
    "日期数",
    "平均收益",
    "扣费后",
    "超额(全市场)",
    "超额(沪深300)",
    "胜率",
    "t 值",
]
SHARE_COLUMNS = ["信号", "单日最高占比", "超过上限的天数占比"]
METHOD = (
    "口径：信号日 t 收盘后发现，t+1 开盘价买入（停牌或开盘即涨停计为不可买入），t+h 收盘卖出"
    "（其间停牌或退市则按最后一个收盘价）；前复权收益。超额 = 收益 − 同期全市场等权（同样 t+1 开盘到 "
    "t+h 收盘）或沪深300（t 收盘到 t+h 收盘）；胜率 = 超额(全市场) > 0 的比例；t 值按日期聚类"
    "（先求每日平均，再对日期求均值与标准差），同一天的多个事件只算一次。扣费后 = 平均收益 − 双边佣金与印花税。"
)


def pct(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "—"
    return f"{value * 100:+.2f}%" if signed else f"{value * 100:.1f}%"


def signal_rows(signals: list[dict[str, Any]], h: int) -> list[list[Any]]:
    rows = []
    for record in signals:
        stats = record[str(h)]
        rows.append(
            [
                record["label"],
                f"{record['events']:,}",
                f"{record['unbuyable']:,}",
                f"{stats['complete']:,}",
                f"{stats['dates']:,}",
                pct(stats["mean_return"]),
                pct(stats["mean_return_after_cost"]),
                pct(stats["excess_vs_market"]),
                pct(stats["excess_vs_csi300"]),
                pct(stats["hit_rate"], signed=False),
                "—" if stats["t_stat"] is None else f"{stats['t_stat']:.2f}",
            ]
        )
    return rows


def share_rows(result: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            r["label"],
            pct(r["max_daily_share"], signed=False),
            pct(r["days_over_limit_share"], signed=False),
        ]
        for r in result["signals"]
    ]


def _period(result: dict[str, Any]) -> str:
    period = result["period"]
    return f"{period['start']} ~ {period['end']}（{result['signal_days']} 个信号日）"


def print_signals(result: dict[str, Any]) -> None:
    for h in result["horizons"]:
        print_table(
            f"持有 {h} 个交易日：{_period(result)}", COLUMNS, signal_rows(result["signals"], h)
        )
    limit = pct(result["max_daily_share"], signed=False)
    print_table(f"每日触发占当日交易股票的比例（上限 {limit}）", SHARE_COLUMNS, share_rows(result))
    cost = f"{result['signals'][0]['round_trip_cost'] * 100:.2f}%"
    typer.echo(METHOD + f"往返成本 {cost}。")
    cache = result["cache"]
    typer.echo(
        f"缓存：本次计算 {cache['days_computed']} 个信号日，复用 {cache['days_reused']} 个。"
    )


def print_groups(result: dict[str, Any]) -> None:
    if result.get("groups_note"):
        typer.echo(f"⚠ {result['groups_note']}")
        return
    for h in result["horizons"]:
        rows = [
            [group["group"], *row]
            for group in result["groups"]
            for row in signal_rows(group["signals"], h)
        ]
        print_table(f"持有 {h} 个交易日，按 {result['by']} 分组", ["分组", *COLUMNS], rows)


def render_html(result: dict[str, Any]) -> str:
    """The whole result as one Chinese HTML page."""
    parts = [
        f"<h1>信号事件研究</h1><p>{escape(_period(result))}；数据源 {escape(result['source'])}</p>"
    ]
    if result.get("data_note"):
        parts.append(f'<p class="demo">⚠ {escape(result["data_note"])}</p>')
    for caveat in result.get("data_caveats") or []:
        parts.append(f"<p>⚠ 数据缺口 — {escape(caveat)}</p>")
    for h in result["horizons"]:
        parts.append(_table(f"持有 {h} 个交易日", COLUMNS, signal_rows(result["signals"], h)))
    parts.append(_table("每日触发占当日交易股票的比例", SHARE_COLUMNS, share_rows(result)))
    for group in result.get("groups") or []:
        for h in result["horizons"]:
            title = f"分组 {group['group']}：持有 {h} 个交易日"
            parts.append(_table(title, COLUMNS, signal_rows(group["signals"], h)))
    if result.get("groups_note"):
        parts.append(f"<p>⚠ {escape(result['groups_note'])}</p>")
    parts.append(f"<p>{escape(METHOD)}</p>")
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}.demo{color:#b00;font-weight:bold}"
    )
    return (
        '<!doctype html><html lang="zh-CN"><head><meta charset="utf-8">'
        f"<title>信号事件研究</title><style>{style}</style></head><body>"
        + "".join(parts)
        + "</body></html>\n"
    )


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<h2>{escape(title)}</h2><table><tr>{head}</tr>{body}</table>"
