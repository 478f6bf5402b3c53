"""The state-db stores behind the tools: what a later question or an undo finds in them."""

from __future__ import annotations

import sqlite3

import pytest

from wyckoff import history_store
from wyckoff.agents.history import HistoryQueryParams, query_history
from wyckoff.agents.portfolio import Portfolio
from wyckoff.cli.builtin_tools import default_registry
from wyckoff.cli.tools import ToolContext
from wyckoff.history_store import NewRecommendation, NewSignal
from wyckoff.store import Store


def screen(store: Store, as_of: str, *codes: str) -> None:
    history_store.save_screen(
        store,
        "demo",
        as_of,
        [NewRecommendation(code, "名称", ["趋势"], ["SOS"], 60.0, 10.0) for code in codes],
        [NewSignal(code, "名称", "SOS", 60.0, "2026-01-20") for code in codes],
    )


def test_history_returns_one_stocks_newest_recommendations_with_their_lists(home):
    store = Store.in_home(home)
    home.mkdir(parents=True)
    screen(store, "2026-01-05", "000001", "600519")
    screen(store, "2026-01-06", "000001")
    screen(store, "2026-01-07", "000001")
    context = ToolContext(home=home, registry=default_registry(), store=store)
    rows = query_history(
        HistoryQueryParams(source="recommendation", code="000001", limit=2), context
    )["rows"]
    assert [(r["code"], r["as_of"]) for r in rows] == [
        ("000001", "2026-01-07"),
        ("000001", "2026-01-06"),
    ]
    assert rows[0]["channels"] == ["趋势"] and rows[0]["triggers"] == ["SOS"]


def test_a_screen_that_fails_to_save_leaves_no_half_of_it(home):
    store = Store.in_home(home)
    home.mkdir(parents=True)
    broken = NewSignal("000001", "平安银行", "SOS", 60.0, None)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.IntegrityError):
        history_store.save_screen(
            store,
            "demo",
            "2026-01-05",
            [NewRecommendation("000001", "平安银行", [], ["SOS"], 60.0, 10.0)],
            [broken],
        )
    assert history_store.recommendations(store, None, 10) == []
    assert history_store.signals(store, None, 10) == []


def test_the_newest_report_of_a_kind_is_the_one_read_back(home):
    store = Store.in_home(home)
    home.mkdir(parents=True)
    assert history_store.latest_report(store, "ai_report") is None
    history_store.save_report(store, "ai_report", "2026-01-05", "demo", '{"n": 1}')
    history_store.save_report(store, "strategy_decision", "2026-01-06", "demo", '{"n": 2}')
    history_store.save_report(store, "ai_report", "2026-01-06", "demo", '{"n": 3}')
    assert history_store.latest_report(store, "ai_report") == {"n": 3}


def test_undo_brings_back_a_removed_position_then_its_old_stop(home):
    home.mkdir(parents=True)
    book = Portfolio(Store.in_home(home))
    book.add("600519", None, 100, 1500.0, "20260105", stop_loss=1400.0)
    book.update("600519", stop_loss=1450.0)
    book.remove("600519")
    assert book.positions() == []
    book.undo()
    (restored,) = book.positions()
    assert restored["stop_loss"] == 1450.0 and restored["name"] == "贵州茅台"
    book.undo()
    assert book.positions()[0]["stop_loss"] == 1400.0
    assert [c["action"] for c in book.history()] == ["undo", "undo", "remove", "update", "add"]
    assert book.history()[2]["before"] == restored and book.history()[2]["after"] is None
