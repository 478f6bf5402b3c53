#!/usr/bin/env bash
# The README's second command and what CI runs: install what the tests drive for real, the dev
# extras into a virtualenv, then the static checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests use for real: bubblewrap (the command sandbox), tmux (the sandbox's
# attacker tests), Debian's chromium and a CJK font (the web tests; Playwright's own browser
# download is never used).
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v tmux >/dev/null || missing+=(tmux)
command -v chromium >/dev/null || missing+=(chromium fonts-wqy-microhei)
if ((${#missing[@]})); then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update
  "${as_root[@]}" apt-get install -y "${missing[@]}"
fi

venv="${WYCKOFF_DEV_VENV:-.venv-dev}"
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e ".[dev]"

ruff check wyckoff tests bench research
ruff format --check wyckoff tests bench research
lint-imports  # the layer rules and no import circles (contracts in pyproject.toml)
mypy          # the typed modules and settings: [tool.mypy] in pyproject.toml

# pytest exits 5 when it ran no test: that fails too.
python -m pytest -q -n 2
