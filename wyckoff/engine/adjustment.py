"""Corporate actions from the exchange's reference prior close (前收盘价).

On an ex-date the exchange sets the reference price from which the day's move and limits
count: pre_close = (close_prev - cash) / (1 + bonus). Every other day pre_close equals the
previous close. So the price factor chains without any source's own adjusted prices:

    adj_t = adj_{t-1} x close_{t-1} / pre_close_t        (1 on a stock's first stored bar)

and adjusted returns equal raw returns on every day that is not an ex-date. Volumes follow
share-count changes only (送股/转增/拆股), never cash: share_t = share_{t-1} x (1 + bonus_t).
A source that states the bonus ratio (the dividend data of tushare and akshare) stores it in
`bonus_ratio`; otherwise it is read from the price ratio q = close_prev / pre_close by
BONUS_RULE.
"""

from __future__ import annotations

# Sources whose price factor is derived here (tushare's own adj_factor is used as given).
DERIVED_SOURCES = ("akshare", "baostock", "import")

# When only pre_close is known, q = (1 + bonus) / (1 - cash yield) has two unknowns. A-share
# bonus issues come in tenths (10送1 = 0.1 and up) and a cash payment is far below 10% of the
# price, so q < 1.1 is read as cash only; above, the bonus is the largest tenth with
# 1 + bonus <= q (the rest is cash). pre_close is rounded to the cent: half a cent of slack.
# Bars stored without pre_close (older tushare syncs) read q from the source's own factor.
PRICE_MOVE = """CASE WHEN prev_close > 0 AND pre_close > 0.005 THEN prev_close / (pre_close - 0.005)
    WHEN prev_adj > 0 THEN adj_factor / prev_adj ELSE 1 END"""
BONUS_RULE = f"""CASE WHEN ({PRICE_MOVE}) >= 1.1
    THEN floor((({PRICE_MOVE}) - 1) * 10 + 1e-9) / 10 ELSE 0 END"""

PRICE_RATIO = """CASE WHEN prev_close > 0 AND pre_close > 0 THEN prev_close / pre_close
    ELSE 1 END"""

DERIVED_FACTORS = f"""
WITH ordered AS (
    SELECT code, date, pre_close, bonus_ratio, adj_factor,
        lag(close) OVER (PARTITION BY code ORDER BY date) AS prev_close,
        lag(adj_factor) OVER (PARTITION BY code ORDER BY date) AS prev_adj
    FROM bars WHERE code IN (SELECT code FROM touched)),
ratios AS (
    SELECT code, date, {PRICE_RATIO} AS price_ratio,
        1 + COALESCE(bonus_ratio, {BONUS_RULE}) AS share_ratio
    FROM ordered)
SELECT code, date,
    product(price_ratio) OVER w AS adj,
    product(share_ratio) OVER w AS shares
FROM ratios WINDOW w AS (PARTITION BY code ORDER BY date ROWS UNBOUNDED PRECEDING)"""


def refresh_factors(conn, codes: list[str], derive_price: bool) -> None:
    """Recompute the share factor (and, when `derive_price`, the price factor) of `codes`
    over their whole stored history, so that bars added later chain onto earlier ones."""
    import pandas as pd

    conn.register("touched", pd.DataFrame({"code": sorted(set(codes))}))
    price = "adj_factor = f.adj," if derive_price else ""
    conn.execute(
        f"UPDATE bars SET {price} share_factor = f.shares FROM ({DERIVED_FACTORS}) f"
        " WHERE bars.code = f.code AND bars.date = f.date"
    )
    conn.unregister("touched")


def factor_caveats(conn) -> list[str]:
    """How the stored factors were made and checked, one Chinese sentence each."""
    (derived, sources, ex_dates, missing, above) = conn.execute(
        f"""WITH ordered AS (
            SELECT source, pre_close,
                lag(close) OVER (PARTITION BY code ORDER BY date) AS prev_close
            FROM bars WHERE source IN ({", ".join("?" for _ in DERIVED_SOURCES)}))
        SELECT COUNT(*), string_agg(DISTINCT source, '、' ORDER BY source),
            COUNT(*) FILTER (WHERE abs(prev_close - pre_close) >= 0.005),
            COUNT(*) FILTER (WHERE pre_close IS NULL AND prev_close IS NOT NULL),
            COUNT(*) FILTER (WHERE pre_close - prev_close >= 0.005)
        FROM ordered""",
        list(DERIVED_SOURCES),
    ).fetchone()
    if not derived:
        return []
    caveats = [
        f"复权因子：{sources} 的复权因子由交易所前收盘价推导（只在除权除息日变化，其余日子复权涨跌"
        f"与不复权涨跌相同），共 {ex_dates} 个除权除息日；成交量只按送转股调整，现金分红不改变成交量。"
    ]
    if "akshare" in sources:
        caveats.append(
            "akshare：自带的后复权价不是干净的乘法序列（涨跌与不复权不符，甚至为负），已弃用；"
            "前收盘价由其分红送转数据按交易所除权公式重建。"
        )
    if missing:
        caveats.append(f"前收盘价：缺失 {missing} 条，这些日子按没有除权除息处理。")
    if above:
        caveats.append(
            f"前收盘价：{above} 条高于前一交易日收盘价（不是分红送转，可能是配股或数据错误），"
            "已按原样计入复权因子。"
        )
    return caveats
