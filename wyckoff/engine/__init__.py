"""The deterministic Wyckoff engine: no model, no CLI, no network except the data sources.

Market data comes from a vendor, the user's files or the synthetic demo market (`sources`,
`bar_import`, `demo`; factors in `adjustment`) into the DuckDB market store (`market_store`),
loads into a `Panel` of (days, stocks) arrays (`panel`, `panel_cache`), and everything else
reads that panel: indicators, the four-layer funnel and its triggers, the market regime, one
stock's health, strategy decisions, the point-in-time backtest with A-share limits and
calendar, and sweeps (in process or on Dask). Every threshold is in `thresholds.EngineConfig`.
The engine never imports `wyckoff.cli`; docs/engine.md and docs/backtest.md hold its rules.
"""
