"""Background tasks: long tools return a task_id at once and run on a worker thread.

Progress lives in memory (for the TUI panel); results and final states are stored in
SQLite and survive the turn. A finished task becomes a notification message (meta.kind
"notification"), its text marked as a system notification so the model never takes it for
something the user typed. Each task
records the pid of its process; a new manager marks tasks whose process is gone as failed
(进程已退出), so a killed process never leaves a task "running" forever.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from wyckoff.cli.messages import UserMessage, synthetic
from wyckoff.cli.tools import CancelEvent, ToolContext, ToolOutcome, ToolSpec
from wyckoff.config import redact_text
from wyckoff.faults import crash_point

NOTIFICATION_PREFIX = "[SYSTEM NOTIFICATION - NOT USER INPUT]"
OWNER_GONE = (
    "进程已退出：运行这个后台任务的 Wyckoff 进程在任务完成前退出了，没有结果，需要时请重新发起。"
)

# what each status is called on screen (a running task is 排队中 until it reports, see `state`)
TASK_STATES = {"running": "运行中", "completed": "完成", "failed": "失败", "cancelled": "已取消"}


@dataclass
class TaskState:
    id: str
    session_id: str | None
    tool: str
    title: str  # the tool's Chinese title, for people
    args: dict[str, Any]
    status: str = "running"  # running | completed | failed | cancelled
    stage: str = ""  # the tool's own step ("全市场漏斗"), empty until it reports one
    detail: str = ""
    progress: float | None = None
    seq: int = 0  # counts the task's changes: a front end drops an update older than one shown
    started: float = field(default_factory=time.monotonic)
    elapsed_s: float = 0.0
    outcome: ToolOutcome | None = None
    cancel_event: CancelEvent = field(default_factory=CancelEvent)

    @property
    def state(self) -> str:
        """排队中 until the task reports a stage or progress, then 运行中, then how it ended."""
        if self.status != "running":
            return TASK_STATES[self.status]
        return "运行中" if self.stage or self.progress is not None else "排队中"

    def snapshot(self) -> dict[str, Any]:
        return {
            "task_id": self.id,
            "tool": self.tool,
            "title": self.title,
            "seq": self.seq,
            "status": self.status,
            "state": self.state,
            "stage": self.stage,
            "detail": self.detail,
            "progress": self.progress,
            "elapsed_s": round(
                self.elapsed_s if self.status != "running" else time.monotonic() - self.started, 1
            ),
        }


class BackgroundTaskManager:
    def __init__(self, store) -> None:
        self.store = store
        self._tasks: dict[str, TaskState] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        self._fail_orphaned_tasks()

    def on_update(self, listener: Callable[[dict[str, Any]], None]) -> None:
        """Call `listener` with a `task_update` event whenever a task changes (on the task's
        thread: a front end hands it over to its own loop)."""
        self._listeners.append(listener)

    def _fail_orphaned_tasks(self) -> None:
        """Tasks left "running" by a process that no longer exists failed with it."""
        rows = self.store.conn.execute(
            "SELECT id, owner_pid FROM background_tasks WHERE status = 'running'"
        ).fetchall()
        orphans = [(OWNER_GONE, row["id"]) for row in rows if not _process_alive(row["owner_pid"])]
        if orphans:
            with self.store.transaction() as conn:
                conn.executemany(
                    "UPDATE background_tasks SET status = 'failed', error = ?, stage = '失败',"
                    " finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
                    " WHERE id = ? AND status = 'running'",
                    orphans,
                )

    def submit(
        self, spec: ToolSpec, params: BaseModel, context: ToolContext, call_id: str
    ) -> TaskState:
        """Start `spec` on a daemon thread; returns at once."""
        task = TaskState(
            id=f"task_{uuid.uuid4().hex[:10]}",
            session_id=context.session_id,
            tool=spec.name,
            title=spec.title,
            args=params.model_dump(mode="json"),
        )
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO background_tasks (id, session_id, tool, args, status, owner_pid)"
                " VALUES (?, ?, ?, ?, 'running', ?)",
                (
                    task.id,
                    task.session_id,
                    task.tool,
                    redact_text(json.dumps(task.args, ensure_ascii=False)),
                    os.getpid(),
                ),
            )
        with self._lock:
            self._tasks[task.id] = task
        task_context = context.for_call(
            cancel_event=task.cancel_event, on_progress=lambda update: self._progress(task, update)
        )
        self._emit(task.snapshot())  # queued, before the task's thread can report anything
        threading.Thread(
            target=self._run,
            args=(spec, params, task_context, task, call_id),
            name=f"bg-{spec.name}",
            daemon=True,
        ).start()
        return task

    def _run(
        self, spec: ToolSpec, params: BaseModel, context: ToolContext, task: TaskState, call_id: str
    ) -> None:
        started = time.monotonic()
        crash_point("background-task")
        try:
            value = spec.func(params, context)
            outcome = context.registry.finish(
                call_id, spec.name, value, time.monotonic() - started, context, task.id
            )
            status = "cancelled" if context.cancelled() else "completed"
        except Exception as exc:  # a task bug is reported, never raised into a thread's void
            outcome = ToolOutcome.failed(call_id, spec.name, exc)
            status = "failed"
        self._finish(task, status, outcome, time.monotonic() - started)

    def _progress(self, task: TaskState, update: dict[str, Any]) -> None:
        with self._lock:
            task.stage = update.get("stage") or task.stage
            task.detail = update.get("detail") or ""
            if update.get("fraction") is not None:
                task.progress = update["fraction"]
            task.seq += 1
            event = task.snapshot()
        self._emit(event)

    def _finish(self, task: TaskState, status: str, outcome: ToolOutcome, elapsed: float) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE background_tasks SET status = ?, result = ?, error = ?, stage = ?, progress = ?,"
                " finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?",
                (
                    status,
                    outcome.result and redact_text(outcome.result),
                    outcome.error and redact_text(outcome.shown_error),
                    "完成" if outcome.ok else "失败",
                    1.0,
                    task.id,
                ),
            )
        with self._changed:
            task.status, task.outcome, task.elapsed_s = status, outcome, elapsed
            task.stage = "完成" if outcome.ok else "失败"
            task.progress = 1.0
            task.seq += 1
            event = task.snapshot()
            self._changed.notify_all()
        self._emit(event)

    def _emit(self, snapshot: dict[str, Any]) -> None:
        event = {"type": "task_update", **snapshot}
        for listener in list(self._listeners):
            listener(event)

    # --- queries ------------------------------------------------------------------------

    def tasks(self, session_id: str | None) -> list[TaskState]:
        with self._lock:
            return [t for t in self._tasks.values() if t.session_id == session_id]

    def running(self, session_id: str | None) -> list[TaskState]:
        return [t for t in self.tasks(session_id) if t.status == "running"]

    def wait(
        self, task_ids: list[str], cancel: threading.Event, timeout_s: float | None = None
    ) -> bool:
        """Block until the tasks finish (True), the user cancels or time runs out (False)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._changed:
            while any(self._tasks[i].status == "running" for i in task_ids):
                if cancel.is_set() or (deadline is not None and time.monotonic() >= deadline):
                    return False
                self._changed.wait(timeout=0.1)
        return True

    def take_notifications(self, session_id: str | None) -> list[UserMessage]:
        """Messages for finished tasks not yet reported; each is reported once."""
        messages: list[UserMessage] = []
        with self.store.transaction() as conn:
            for task in self.tasks(session_id):
                if task.status == "running":
                    continue
                updated = conn.execute(
                    "UPDATE background_tasks SET notified = 1 WHERE id = ? AND notified = 0",
                    (task.id,),
                ).rowcount
                if updated:
                    messages.append(synthetic("notification", notification_text(task)))
        return messages

    def stored(self, session_id: str | None, task_id: str | None = None) -> list[dict[str, Any]]:
        """Tasks as stored in SQLite (also those of earlier processes)."""
        sql = "SELECT id, tool, args, status, stage, result, error, created_at, finished_at FROM background_tasks WHERE "
        params: tuple = ()
        if task_id:
            sql += "id = ?"
            params = (task_id,)
        else:
            sql += "session_id IS ? ORDER BY created_at DESC LIMIT 20"
            params = (session_id,)
        return [dict(row) for row in self.store.conn.execute(sql, params).fetchall()]


def _process_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def notification_text(task: TaskState) -> str:
    outcome = task.outcome
    # a result, or an error's outside text, inside the untrusted-data marker
    body = outcome.observation() if outcome else "工具错误：未知"
    return (
        f"{NOTIFICATION_PREFIX}\n<task-notification>\n"
        f"task_id: {task.id}\ntool: {task.tool}\nstatus: {task.status}\nelapsed_s: {task.elapsed_s:.1f}\n"
        f"result:\n{body}\n</task-notification>\n"
        "后台任务已结束。请根据上面的结果继续，并向用户汇报要点。"
    )


class CheckBackgroundTasksParams(BaseModel):
    task_id: str | None = Field(
        default=None, description="只看这个任务；省略则列出本会话的全部任务"
    )


def check_background_tasks(
    params: CheckBackgroundTasksParams, context: ToolContext
) -> dict[str, Any]:
    manager = context.background
    if manager is None:
        return {"tasks": [], "note": "本运行环境没有后台任务。"}
    live = {t.id: t for t in manager.tasks(context.session_id)}
    rows = []
    for row in manager.stored(context.session_id, params.task_id):
        task = live.get(row["id"])
        entry = (
            task.snapshot()
            if task
            else {"task_id": row["id"], "tool": row["tool"], "status": row["status"]}
        )
        if row["status"] != "running":
            entry["result"] = (row["result"] or "")[:2000] if row["result"] else None
            entry["error"] = row["error"]
        rows.append(entry)
    if params.task_id and not rows:
        return {"tasks": [], "note": f"没有找到任务 {params.task_id}。"}
    return {"tasks": rows}


def summarize_tasks(result: dict[str, Any]) -> str:
    tasks = result["tasks"]
    if not tasks:
        return "没有后台任务"
    statuses = [TASK_STATES.get(t["status"], t["status"]) for t in tasks]
    counts = "、".join(f"{label} {statuses.count(label)}" for label in dict.fromkeys(statuses))
    return f"{len(tasks)} 个后台任务：{counts}"


CHECK_BACKGROUND_TASKS = ToolSpec(
    name="check_background_tasks",
    description="查看后台任务（全市场筛选、研报、回测等）的状态、进度和结果。",
    params=CheckBackgroundTasksParams,
    func=check_background_tasks,
    title="查看后台任务",
    concurrency_safe=True,
    summarize=summarize_tasks,
    timeout_s=10,
)
