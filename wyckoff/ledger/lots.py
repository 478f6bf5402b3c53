"""Order sizes the exchanges accept: 100-share lots on the main boards and ChiNext; on the
STAR market (688/689) at least 200 shares, then steps of 1. An odd remainder is sold only
all at once, so a sell that closes the position may be any size."""

from __future__ import annotations

from wyckoff.errors import UsageError


def is_star(code: str) -> bool:
    return code.startswith(("688", "689"))


def check_buy(code: str, shares: int) -> None:
    if is_star(code):
        if shares < 200:
            raise UsageError(
                f"科创板股票 {code} 每笔至少 200 股（之后按 1 股递增），收到 {shares}。"
            )
    elif shares <= 0 or shares % 100:
        raise UsageError(f"买入股数必须是 100 的正整数倍（A 股一手 100 股），收到 {shares}。")


def check_sell(code: str, shares: int, held: int) -> None:
    """`shares` may be sold out of `held`: all of it, or an order size the exchange accepts."""
    if shares <= 0:
        raise UsageError(f"卖出股数必须大于 0，收到 {shares}。")
    if shares > held:
        raise UsageError(f"卖出 {shares} 股超过持有的 {held} 股，不能卖空；请检查股数。")
    if shares == held:
        return
    if is_star(code) and shares < 200:
        raise UsageError(
            f"科创板股票 {code} 每笔至少卖 200 股，不足 200 股的余额须一次卖完（持有 {held} 股）。"
        )
    if not is_star(code) and shares % 100:
        raise UsageError(
            f"卖出股数须是 100 的整数倍，零股只能在清仓时一次卖出（持有 {held} 股，收到 {shares}）。"
        )
