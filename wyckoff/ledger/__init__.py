"""The trade ledger's pure rules: money in integer cents, A-share fees, lot sizes, broker
exports. No database and no market data here; wyckoff/agents/ledger.py applies them."""
