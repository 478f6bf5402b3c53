"""A brief as Markdown (pushes, the terminal), JSON (scripts) or one self-contained HTML page
(the phone): no script, no external URL, the K-line pictures drawn inline as SVG."""

from __future__ import annotations

from html import escape
from typing import Any

from wyckoff.agents.signal_record import record_lines
from wyckoff.cli.numbers import pct
from wyckoff.ledger.money import yuan
from wyckoff.routine.tail_digest import tail_line

CHARTED_HOLDINGS = 10  # K-line pictures for the first holdings only: the page stays ≤ 200 KB
ALERTS_SHOWN = 30  # the rest are one `alert history` away; the JSON brief keeps them all
EXIT_LABELS = {
    "hold": "持有",
    "watch": "观察",
    "exit": "离场",
    "skipped": "不判断",
    "unknown": "未知",
}
STOP_KINDS = {"accumulation": "吸筹止损", "trailing": "移动止损", "own": "持仓止损"}


def render(brief: dict[str, Any], fmt: str) -> str:
    from wyckoff.cli.output import json_text

    if fmt == "json":
        return json_text(brief, indent=2) + "\n"
    return to_html(brief) if fmt == "html" else to_markdown(brief)


def title(brief: dict[str, Any]) -> str:
    return f"威科夫收盘简报 {brief['date']}"


def regime_line(brief: dict[str, Any]) -> str:
    regime = brief["regime"]
    allowed = "允许开新仓" if regime["buy_allowed"] else "禁止开新仓，只管理持仓"
    return f"市场状态：{regime['label']} — {regime['reason']}（{allowed}）"


def holding_line(h: dict[str, Any]) -> str:
    if h["health"] == "unknown":
        return f"{h['code']} {h['name']}：{h['reasons'][0]}"
    stop = "—" if h["stop_level"] is None else f"{h['stop_level']:.2f}"
    distance = "" if h["stop_distance_pct"] is None else f"，距止损 {h['stop_distance_pct']:+.2f}%"
    exit_status = h["exit_status"]
    return (
        f"收盘 {h['close']:.2f} · 盈亏 {h['pnl_pct']:+.2f}% · "
        f"止损 {stop}（{STOP_KINDS.get(h['stop_kind'], '数据不足')}）{distance} · "
        f"{EXIT_LABELS.get(exit_status['status'], exit_status['status'])}：{exit_status['detail']}"
    )


def candidate_line(c: dict[str, Any]) -> str:
    return (
        f"{c['code']} {c['name']}（{c['industry']}）收盘 {c['close']:.2f}，"
        f"信号 {'、'.join(c['triggers'])}，评分 {c['score']:.1f}"
    )


def alert_line(a: dict[str, Any]) -> str:
    return f"{a['code']} {a['name']}：{a['message']}"


def account_lines(account: dict[str, Any]) -> list[str]:
    """The account in a few sentences: NAV and its change, P&L, the return beside the CSI 300."""
    lines = []
    if account.get("nav_cents") is not None:
        change = account["nav_change_cents"]
        moved = (
            ""
            if change is None
            else f"（较前一交易日 {_signed(change)}，{pct(account['nav_change_pct'], signed=True)}）"
        )
        lines.append(f"净值 {account['date']}：{yuan(account['nav_cents'])}{moved}")
    lines.append(
        f"已实现盈亏 {_signed(account['realized_cents'])}，"
        f"浮动盈亏 {_signed(account['unrealized_cents'])}"
    )
    if account.get("return_pct") is not None:
        index = account["csi300_pct"]
        beside = "" if index is None else f"，同期沪深300 {pct(index, signed=True)}"
        lines.append(f"自第一笔成交以来 {pct(account['return_pct'], signed=True)}{beside}")
    if account["unpriced"]:
        lines.append(f"没有收盘价、未计入：{'、'.join(account['unpriced'])}")
    if account["note"]:
        lines.append(account["note"])
    return lines


def paper_line(paper: dict[str, Any]) -> str:
    """The paper account's NAV and its return since it started, beside the real account's and
    the CSI 300's over the same days."""
    beside = [
        f"{name} {pct(value, signed=True)}"
        for name, value in (
            ("真实账户", paper["real_return_pct"]),
            ("沪深300", paper["csi300_pct"]),
        )
        if value is not None
    ]
    same_days = f"；同期{'，'.join(beside)}" if beside else ""
    return (
        f"纸面账户（默认策略，起始 {yuan(paper['capital_cents'])}）{paper['date']} 净值 "
        f"{yuan(paper['nav_cents'])}，自 {paper['since']} 以来 {pct(paper['return_pct'], signed=True)}"
        f"{same_days}"
    )


def scorecard_title(card: dict[str, Any]) -> str:
    return "计分卡（演示行情，合成数据）" if card["demo"] else "计分卡"


def scorecard_lines(card: dict[str, Any]) -> list[str]:
    """Each kind's record, then the results that came in today."""
    arrived = [f"今日出结果：{line}" for line in card["arrived"]]
    return card["lines"] + arrived or ["还没有记录的建议。"]


def _signed(cents: int) -> str:
    return ("+" if cents > 0 else "") + yuan(cents)


def alert_lines(brief: dict[str, Any]) -> list[str]:
    """The first ALERTS_SHOWN alerts (the most important first) and how many more there are."""
    alerts = brief["alerts"]
    lines = [alert_line(a) for a in alerts[:ALERTS_SHOWN]]
    if len(alerts) > ALERTS_SHOWN:
        more = len(alerts) - ALERTS_SHOWN
        lines.append(f"……另有 {more} 条，见 `wyckoff alert history --date {brief['date']}`")
    return lines


def to_markdown(brief: dict[str, Any]) -> str:
    lines = [f"# {title(brief)}", ""]
    if brief.get("data_note"):
        lines += [f"> ⚠ {brief['data_note']}", ""]
    lines += ["## 市场", regime_line(brief), ""]
    lines.append(f"## 持仓（{len(brief['holdings'])} 只）")
    for h in brief["holdings"]:
        lines += [
            f"### {h.get('health_label', '⚪ 未知')} {h['code']} {h['name']}",
            holding_line(h),
        ]
        lines += [f"- {reason}" for reason in h["reasons"] if h["health"] != "unknown"]
    if not brief["holdings"]:
        lines.append("持仓为空。")
    lines += ["", f"现金 {brief['cash']:,.2f}，总资产 {brief['equity']:,.2f}", ""]
    if brief.get("account"):
        lines += ["## 账户", *[f"- {line}" for line in account_lines(brief["account"])], ""]
    if brief.get("paper"):
        lines += ["## 纸面账户", f"- {paper_line(brief['paper'])}", ""]
    lines.append("## 候选（触发信号）")
    lines += [f"- {candidate_line(c)}" for c in brief["candidates"]] or ["今天没有触发信号的候选。"]
    if brief.get("signal_records"):
        lines += ["", "## 信号的历史记录（本地行情库）"]
        lines += [f"- {line}" for line in record_lines(brief["signal_records"])]
    lines += ["", "## 提醒"]
    lines += [f"- {line}" for line in alert_lines(brief)] or ["今天没有触发的提醒。"]
    if brief.get("tail_checks"):
        lines += ["", "## 尾盘检查", *[f"- {tail_line(t)}" for t in brief["tail_checks"]]]
    if brief.get("scorecard"):
        lines += ["", f"## {scorecard_title(brief['scorecard'])}"]
        lines += [f"- {line}" for line in scorecard_lines(brief["scorecard"])]
    if brief["data_caveats"]:
        lines += ["", "## 数据缺口", *[f"- {c}" for c in brief["data_caveats"]]]
    if brief.get("ai_commentary"):
        lines += [
            "",
            "## AI 点评（模型生成，仅供参考，不是上面的计算结果）",
            brief["ai_commentary"],
        ]
    return "\n".join(lines) + "\n"


# --- HTML ---------------------------------------------------------------------------------------

STYLE = """
body{font-family:-apple-system,"PingFang SC","Noto Sans CJK SC",sans-serif;margin:0 auto;
max-width:640px;padding:12px;line-height:1.5;color:#222;background:#fff}
h1{font-size:1.3em}h2{font-size:1.1em;border-bottom:1px solid #ddd;padding-bottom:2px}
h3{font-size:1em;margin:.8em 0 .2em}.demo{background:#fff3cd;border:1px solid #e0b000;
padding:8px;font-weight:bold}.card{border:1px solid #eee;border-radius:6px;padding:8px;
margin:8px 0}.ai{background:#f3f6fb;border-left:4px solid #6b8fd6;padding:8px}
svg{display:block;width:100%;height:auto;max-width:320px}ul{padding-left:1.2em;margin:.3em 0}
small{color:#666}
"""


def to_html(brief: dict[str, Any]) -> str:
    parts = [
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title(brief))}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title(brief))}</h1>",
    ]
    if brief.get("data_note"):
        parts.append(f'<p class="demo">⚠ {escape(brief["data_note"])}</p>')
    parts += ["<h2>市场</h2>", f"<p>{escape(regime_line(brief))}</p>"]
    parts.append(f"<h2>持仓（{len(brief['holdings'])} 只）</h2>")
    parts += [
        _holding_card(h, chart=i < CHARTED_HOLDINGS) for i, h in enumerate(brief["holdings"])
    ] or ["<p>持仓为空。</p>"]
    parts.append(f"<p>现金 {brief['cash']:,.2f}，总资产 {brief['equity']:,.2f}</p>")
    if brief.get("account"):
        account = brief["account"]
        parts += ["<h2>账户</h2>", _list(account_lines(account)), nav_svg(account["curve"])]
    if brief.get("paper"):
        parts += ["<h2>纸面账户</h2>", _list([paper_line(brief["paper"])])]
    parts.append("<h2>候选（触发信号）</h2>")
    parts += [
        f'<div class="card">{escape(candidate_line(c))}{kline_svg(c["chart"])}</div>'
        for c in brief["candidates"]
    ] or ["<p>今天没有触发信号的候选。</p>"]
    if brief.get("signal_records"):
        parts += [
            "<h3>信号的历史记录（本地行情库）</h3>",
            _list(record_lines(brief["signal_records"])),
        ]
    parts.append("<h2>提醒</h2>")
    parts.append(_list(alert_lines(brief)) or "<p>今天没有触发的提醒。</p>")
    if brief.get("tail_checks"):
        parts += ["<h2>尾盘检查</h2>", _list([tail_line(t) for t in brief["tail_checks"]])]
    if brief.get("scorecard"):
        card = brief["scorecard"]
        parts += [f"<h2>{escape(scorecard_title(card))}</h2>", _list(scorecard_lines(card))]
    if brief["data_caveats"]:
        parts += ["<h2>数据缺口</h2>", _list(brief["data_caveats"])]
    if brief.get("ai_commentary"):
        parts += [
            '<h2>AI 点评</h2><div class="ai"><small>模型生成，仅供参考，不是上面的计算结果。</small>',
            f"<p>{escape(brief['ai_commentary']).replace(chr(10), '<br>')}</p></div>",
        ]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _holding_card(h: dict[str, Any], chart: bool) -> str:
    heading = f"{h.get('health_label', '⚪ 未知')} {h['code']} {h['name']}"
    reasons = _list(h["reasons"]) if h["health"] != "unknown" else ""
    return (
        f'<div class="card"><h3>{escape(heading)}</h3><p>{escape(holding_line(h))}</p>'
        f"{reasons}{kline_svg(h['chart']) if chart else ''}</div>"
    )


def _list(items: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>" if items else ""


def kline_svg(bars: list[list[float]], width: int = 320, height: int = 90) -> str:
    """Candles of [open, high, low, close] bars: red up, green down (the A-share colours)."""
    if not bars:
        return ""
    low = min(b[2] for b in bars)
    span = (max(b[1] for b in bars) - low) or 1.0
    step = width / len(bars)

    def y(price: float) -> float:
        return round(height - 2 - (price - low) / span * (height - 4), 1)

    def n(value: float) -> str:  # short coordinates: the page is read on a phone
        return f"{value:.1f}".rstrip("0").rstrip(".")

    shapes = []
    for i, (open_, high, low_, close) in enumerate(bars):
        x = round(i * step + step / 2, 1)
        colour = "#d62728" if close >= open_ else "#2ca02c"
        top, bottom = y(max(open_, close)), y(min(open_, close))
        shapes.append(
            f'<path d="M{n(x)} {n(y(high))}V{n(y(low_))}" stroke="{colour}"/>'
            f'<rect x="{n(x - step * 0.35)}" y="{n(top)}" width="{n(step * 0.7)}" '
            f'height="{n(max(bottom - top, 0.8))}" fill="{colour}"/>'
        )
    return (
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="近 {len(bars)} 日 K 线">'
        + "".join(shapes)
        + "</svg>"
    )


def nav_svg(curve: list[list[Any]], width: int = 320, height: int = 90) -> str:
    """The account's return (blue) and the CSI 300's (grey) since the first fill, as lines
    over [date, return %, CSI 300 %] rows; a missing value leaves its point out."""
    values = [v for row in curve for v in row[1:] if v is not None]
    if len(curve) < 2 or not values:
        return ""
    low = min(values)
    span = (max(values) - low) or 1.0
    step = (width - 4) / (len(curve) - 1)

    def line(column: int, colour: str) -> str:
        points = " ".join(
            f"{i * step + 2:.1f},{height - 12 - (row[column] - low) / span * (height - 16):.1f}"
            for i, row in enumerate(curve)
            if row[column] is not None
        )
        return f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>'

    return (
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="账户净值与沪深300">'
        f"{line(2, '#999')}{line(1, '#1f5fbf')}"
        f'<text x="2" y="{height - 1}" font-size="9" fill="#1f5fbf">账户</text>'
        f'<text x="30" y="{height - 1}" font-size="9" fill="#999">沪深300</text></svg>'
    )
