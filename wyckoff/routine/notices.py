"""What the routine left for the user while they were away: the notices a front end shows
when it opens (pending approvals of scheduled runs, the newest day's alerts) and the short
counts for a status bar."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wyckoff import alert_store, approval_store
from wyckoff.routine.approvals import pending

if TYPE_CHECKING:
    from wyckoff.store import Store


def newest_alerts(store: Store) -> tuple[str | None, int]:
    """The newest day with alerts and how many fired that day."""
    latest = alert_store.events(store, limit=1)
    if not latest:
        return None, 0
    day = latest[0]["date"]
    return day, len(alert_store.events(store, day, limit=1000))


def opening_notices(store: Store) -> list[str]:
    lines = []
    waiting = pending(store)
    if waiting:
        listed = "；".join(f"#{a['id']} {a['description']}" for a in waiting[:3])
        lines.append(
            f"定时任务留下 {len(waiting)} 个待批准的操作（{listed}）：运行 "
            "`wyckoff approvals list` 查看，`wyckoff approvals approve 编号` 批准后才会执行。"
        )
    day, count = newest_alerts(store)
    if day:
        lines.append(f"{day} 触发了 {count} 条提醒：`wyckoff alert history --date {day}` 查看。")
    return lines


def status_text(store: Store) -> str:
    """'提醒 3（12-03） │ 待批准 1', or empty when there is nothing."""
    day, count = newest_alerts(store)
    waiting = approval_store.count_pending(store)  # a read: the status bar refreshes often
    parts = [f"提醒 {count}（{day[5:]}）"] if day else []
    parts += [f"待批准 {waiting}"] if waiting else []
    return " │ ".join(parts)
