"""Shared fixtures: a temporary WYCKOFF_HOME, no network beyond loopback, scripted servers.

`cli` (tests/cli_runner.py) runs a command in this process; `cli_process` and `spawn_cli`
in a real one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.cli_runner import cli
from tests.model_servers import SERVERS, AnthropicServer, GeminiServer, OpenAIServer, ScriptedServer

if TYPE_CHECKING:
    from wyckoff.engine.market_store import MarketStore

KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DEEPSEEK_API_KEY",
    "TUSHARE_TOKEN",
    "WYCKOFF_DATA_SOURCE",
)


NETGUARD = Path(__file__).parent / "netguard"


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection or name lookup beyond 127.0.0.0/8 and ::1 fails at once."""
    from tests.netguard.sitecustomize import install

    install(monkeypatch.setattr)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets an empty WYCKOFF_HOME and no API keys from the real environment."""
    path = tmp_path / "wyckoff-home"
    monkeypatch.setenv("WYCKOFF_HOME", str(path))
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return path


def _serve(server: ScriptedServer) -> Iterator[ScriptedServer]:
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    yield from _serve(OpenAIServer())


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    yield from _serve(AnthropicServer())


@pytest.fixture
def gemini_server() -> Iterator[GeminiServer]:
    yield from _serve(GeminiServer())


@pytest.fixture(params=["claude", "openai", "gemini"])
def any_server(request) -> Iterator[ScriptedServer]:
    """One scripted server per provider: the test runs once for each."""
    yield from _serve(SERVERS[request.param]())


def provider_of(server: ScriptedServer) -> str:
    return {"anthropic": "claude", "openai": "openai", "gemini": "gemini"}[server.kind]


def base_url_of(server: ScriptedServer) -> str:
    """The SDKs append different paths: OpenAI's base URL includes /v1."""
    return server.base_url + "/v1" if server.kind == "openai" else server.base_url


def model_config(server: ScriptedServer, model_id: str = "main", **fields):
    from wyckoff.config import ModelConfig

    defaults = {"claude": "claude-sonnet-4-5", "openai": "gpt-4.1", "gemini": "gemini-2.5-flash"}
    provider = provider_of(server)
    return ModelConfig(
        id=model_id,
        provider=provider,
        model=fields.pop("model", defaults[provider]),
        base_url=base_url_of(server),
        api_key=fields.pop("api_key", f"test-key-{model_id}-0123456789"),
        **fields,
    )


def cli_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `python -m wyckoff` runs in: the test's, behind the loopback guard."""
    python_path = os.pathsep.join(filter(None, [str(NETGUARD), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": python_path, **(env or {})}


def cli_process(
    *args: str, input_text: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run `python -m wyckoff ARGS` in a process of its own, in the test's WYCKOFF_HOME (for
    what only a real process shows: exit by signal, kill -9, its pid; `cli` for the rest)."""
    return subprocess.run(
        [sys.executable, "-m", "wyckoff", *args],
        capture_output=True,
        text=True,
        input=input_text,
        env=cli_env(env),
        timeout=120,
    )


def spawn_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `python -m wyckoff ARGS` without waiting (for processes running side by side)."""
    return subprocess.Popen(
        [sys.executable, "-m", "wyckoff", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(env),
    )


def add_scripted_model(server, model_id: str = "m") -> None:
    """`wyckoff model add` for a scripted OpenAI-compatible server, as a user would."""
    result = cli(
        "model", "add", model_id, "--provider", "openai", "--model", "gpt-4.1",
        "--base-url", server.base_url + "/v1", "--api-key", "sk-test-0123456789",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def marked_data(content: str, source: str) -> str:
    """The inside of a tool observation, which must arrive in the untrusted-data marker."""
    opening = f'<untrusted-data source="{source}">\n'
    assert content.startswith(opening) and content.endswith("\n</untrusted-data>"), content[:80]
    return content[len(opening) : -len("\n</untrusted-data>")]


@pytest.fixture(scope="session")
def install_demo(tmp_path_factory) -> Callable[[Path, int], MarketStore]:
    """`install(home, limit)`: puts a demo market of `limit` stocks into `home` (a copy of one
    built once per test session: the build is deterministic, and the slowest setup step)."""
    from wyckoff.engine.market_store import MarketStore
    from wyckoff.engine.sources.demo import ensure_demo

    built: dict[int, MarketStore] = {}

    def install(home: Path, limit: int = 400) -> MarketStore:
        if limit not in built:
            built[limit] = ensure_demo(tmp_path_factory.mktemp(f"demo-{limit}"), limit=limit)
        home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[limit].path, home / built[limit].path.name)
        return MarketStore.for_source(home, "demo")

    return install


@pytest.fixture
def demo_home(home: Path, install_demo) -> Path:
    """A home whose chosen source is a 400-stock demo market."""
    install_demo(home, 400)
    assert cli("data", "use", "demo").returncode == 0
    return home
