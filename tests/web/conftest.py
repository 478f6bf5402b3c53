from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.server import WebServer, web_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def web(demo_home) -> Iterator[WebServer]:
    """`wyckoff web` over the 400-stock demo market, no model configured."""
    with web_server() as server:
        yield server


ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.failed_call = report.failed


@pytest.fixture
def browser_page(request) -> Iterator:
    """A headless Chromium page (Debian's chromium driven by Playwright); a failing test
    leaves its last screen in test-artifacts/NAME.png, and an error thrown by the pages'
    script fails the test."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=20_000)  # two shared cores: a turn can take seconds

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.set_default_timeout(30_000)
        script_errors: list[str] = []
        page.on("pageerror", lambda error: script_errors.append(str(error)))
        try:
            yield page
            assert script_errors == [], script_errors  # the pages' script never threw
        finally:
            if getattr(request.node, "failed_call", False):
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
            browser.close()
