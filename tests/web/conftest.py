from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.server import WebServer, web_server


@pytest.fixture
def web(demo_home) -> Iterator[WebServer]:
    """`wyckoff web` over the 400-stock demo market, no model configured."""
    with web_server() as server:
        yield server
