"""Long-term memory (CLI and TUI only): what the user's trading discipline is, across sessions.
The runtime asks for recalled memories each turn and hands finished conversations to
extraction; the memories live in the state db beside the chat log. Memory never decides
approvals (`policy`).

store      the `agent_memory` table and its indexes (FTS5 trigram, 2-character terms, codes)
codes      stock codes and names in a text, from the bundled A-share list
recall     which memories a message brings into this turn (`build_memory_context`)
dedup      the two-stage check before any write, and supersession
extraction L1 memories from a finished conversation or a compaction's head; "记住：..."
layers     L2 playbooks and L3 persona summarised from the latest L1s
tagged     the `[标签] 内容` lines both read from the model's replies
"""
