"""The first hour of a user on the command line: the model just added is used, local times,
Chinese throughout, clear portfolio messages, honest screen counts, clean session lists."""

from __future__ import annotations

import json

from tests.conftest import cli


def test_model_added_with_a_key_in_the_environment_becomes_the_default(home):
    env = {"ANTHROPIC_API_KEY": "sk-ant-fromenv-123456789"}
    added = cli(
        "model", "add", "c", "--provider", "openai", "--model", "gpt-4.1",
        "--api-key-env", "MY_KEY", env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    saved = json.loads((home / "wyckoff.json").read_text())
    assert [m["id"] for m in saved["models"]] == ["c"] and saved["default"] == "c"
    listed = json.loads(cli("model", "list", "--json", env=env).stdout)["models"]
    assert [(m["id"], m["default"]) for m in listed] == [("c", True)]
