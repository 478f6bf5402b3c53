"""The push channel table of the state db: a channel's name, kind and the names of the
environment variables holding its URL and secret (never their values)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wyckoff.store import Store


def channels(store: Store) -> list[dict[str, Any]]:
    rows = store.conn.execute("SELECT * FROM notify_channels ORDER BY name").fetchall()
    return [dict(r) for r in rows]


def write(store: Store, name: str, kind: str, url_env: str, secret_env: str | None) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO notify_channels (name, kind, url_env, secret_env) VALUES (?, ?, ?, ?)",
        (name, kind, url_env, secret_env),
    )


def delete(store: Store, name: str) -> bool:
    return store.conn.execute("DELETE FROM notify_channels WHERE name = ?", (name,)).rowcount > 0
