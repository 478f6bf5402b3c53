"""Everything a person or another program talks to, and the agent loop behind it.

Front ends (`tui/`, `commands/`, `launcher.py`, `app.py`) sit on top; `agent.py` assembles an
agent (config, provider, tools, store, session); `runtime.py` runs a turn and yields the
RuntimeEvents of `events.py`; `tools.py` is the tool contract every tool implements;
`providers/` stream Chunks from the model SDKs and never import the runtime; the runtime's
helpers (chat log, compaction, background tasks, sub-agents, loop guard, egress, traces) and the
local tools (`local_tools/`) live beside them. Imports point down that order; ARCHITECTURE.md
has the whole map.
"""
