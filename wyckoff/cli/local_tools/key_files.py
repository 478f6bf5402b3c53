"""Files that may hold keys, tokens or passwords: the one maintained list.

read_file and write_file refuse every path the list matches; the command sandbox hides
(bubblewrap: mounts an empty folder or /dev/null over) the matches in the user's home and at
the top of the workspace. An entry is matched against the end of a path, one component at a
time (shell wildcards within a component, case-insensitive); an entry ending in "/" is a
folder, and everything under it matches.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase, translate
from pathlib import Path

KEY_FILES = (
    # folders of keys
    ".ssh/",
    ".aws/",
    ".gnupg/",
    ".azure/",
    ".config/gcloud/",
    # credential files of git, docker, kubernetes, the GitHub CLI, databases, package indexes
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    "gh/hosts.yml",
    ".netrc",
    ".pgpass",
    ".my.cnf",
    ".npmrc",
    ".pypirc",
    "credentials",
    # environment files
    ".env",
    "*.env",
    ".env.*",
    # private keys and key stores
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    # shell and console histories: commands typed with keys in them
    ".bash_history",
    ".zsh_history",
    ".sh_history",
    ".history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".node_repl_history",
    "fish_history",
    # Wyckoff's own config (keys saved with --api-key) and MCP server configs (tokens)
    "wyckoff.json",
    "mcp.json",
)
# Where programs keep these files under a home folder (XDG places included).
SEARCH_PLACES = (".", ".config", ".local/share/fish")
_PATTERNS = [entry.rstrip("/") for entry in KEY_FILES]
NESTED = tuple(pattern for pattern in _PATTERNS if "/" in pattern)  # looked up by path
ONE_NAME = re.compile("|".join(translate(pattern) for pattern in _PATTERNS if "/" not in pattern))


def key_file_entry(path: Path) -> str | None:
    """The entry of KEY_FILES that `path` matches, or None."""
    parts = [part.lower() for part in path.parts]
    for entry in KEY_FILES:
        pattern = entry.rstrip("/").split("/")
        last_start = len(parts) - len(pattern)
        starts = range(last_start + 1) if entry.endswith("/") else range(last_start, last_start + 1)
        for start in starts:
            if start >= 0 and all(map(fnmatchcase, parts[start:], pattern)):
                return entry
    return None


def key_paths_in(folder: Path) -> list[Path]:
    """The existing files and folders of KEY_FILES in `folder` (and its XDG places), each
    folder listed once and each name matched once (a workspace may hold many files)."""
    found: dict[Path, None] = {}
    for place in SEARCH_PLACES:
        base = folder / place
        try:
            names = os.listdir(base)
        except OSError:  # missing, or not a folder
            continue
        found.update(dict.fromkeys(base / name for name in names if ONE_NAME.match(name.lower())))
        found.update(dict.fromkeys(base / path for path in NESTED if os.path.lexists(base / path)))
    return list(found)
