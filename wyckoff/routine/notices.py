"""What the routine left for the user while they were away, as notices a front end shows
when it opens: pending approvals of scheduled runs and the newest day's alerts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wyckoff import alert_store
from wyckoff.routine.approvals import pending

if TYPE_CHECKING:
    from wyckoff.store import Store


def opening_notices(store: Store) -> list[str]:
    lines = []
    waiting = pending(store)
    if waiting:
        listed = "；".join(f"#{a['id']} {a['description']}" for a in waiting[:3])
        lines.append(
            f"定时任务留下 {len(waiting)} 个待批准的操作（{listed}）：运行 "
            "`wyckoff approvals list` 查看，`wyckoff approvals approve 编号` 批准后才会执行。"
        )
    latest = alert_store.events(store, limit=1)
    if latest:
        day = latest[0]["date"]
        count = len(alert_store.events(store, day, limit=1000))
        lines.append(f"{day} 触发了 {count} 条提醒：`wyckoff alert history --date {day}` 查看。")
    return lines
