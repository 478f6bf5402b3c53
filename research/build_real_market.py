"""Rebuild the real-market research files that `wyckoff data import` reads.

The research in docs/strategy.md runs on public daily bars of the whole A-share market,
delisted stocks included. They are too big for the repository (1.3 GB of CSV), so this
script rebuilds the two import files from the public snapshots named in docs/strategy.md:

    python research/build_real_market.py --stocks DIR --index FILE --out OUT \
        [--start 2011-01-01] [--end 2022-01-14]

- DIR: the per-stock CSV files (one file per code, e.g. sh600000.csv: a one-line note,
  then 股票代码,股票名称,交易日期,开盘价,最高价,最低价,收盘价,前收盘价,成交量,成交额,流通市值,总市值;
  unadjusted prices, the exchange's reference previous close, volume in shares, amount in
  CNY, the name as it was that day).
- FILE: the CSI 300's daily bars (,date,open,high,low,close,volume).
- OUT/stocks.csv and OUT/index.csv are written in the `data import` columns; import them with
  `wyckoff data import OUT/stocks.csv` and `wyckoff data import OUT/index.csv --index`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb

STOCK_SOURCE_COLUMNS = {
    "股票代码": "VARCHAR",
    "股票名称": "VARCHAR",
    "交易日期": "DATE",
    "开盘价": "DOUBLE",
    "最高价": "DOUBLE",
    "最低价": "DOUBLE",
    "收盘价": "DOUBLE",
    "前收盘价": "DOUBLE",
    "成交量": "DOUBLE",
    "成交额": "DOUBLE",
    "流通市值": "DOUBLE",
    "总市值": "DOUBLE",
}


def write_stocks(
    con: duckdb.DuckDBPyConnection, folder: Path, out: Path, start: str, end: str
) -> int:
    columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in STOCK_SOURCE_COLUMNS.items()) + "}"
    con.execute(
        f"""
        COPY (
            SELECT upper(substr(股票代码, 3)) || '.' || upper(substr(股票代码, 1, 2)) AS code,
                   交易日期 AS date, 开盘价 AS open, 最高价 AS high, 最低价 AS low, 收盘价 AS close,
                   前收盘价 AS pre_close, 成交量 AS volume, 成交额 AS amount,
                   replace(股票名称, ' ', '') AS name, 流通市值 AS float_mv, 总市值 AS total_mv
            FROM read_csv('{folder}/*.csv', skip=2, header=false, columns={columns})
            WHERE 交易日期 BETWEEN DATE '{start}' AND DATE '{end}' AND 成交量 > 0
            ORDER BY code, date
        ) TO '{out}' (HEADER, DELIMITER ',')
        """
    )
    return con.execute(f"SELECT count(*) FROM read_csv('{out}')").fetchone()[0]


def write_index(
    con: duckdb.DuckDBPyConnection, source: Path, out: Path, start: str, end: str
) -> int:
    con.execute(
        f"""
        COPY (
            SELECT '000300.SH' AS code, date, open, high, low, close, volume, 0.0 AS amount
            FROM read_csv('{source}', header=true)
            WHERE date BETWEEN DATE '{start}' AND DATE '{end}'
            ORDER BY date
        ) TO '{out}' (HEADER, DELIMITER ',')
        """
    )
    return con.execute(f"SELECT count(*) FROM read_csv('{out}')").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stocks", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--start", default="2011-01-01")
    parser.add_argument("--end", default="2022-01-14")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    stocks = write_stocks(con, args.stocks, args.out / "stocks.csv", args.start, args.end)
    index = write_index(con, args.index, args.out / "index.csv", args.start, args.end)
    print(f"stocks.csv: {stocks:,} rows; index.csv: {index:,} rows ({args.start} .. {args.end})")


if __name__ == "__main__":
    main()
