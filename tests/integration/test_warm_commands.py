"""A warm `wyckoff analyze` or `screen` (the panel cache written by an earlier run) answers
exactly as the cold one that read the store, and does it without importing pandas or DuckDB:
those imports cost more than the whole diagnosis (issue #25). A warm `ask` reads the market
clock's calendar without numpy."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import add_scripted_model, cli, cli_env
from tests.model_servers import Reply
from wyckoff.engine.panel_cache import CACHE_DIR

SCRIPT = shutil.which("wyckoff", path=str(Path(sys.executable).parent))
DATA = Path(__file__).parent.parent / "data"


def run_script(*args: str) -> subprocess.CompletedProcess:
    """The installed console script in its own process, with the modules it imports on stderr."""
    assert SCRIPT, "the wyckoff console script is not installed"
    env = cli_env({"PYTHONPROFILEIMPORTTIME": "1"})
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, env=env, timeout=120)


def imported_modules(stderr: str) -> set[str]:
    """The modules named by `-X importtime` lines ("import time: self | total | name")."""
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:")
    }


def messages(stderr: str) -> list[str]:
    """What the command told the user on stderr (not the import times)."""
    return [line for line in stderr.splitlines() if not line.startswith("import time:")]


def cold_then_warm(
    home: Path, *args: str
) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """A run without a panel cache, and the second run that read the cache it wrote."""
    shutil.rmtree(home / CACHE_DIR, ignore_errors=True)
    cold = run_script(*args)
    assert (home / CACHE_DIR).is_dir(), cold.stderr
    return cold, run_script(*args)


def assert_same_answer(
    cold: subprocess.CompletedProcess, warm: subprocess.CompletedProcess
) -> None:
    assert warm.returncode == cold.returncode
    assert warm.stdout == cold.stdout
    assert messages(warm.stderr) == messages(cold.stderr)


def import_real_bars() -> None:
    """The real daily bars of tests/data (an ST stock, a delisting, a STAR listing, a BSE stock)."""
    for path in sorted(DATA.glob("[0-9]*.csv")):
        assert cli("data", "import", str(path)).returncode == 0
    for path in sorted(DATA.glob("index_*.csv")):
        assert cli("data", "import", str(path), "--index").returncode == 0


@pytest.mark.parametrize("output", [["--json"], []], ids=["json", "text"])
def test_a_warm_analyze_on_the_demo_market_answers_as_the_cold_one_without_pandas(
    demo_home, output
):
    cold, warm = cold_then_warm(demo_home, "analyze", "平安银行", *output)
    assert cold.returncode == 0 and "000001" in cold.stdout
    assert_same_answer(cold, warm)
    modules = imported_modules(warm.stderr)
    assert "numpy" in modules  # the probe sees imports at all
    assert not {"pandas", "duckdb"} & modules


def test_a_warm_analyze_on_imported_real_bars_answers_as_the_cold_one(home):
    import_real_bars()
    cold, warm = cold_then_warm(home, "analyze", "830799", "--json")  # trades on the last day
    assert cold.returncode == 0 and '"code": "830799"' in cold.stdout
    assert_same_answer(cold, warm)
    assert "pandas" not in imported_modules(warm.stderr)
    for code in ("000980", "600260", "688981"):  # no bar on the last day: the same refusal
        cold, warm = cold_then_warm(home, "analyze", code)
        assert cold.returncode == 1 and "没有行情" in cold.stderr
        assert_same_answer(cold, warm)


def test_a_warm_screen_answers_as_the_cold_one_without_pandas_or_duckdb(demo_home):
    cold, warm = cold_then_warm(demo_home, "screen", "--json")
    assert cold.returncode == 0 and '"top_candidates"' in cold.stdout
    assert_same_answer(cold, warm)
    modules = imported_modules(warm.stderr)
    assert "numpy" in modules and not {"pandas", "duckdb"} & modules


def test_the_open_days_kept_on_disk_follow_a_changed_store(demo_home):
    """A calendar day added to the store (as a sync does) is an open day at once: the copy on
    disk belongs to the store's old version."""
    import numpy as np
    import pandas as pd

    from wyckoff.agents.market_data import MarketData
    from wyckoff.config import load_config

    market = MarketData(demo_home, load_config(demo_home))
    before = market.open_days()
    assert (demo_home / CACHE_DIR / "market-demo-open-days").is_dir()
    new_day = before[-1] + np.timedelta64(30, "D")
    frame = pd.DataFrame({"date": [pd.Timestamp(new_day)], "is_open": [True], "source": ["demo"]})
    market.store.upsert("trade_calendar", frame)
    assert list(market.open_days()) == [*before, new_day]


def test_a_warm_ask_reads_the_market_clock_without_numpy_or_duckdb(demo_home, openai_server):
    """`ask` tells the model the market's phase from the stored calendar: once the open days
    are on disk, the next ask reads them as text (numpy and DuckDB cost ~0.1-0.16 s CPU to
    import) and sends the very same system prompt."""
    add_scripted_model(openai_server, "m")
    openai_server.script(Reply(text="好"), Reply(text="好"))
    shutil.rmtree(demo_home / CACHE_DIR, ignore_errors=True)
    cold, warm = run_script("ask", "你好"), run_script("ask", "你好")
    assert cold.returncode == warm.returncode == 0 and warm.stdout == cold.stdout == "好\n"
    modules = imported_modules(warm.stderr)
    assert "openai" in modules and not {"numpy", "pandas", "duckdb"} & modules
    first, second = (body["messages"][0] for body in openai_server.bodies)
    assert first["role"] == "system" and "市场时段" in first["content"]
    assert second == first


def test_a_damaged_copy_of_the_open_days_is_read_again_from_the_store(demo_home):
    from wyckoff.agents.market_data import MarketData, stored_open_days
    from wyckoff.config import load_config

    config = load_config(demo_home)
    days = MarketData(demo_home, config).open_day_list()
    copy = demo_home / CACHE_DIR / "market-demo-open-days" / "open_days.txt"
    copy.write_text("2024-13-45\nnot a date", encoding="utf-8")
    assert stored_open_days(demo_home, config) == frozenset(days)
    assert copy.read_text(encoding="utf-8").split() == [day.isoformat() for day in days]
