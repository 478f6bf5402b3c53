"""Broker exports read into holdings (持仓) or deliveries (交割单): the text files 同花顺,
东方财富 and 通达信 write (CSV, TXT, and ".xls" that is really tab-separated text), in UTF-8
or GBK, with title lines above the header, `="000001"` cells that keep leading zeros, and
the header names each broker uses. Nothing here touches the portfolio."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from wyckoff.errors import UsageError, describe_os_error
from wyckoff.ledger.money import (
    MAX_PRICE,
    amount_cents,
    check_cents,
    check_shares,
    decimal_of,
    half_up,
    price_mills,
    trade_value_cents,
)

Broker = Literal["ths", "eastmoney", "tdx", "auto"]
BROKER_NAMES = {"ths": "同花顺", "eastmoney": "东方财富", "tdx": "通达信"}

# column -> the header names brokers give it
ALIASES: dict[str, tuple[str, ...]] = {
    "code": ("证券代码", "股票代码", "代码"),
    "name": ("证券名称", "股票名称", "名称"),
    "shares": ("股票余额", "持仓数量", "证券数量", "当前持仓", "实际数量", "持股数量", "库存数量"),
    "cost": ("参考成本价", "成本价", "摊薄成本价", "持仓成本价", "买入成本", "成本价格"),
    "date": ("成交日期", "发生日期", "交收日期", "日期"),
    "time": ("成交时间", "时间"),
    "side": ("操作", "买卖标志", "委托方向", "业务名称", "买卖方向", "摘要"),
    "quantity": ("成交数量", "成交股数"),
    "price": ("成交价格", "成交均价", "成交价"),
    "value": ("成交金额",),
    "commission": ("佣金", "手续费", "净佣金"),
    "stamp": ("印花税",),
    "transfer": ("过户费",),
    "net": ("发生金额", "清算金额", "收付金额"),
    "trade_id": ("成交编号",),  # the broker's number of one fill
    "order_id": ("合同编号", "委托编号"),  # of the order: one order may fill several times
}
HOLDINGS = ("code", "shares", "cost")
DELIVERIES = ("date", "code", "side", "quantity", "price")
# Header names only one broker's exports use, for --broker auto (the shared ones say nothing).
MARKS = {
    "ths": ("股票余额", "参考成本价", "操作"),
    "eastmoney": ("持仓数量", "委托方向", "可用数量"),
    "tdx": ("证券数量", "买卖标志", "可卖数量"),
}
BIFF = b"\xd0\xcf\x11\xe0"  # a real Excel 97-2003 file (an OLE2 container)
MAX_BYTES = 20 * 2**20  # 20 MB: some 100,000 fills, far more than years of any account


@dataclass(frozen=True)
class Holding:
    code: str
    name: str
    shares: int
    cost_cents: int  # shares x the reference cost price, to the cent


@dataclass(frozen=True)
class Delivery:
    line: int
    date: str
    time: str | None
    code: str
    name: str
    side: Literal["buy", "sell"]
    shares: int
    price_mills: int
    value_cents: int | None  # the broker's figures when the file has them
    commission_cents: int | None
    stamp_cents: int | None
    transfer_cents: int | None
    trade_id: str | None = None  # 成交编号
    order_id: str | None = None  # 合同编号
    occurrence: int = 1  # the n-th row of the file with this identity
    same_as: int | None = None  # the line of the first such row, for a repeated one

    @property
    def identity(self) -> str:
        """What makes this fill this fill: the broker's 成交编号 on its day, else every field
        of the row (with the 合同编号 when the file has one)."""
        if self.trade_id:
            return f"成交编号 {self.date} {self.code} {self.trade_id}"
        amount = self.value_cents
        if amount is None:
            amount = trade_value_cents(self.shares, self.price_mills)
        fields = (
            f"{self.date} {self.time or '-'} {self.code} {self.side}"
            f" {self.shares} {self.price_mills} {amount}"
        )
        return f"{fields} 合同编号 {self.order_id}" if self.order_id else fields

    @property
    def key(self) -> str:
        """The fill's import key: its identity and which occurrence of it in the file, so
        a second import of the same rows finds them booked."""
        return f"{self.identity} #{self.occurrence}"


@dataclass
class Export:
    kind: Literal["holdings", "deliveries"]
    broker: str
    holdings: list[Holding] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # rows that are not trades, said why


def read_export(path: Path, broker: Broker = "auto") -> Export:
    """The holdings or deliveries in a broker's export file; UsageError naming the file,
    the line and what to do when it cannot be read."""
    lines = _text(path).splitlines()
    at, header = _header(lines, path)
    kind: Literal["holdings", "deliveries"] = (
        "deliveries" if all(c in header for c in DELIVERIES) else "holdings"
    )
    found = _broker(lines[at], broker)
    export = Export(kind, found)
    for number, cells in _rows(lines, at, _delimiter(lines[at])):
        row = {column: cells[i] if i < len(cells) else "" for column, i in header.items()}
        if not row["code"] or not re.search(r"\d", row["code"]):
            continue  # a total line or a blank one
        try:
            if kind == "holdings":
                _add_holding(export, number, row)
            else:
                _add_delivery(export, number, row)
        except UsageError as exc:
            raise UsageError(f"{path.name} 第 {number} 行：{exc.message}") from None
    export.deliveries = _numbered(export.deliveries)
    return export


def _numbered(deliveries: list[Delivery]) -> list[Delivery]:
    """Each row with its occurrence among rows of the same identity (and the first's line)."""
    count: Counter[str] = Counter()
    first_line: dict[str, int] = {}
    numbered = []
    for row in deliveries:
        identity = row.identity
        count[identity] += 1
        first = first_line.setdefault(identity, row.line)
        repeated = count[identity] > 1
        numbered.append(
            replace(row, occurrence=count[identity], same_as=first if repeated else None)
        )
    return numbered


def _text(path: Path) -> str:
    raw = _read_regular(path)
    if raw.startswith(BIFF) or raw.startswith(b"PK\x03\x04"):
        raise UsageError(
            f"{path.name} 是 Excel 二进制表格，读不了：请在券商软件里导出为 TXT/CSV，"
            "或在 Excel 里另存为 CSV 后再导入。"
        )
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", errors="replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("gb18030", errors="replace")  # GBK and its superset


def _read_regular(path: Path) -> bytes:
    """The bytes of `path`, a regular file of at most MAX_BYTES. Opened without blocking and
    checked after opening, so a FIFO, a device (/dev/zero) or a folder is never read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise UsageError(f"找不到文件 {path}：请检查路径和文件名。") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a Unix socket
            _check_regular(path, os.stat(path))
        raise UsageError(describe_os_error(exc, "读取文件", path)) from None
    try:
        _check_regular(path, os.fstat(fd))
        raw = _read_at_most(fd, MAX_BYTES + 1)  # the file may have grown since fstat
    except OSError as exc:
        raise UsageError(describe_os_error(exc, "读取文件", path)) from None
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:
        _too_big(path)
    return raw


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(limit - size, 2**20))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _check_regular(path: Path, status: os.stat_result) -> None:
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise UsageError(f"{path} 是一个文件夹：请给出券商导出的持仓或交割单文件。")
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise UsageError(
            f"{path} 是管道或套接字，不是文件：请先把券商导出保存为文件，再导入这个文件。"
        )
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise UsageError(f"{path} 是设备，不是文件：请给出券商导出的持仓或交割单文件。")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{path} 不是普通文件：请给出券商导出的持仓或交割单文件。")
    if status.st_size > MAX_BYTES:
        _too_big(path)


def _too_big(path: Path) -> None:
    raise UsageError(
        f"{path} 大于券商导出文件的上限 {MAX_BYTES // 2**20} MB："
        "请确认选对了文件，或按时间段分开导出再逐个导入。"
    )


def _header(lines: list[str], path: Path) -> tuple[int, dict[str, int]]:
    """The first line that names a code column and a quantity, and where each column is."""
    for at, line in enumerate(lines[:30]):
        names = [_cell(c) for c in _split(line, _delimiter(line))]
        header = {}
        for column, aliases in ALIASES.items():
            index = next((i for alias in aliases for i, n in enumerate(names) if n == alias), None)
            if index is not None:
                header[column] = index
        if all(c in header for c in HOLDINGS) or all(c in header for c in DELIVERIES):
            return at, header
    raise UsageError(
        f"{path.name} 里找不到持仓或交割单的表头（需要 证券代码 和 股票余额/参考成本价，"
        "或 成交日期/操作/成交数量/成交价格）：请确认是券商导出的持仓或交割单。"
    )


def _broker(header_line: str, asked: Broker) -> str:
    if asked != "auto":
        return asked
    scores = {name: sum(mark in header_line for mark in marks) for name, marks in MARKS.items()}
    best = max(scores, key=lambda name: scores[name])
    return best if scores[best] else "auto"


def _delimiter(line: str) -> str | None:
    """Tab, comma, or (None) runs of spaces as 通达信 aligns its columns."""
    return "\t" if "\t" in line else "," if "," in line else None


def _rows(lines: list[str], at: int, delimiter: str | None) -> Iterator[tuple[int, list[str]]]:
    for offset, line in enumerate(lines[at + 1 :], start=at + 2):
        if line.strip():
            yield offset, [_cell(c) for c in _split(line, delimiter)]


def _split(line: str, delimiter: str | None) -> list[str]:
    if delimiter == ",":
        import csv

        return next(csv.reader([line]))
    return line.strip().split(delimiter) if delimiter else line.split()


def _cell(text: str) -> str:
    """A cell's text: `="000001"` (a formula that keeps the zeros in Excel) and quotes off."""
    text = text.strip()
    if text.startswith('="') and text.endswith('"'):
        text = text[2:-1]
    return text.strip().strip('"').strip()


def _code(text: str) -> str:
    digits = re.sub(r"^(SH|SZ|BJ)|\.(SH|SZ|BJ)$", "", text.upper())
    if not digits.isdigit() or len(digits) > 6:
        raise UsageError(f"证券代码 {text} 不是 6 位数字。")
    return digits.zfill(6)  # a spreadsheet may have dropped the leading zeros


def _add_holding(export: Export, number: int, row: dict[str, str]) -> None:
    code = _code(row["code"])
    shares = decimal_of(row["shares"], "股票余额")
    check_shares(int(shares), "股票余额")
    if not shares:  # a position sold out today stays listed with 0 until settlement
        export.skipped.append(f"第 {number} 行 {code}：股票余额 0（已清仓），按不持有处理")
        return
    if shares < 0 or shares != shares.to_integral_value():
        raise UsageError(f"股票余额 {row['shares']} 不是正整数股。")
    cost = decimal_of(row["cost"], "成本价")  # negative once profits taken exceed the cost
    if abs(cost) > MAX_PRICE:
        raise UsageError(f"成本价 {row['cost']} 大得不合实际，请检查。")
    cents = check_cents(half_up(shares * cost * 100), "持仓成本（股票余额 × 成本价）")
    export.holdings.append(Holding(code, row.get("name", ""), int(shares), cents))


def _add_delivery(export: Export, number: int, row: dict[str, str]) -> None:
    side: Literal["buy", "sell"] | None = (
        "buy" if "买" in row["side"] else "sell" if "卖" in row["side"] else None
    )
    if side is None:  # 红利入账, 银行转证券, 利息归本 ...
        export.skipped.append(f"第 {number} 行 {row['side'] or '（空）'}：不是买卖，未导入")
        return
    shares, mills = _shares(row["quantity"], "成交数量"), price_mills(row["price"], "成交价格")
    trade_value_cents(shares, mills)  # an absurd amount is refused here, by its line
    export.deliveries.append(
        Delivery(
            line=number,
            date=_date(row["date"]),
            time=row.get("time") or None,
            code=_code(row["code"]),
            name=row.get("name", ""),
            side=side,
            shares=shares,
            price_mills=mills,
            value_cents=_money(row.get("value"), "成交金额"),
            commission_cents=_money(row.get("commission"), "佣金"),
            stamp_cents=_money(row.get("stamp"), "印花税"),
            transfer_cents=_money(row.get("transfer"), "过户费"),
            trade_id=row.get("trade_id") or None,
            order_id=row.get("order_id") or None,
        )
    )


def _shares(text: str, label: str) -> int:
    number = abs(decimal_of(text, label))  # some exports sign a sell's quantity
    if number != number.to_integral_value() or not number:
        raise UsageError(f"{label} {text} 不是正整数股。")
    return check_shares(int(number), label)


def _money(text: str | None, label: str) -> int | None:
    return abs(amount_cents(text, label)) if text else None


def _date(text: str) -> str:
    digits = re.sub(r"\D", "", text)
    if len(digits) != 8:
        raise UsageError(f"成交日期 {text} 不是 YYYYMMDD 或 YYYY-MM-DD。")
    return digits
