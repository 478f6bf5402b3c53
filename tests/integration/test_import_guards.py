"""Attacks on `portfolio import` and the ledger's numbers (issue #35): the same export imported
twice, repeated rows, files that are not files, and absurd share counts and prices."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli, cli_env
from tests.integration.test_integrity import state_db_at_version
from tests.integration.test_ledger import DATA, book, done, held, refused, state

HEADER = "成交日期,成交时间,证券代码,证券名称,委托方向,成交数量,成交价格,成交金额"
BUY_600 = "2026-01-05,09:35:12,600519,贵州茅台,证券买入,600,1500.00,900000.00"


def only_sentence(*args: str) -> str:
    """Run a command that must succeed saying exactly one sentence; that sentence."""
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    (line,) = (result.stdout + result.stderr).strip().splitlines()
    return line


def export(tmp_path: Path, name: str, *rows: str, header: str = HEADER) -> str:
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return str(path)


# --- the same export twice ----------------------------------------------------------------------


@pytest.mark.parametrize("file", ["eastmoney_deliveries.csv", "tdx_deliveries.txt"])
def test_the_same_deliveries_export_imported_again_books_nothing_and_says_so(home, file):
    done("portfolio", "cash", "500000")
    done("portfolio", "import", str(DATA / file))
    booked = state(home)
    sentence = only_sentence("portfolio", "import", str(DATA / file))
    assert sentence == f"{file} 里的 3 笔成交都已导入过，这次没有记录任何成交。"
    assert state(home) == booked  # no fill, no cash, no history entry to undo
    assert book()["cash"] == 190263.13


def test_an_export_of_buys_imported_twice_keeps_600_shares_and_pays_once(home, tmp_path):
    """The issue's case: 600519 went 600 -> 1,200 shares and the cash was debited twice."""
    done("portfolio", "cash", "1000000")
    file = export(tmp_path, "buys.csv", BUY_600)
    done("portfolio", "import", file)
    once = (held(), book()["cash"])
    assert once[0][0][:2] == ("600519", 600)
    assert "都已导入过" in only_sentence("portfolio", "import", file)
    assert (held(), book()["cash"]) == once


def test_an_undone_import_can_be_imported_again(home, tmp_path):
    done("portfolio", "cash", "1000000")
    file = export(tmp_path, "buys.csv", BUY_600)
    done("portfolio", "import", file)
    done("portfolio", "undo")
    assert held() == []
    done("portfolio", "import", file)
    assert held()[0][:2] == ("600519", 600)


# --- repeated rows ------------------------------------------------------------------------------


def test_two_identical_rows_are_shown_skipped_and_booked_only_when_confirmed(home, tmp_path):
    done("portfolio", "cash", "2000000")
    file = export(tmp_path, "twice.csv", BUY_600, BUY_600)
    unchanged = state(home)
    preview = done("portfolio", "import", file, "--dry-run")
    assert "疑似重复，未导入：第 3 行与第 2 行完全相同" in preview
    assert "600519 贵州茅台：（无） → 600 股" in preview and "--keep-duplicates" in preview
    assert state(home) == unchanged
    done("portfolio", "import", file)
    assert held()[0][:2] == ("600519", 600)
    done("portfolio", "undo")
    shown = done("portfolio", "import", file, "--keep-duplicates")
    assert "重复行按 --keep-duplicates 导入：第 3 行与第 2 行完全相同" in shown
    assert held()[0][:2] == ("600519", 1200)
    # confirmed repeats are part of the file's fills: importing it again still books nothing
    assert "2 笔成交都已导入过" in only_sentence("portfolio", "import", file, "--keep-duplicates")
    assert held()[0][:2] == ("600519", 1200)


def test_rows_with_distinct_trade_numbers_are_both_booked_and_a_repeated_number_is_not(
    home, tmp_path
):
    done("portfolio", "cash", "3000000")
    header = HEADER + ",成交编号"
    file = export(tmp_path, "ids.csv", BUY_600 + ",1001", BUY_600 + ",1002", header=header)
    shown = done("portfolio", "import", file)
    assert "疑似重复" not in shown
    assert held()[0][:2] == ("600519", 1200)
    assert "都已导入过" in only_sentence("portfolio", "import", file)
    # a later export listing fill 1002 again, and a new fill 1003: only 1003 is booked
    later = export(tmp_path, "later.csv", BUY_600 + ",1002", BUY_600 + ",1003", header=header)
    shown = done("portfolio", "import", later)
    assert "已导入过，跳过：第 2 行" in shown
    assert held()[0][:2] == ("600519", 1800)


def test_fills_imported_before_the_upgrade_are_recognised(home):
    """A state db from before import keys: its imported fills get keys from their fields."""
    from wyckoff.store import MIGRATIONS

    version = next(i for i, script in enumerate(MIGRATIONS) if "import_key" in script)
    old = state_db_at_version(home, version)
    columns = (
        "code, name, side, shares, price_mills, trade_date, trade_time, value_cents,"
        " commission_cents, stamp_cents, transfer_cents, source"
    )
    rows = [  # the rows eastmoney_deliveries.csv booked, and a fill typed in by hand
        "600519 贵州茅台 buy 300 1500000 20260105 09:35:12 45000000 11250 0 450 import",
        "000001 平安银行 buy 1000 10500 20260105 10:02:40 1050000 500 0 11 import",
        "600519 贵州茅台 sell 100 1510000 20260106 14:21:03 15100000 3775 7550 151 import",
        "000001 平安银行 buy 100 10600 20260107 - 106000 500 0 1 cli",
    ]
    old.executemany(
        f"INSERT INTO fills ({columns}) VALUES ({', '.join('?' * 12)})",
        [[None if cell == "-" else cell for cell in row.split()] for row in rows],
    )
    old.close()
    sentence = only_sentence("portfolio", "import", str(DATA / "eastmoney_deliveries.csv"))
    assert "3 笔成交都已导入过" in sentence
    keys = sqlite3.connect(home / "wyckoff.db").execute("SELECT source, import_key FROM fills")
    assert [(source, key is not None) for source, key in keys] == [
        ("import", True),
        ("import", True),
        ("import", True),
        ("cli", False),
    ]


# --- files that are not files -------------------------------------------------------------------


# `python -m wyckoff` with its address space capped at 2 GB first
CAPPED_WYCKOFF = (
    "import resource, runpy; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
    "runpy.run_module('wyckoff', run_name='__main__', alter_sys=True)"
)


def import_in_a_process(path: Path | str) -> subprocess.CompletedProcess:
    """`portfolio import PATH` in its own process, its memory capped, so a reader that blocks
    fails by the timeout and one that reads without end fails by the cap (not the machine)."""
    return subprocess.run(
        [sys.executable, "-c", CAPPED_WYCKOFF, "portfolio", "import", str(path)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,  # a refusal takes well under a second; a FIFO read waits for ever
    )


def refused_in_a_process(path: Path | str) -> str:
    result = import_in_a_process(path)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    return line


def test_a_fifo_is_refused_without_waiting_for_a_writer(home, tmp_path):
    fifo = tmp_path / "export.csv"
    os.mkfifo(fifo)
    assert refused_in_a_process(fifo) == (
        f"错误：{fifo} 是管道或套接字，不是文件：请先把券商导出保存为文件，再导入这个文件。"
    )


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_without_reading_it(home, device):
    assert refused_in_a_process(device) == (
        f"错误：{device} 是设备，不是文件：请给出券商导出的持仓或交割单文件。"
    )


def test_a_folder_and_a_missing_file_are_named_as_such(home, tmp_path):
    assert "是一个文件夹" in refused("portfolio", "import", str(tmp_path))
    assert "找不到文件" in refused("portfolio", "import", str(tmp_path / "没有.csv"))


def test_an_export_over_20_mb_is_refused_before_it_is_read(home, tmp_path):
    big = tmp_path / "big.csv"
    with big.open("wb") as file:
        file.truncate(20 * 2**20 + 1)  # sparse: no disk used
    assert refused_in_a_process(big) == (
        f"错误：{big} 大于券商导出文件的上限 20 MB：请确认选对了文件，或按时间段分开导出再逐个导入。"
    )
    assert book() == {"positions": [], "cash": 0.0}


# --- absurd numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("buy", "600519", "1" + "0" * 29, "10"), "成交股数 1" + "0" * 29 + " 大得不合实际"),
        (("sell", "000001", "1" + "0" * 29, "10"), "成交股数 1" + "0" * 29 + " 大得不合实际"),
        (("buy", "600519", "100", "1e999999"), "成交价 1e999999 大得不合实际"),
        (("buy", "600519", "100", "10." + "0" * 30 + "1"), "位数太多"),
        (("add", "600519", "--shares", "1000000000000", "--cost", "1e13"), "持仓成本"),
        (("add", "600519", "--shares", "1" + "0" * 29, "--cost", "10"), "大得不合实际"),
        (("cash", "1" + "0" * 29), "现金必须是不超过"),
    ],
)
def test_absurd_quantities_and_prices_are_refused_in_a_sentence(home, args, message):
    done("portfolio", "cash", "1000000")
    done("portfolio", "add", "000001", "--shares", "1000", "--cost", "10")
    unchanged = state(home)
    assert message in refused("portfolio", *args)
    assert state(home) == unchanged


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            BUY_600.replace(",600,", ",1" + "0" * 29 + ","),
            "成交数量 1" + "0" * 29 + " 大得不合实际",
        ),
        (
            BUY_600.replace(",600,1500.00,900000.00", ",1000000000000,9000000,"),
            "成交金额大得不合实际",
        ),
    ],
)
def test_an_export_with_an_absurd_quantity_is_refused_by_its_line(home, tmp_path, row, message):
    done("portfolio", "cash", "1000000")
    unchanged = state(home)
    refusal = refused("portfolio", "import", export(tmp_path, "huge.csv", row))
    assert "huge.csv 第 2 行" in refusal and message in refusal
    assert state(home) == unchanged
    assert json.loads(cli("portfolio", "list", "--json").stdout)["positions"] == []
