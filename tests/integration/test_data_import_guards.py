"""`wyckoff data import` against hostile files: absurd prices, dates before the market or
after today, a low above the high, a code missing a digit, and paths that are not files (a
FIFO, /dev/zero, a folder). Each is refused through the real CLI with one Chinese sentence
that names the file and the line, exit code 2, and the store's earlier bars untouched."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from tests.conftest import cli, cli_process
from wyckoff.engine.bar_import import STOCK_COLUMNS
from wyckoff.engine.market_store import MarketStore

HEADER = ",".join(STOCK_COLUMNS)
GOOD_ROWS = (
    "600000,2025-03-04,5,5.2,4.9,5.1,5,100,500\n600000,2025-03-05,5.1,5.3,5,5.2,5.1,100,500\n"
)


def _stored(home: Path) -> list[tuple]:
    store = MarketStore.for_source(home, "import")
    return store.execute("SELECT code, date, open, high, low, close FROM bars ORDER BY code, date")


@pytest.fixture
def imported(home) -> list[tuple]:
    """A store holding one good file's bars: what every refused import must leave as it is."""
    good = home.parent / "good.csv"
    good.write_text(f"{HEADER}\n600001.SH,2025-03-03,5,5.5,4.8,5.2,5,100,500\n")
    assert cli("data", "import", str(good)).returncode == 0
    before = _stored(home)
    assert len(before) == 1
    return before


def _refused(result) -> str:
    """The one stderr line of a refused import (exit code 2, no traceback)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("row", "said"),
    [
        (
            "600000,2025-03-06,5,1e308,4.9,5,5,100,500",
            "第 4 行的 high 是 '1e308'：应为大于 0、不超过 100,000 元",
        ),
        ("600000,1800-01-02,5,5.2,4.9,5,5,100,500", "第 4 行的日期 1800-01-02 不在 1990-12-19"),
        ("600000,2999-01-01,5,5.2,4.9,5,5,100,500", "第 4 行的日期 2999-01-01 不在 1990-12-19"),
        (
            "600000,2025-03-06,5,4.9,5.2,5,5,100,500",
            "第 4 行的最低价 low 5.2 高于最高价 high 4.9：请检查",
        ),
        (
            "600000,2025-03-06,6,5.2,4.9,5,5,100,500",
            "第 4 行的 open 6 不在当日最低价 4.9 与最高价 5.2 之间",
        ),
        ("600000,2025-03-06,5,5.2,4.9,4,5,100,500", "第 4 行的 close 4 不在当日最低价 4.9"),
        (
            "60051,2025-03-06,5,5.2,4.9,5,5,100,500",
            "第 4 行的代码 '60051' 无效：应为完整的 6 位数字",
        ),
        ("600000,2025-03-06,5,5.2,4.9,5,5,1e308,500", "第 4 行的 volume 是 '1e308'：应为不小于 0"),
        ("600000,2025-03-06,5,5.2,4.9,5,5,100,inf", "第 4 行的 amount 是 'inf'：应为不小于 0"),
    ],
    ids=[
        "huge-price",
        "year-1800",
        "year-2999",
        "low-above-high",
        "open-outside",
        "close-outside",
        "five-digit-code",
        "huge-volume",
        "infinite-amount",
    ],
)
def test_an_absurd_bar_refuses_the_whole_file_and_keeps_the_store(home, imported, row, said):
    bad = home.parent / "bad.csv"
    bad.write_text(f"{HEADER}\n{GOOD_ROWS}{row}\n")
    sentence = _refused(cli("data", "import", str(bad)))
    assert sentence.startswith("错误：bad.csv ") and said in sentence, sentence
    assert sentence.endswith("没有写入任何数据。")
    assert _stored(home) == imported  # the good rows before the bad one were not written either
    assert not any(code == "060051" for code, *_ in _stored(home))


def test_the_first_bad_line_is_named_and_the_rest_are_counted(home, imported):
    bad = home.parent / "bad.csv"
    rows = [f"600000,2025-03-{day:02d},5,5.2,4.9,5,5,100,500" for day in range(3, 8)]
    rows[1] = rows[1].replace("5.2", "1e308")  # line 3
    rows[3] = rows[3].replace("2025-03-06", "2999-03-06")  # line 5
    rows[4] = "60051" + rows[4][6:]  # line 6
    bad.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    sentence = _refused(cli("data", "import", str(bad)))
    assert "bad.csv 第 3 行的 high" in sentence and "另有 2 行也有问题" in sentence
    assert _stored(home) == imported


def test_today_is_the_market_clock_s_today(home, imported):
    """WYCKOFF_NOW pins the clock: a bar of the next day is in the future and refused."""
    late = home.parent / "late.csv"
    late.write_text(f"{HEADER}\n600000,2025-03-06,5,5.2,4.9,5,5,100,500\n")
    now = {"WYCKOFF_NOW": "2025-03-05T16:00:00+08:00"}
    sentence = _refused(cli("data", "import", str(late), env=now))
    assert (
        "第 2 行的日期 2025-03-06 不在 1990-12-19（A 股第一个交易日）到今天 2025-03-05 之间"
        in sentence
    )
    assert _stored(home) == imported
    assert cli("data", "import", str(late)).returncode == 0  # the same bar, a year later


def test_the_documented_code_forms_are_read_as_six_digits(home):
    path = home.parent / "forms.csv"
    path.write_text(
        f"{HEADER}\n"
        + "".join(
            f"{code},2025-03-04,5,5.2,4.9,5.1,5,100,500\n"
            for code in ("600519", "000001.SZ", "SH600000", "sz000002", "688001.sh")
        )
    )
    assert cli("data", "import", str(path)).returncode == 0
    codes = [row[0] for row in _stored(home)]
    assert codes == ["000001", "000002", "600000", "600519", "688001"]


def test_a_parquet_integer_code_keeps_its_leading_zeros(home):
    """Parquet stores 000001 as the integer 1: padding it is right, unlike a typed '60051'."""
    path = home.parent / "bars.parquet"
    duckdb.execute(
        "COPY (SELECT 1 AS code, DATE '2025-03-04' AS date, 5.0 AS open, 5.2 AS high, 4.9 AS low,"
        f" 5.1 AS close, 5.0 AS pre_close, 100 AS volume, 500.0 AS amount) TO '{path}' (FORMAT parquet)"
    )
    assert cli("data", "import", str(path)).returncode == 0
    assert [row[0] for row in _stored(home)] == ["000001"]


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda tmp: _fifo(tmp / "bars.csv"),
            "是一个管道（FIFO），不是普通文件：请先把数据存成 CSV",
        ),
        (lambda tmp: Path("/dev/zero"), "/dev/zero 是一个设备，不是数据文件"),
        (lambda tmp: tmp, "是一个文件夹：一次导入一个文件"),
        (lambda tmp: tmp / "missing.csv", "找不到文件"),
        (lambda tmp: tmp / "good.csv" / "bars.csv", "无法读取"),
    ],
    ids=["fifo", "dev-zero", "folder", "missing", "under-a-file"],
)
def test_a_path_that_is_not_a_regular_file_is_named_for_what_it_is(home, imported, make, said):
    path = make(home.parent)
    sentence = _refused(cli_process("data", "import", str(path)))  # a hang fails by timeout
    assert str(path) in sentence and said in sentence, sentence
    assert _stored(home) == imported
