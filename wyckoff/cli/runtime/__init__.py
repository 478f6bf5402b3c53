"""The agent runtime: the one loop every front end consumes as a stream of RuntimeEvents.

- `loop.py`: `AgentRuntime`, the turn (model rounds, the streaming relay, compaction,
  background notifications for headless turns, traces).
- `batch.py`: one batch of tool calls (admit, prepare, run in parallel when safe,
  background tasks, a sub-agent's events relayed).
- `approval.py`: who approved a risky call (flags, always-allow, consents, the dialog).
- `turn.py`: what one turn carries while it runs.
"""

from wyckoff.cli.runtime.approval import Approval, ApprovalPolicy, ConfirmCallback
from wyckoff.cli.runtime.batch import MAX_PARALLEL_TOOLS
from wyckoff.cli.runtime.loop import MAX_TOOL_ROUNDS, SYSTEM_PROMPT, AgentRuntime
from wyckoff.cli.runtime.turn import TurnCancelled

__all__ = [
    "MAX_PARALLEL_TOOLS",
    "MAX_TOOL_ROUNDS",
    "SYSTEM_PROMPT",
    "AgentRuntime",
    "Approval",
    "ApprovalPolicy",
    "ConfirmCallback",
    "TurnCancelled",
]
