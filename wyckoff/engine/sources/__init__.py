"""Where market data comes from: tushare (token), akshare (optional extra), baostock (no
token), or the synthetic demo market; one module per source, as cli/providers/ has one per
model provider. `choice` says which source is in use, `sync` fills its market store.

tushare is spoken directly over its HTTP API (POST {api_name, token, params, fields}) so
that errors are clear and its URL is settable. baostock and akshare are fetched stock by
stock (`per_code`) in a child process with captured output and a hard timeout (`base`).
Nothing ever falls back to demo silently.
"""
