"""wyckoff.json and mcp.json as a user's processes and a broken disk leave them: commands run
side by side lose nothing, a broken file is one Chinese sentence naming it (never a
traceback) and `ask` goes on without what the broken file held."""

from __future__ import annotations

import json
import stat

from tests.conftest import spawn_cli

PARALLEL = 8


def run_side_by_side(commands: list[list[str]]) -> None:
    """Start every command at once, then wait for all; each must succeed."""
    running = [spawn_cli(*command) for command in commands]
    for process in running:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr


def test_parallel_model_adds_are_all_kept(home):
    run_side_by_side(
        [
            ["model", "add", f"m{i}", "--provider", "openai", "--model", "gpt-4.1",
             "--api-key-env", f"KEY_{i}"]
            for i in range(PARALLEL)
        ]
    )  # fmt: skip
    config = home / "wyckoff.json"
    saved = json.loads(config.read_text("utf-8"))
    assert sorted(m["id"] for m in saved["models"]) == [f"m{i}" for i in range(PARALLEL)]
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_parallel_mcp_adds_are_all_kept(home):
    run_side_by_side([["mcp", "add", f"s{i}", "--", "server", str(i)] for i in range(PARALLEL)])
    config = home / "mcp.json"
    saved = json.loads(config.read_text("utf-8"))
    assert sorted(s["name"] for s in saved) == [f"s{i}" for i in range(PARALLEL)]
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
