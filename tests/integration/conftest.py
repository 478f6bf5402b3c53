"""Fixtures of the integration tests that more than one file uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from wyckoff.memory.store import MemoryStore
from wyckoff.store import Store


@pytest.fixture
def memories(home: Path) -> MemoryStore:
    """The long-term memory store of the test's WYCKOFF_HOME (real SQLite)."""
    home.mkdir(parents=True, exist_ok=True)
    return MemoryStore(Store.in_home(home))
