"""MCP: Wyckoff's tools served to other agents (`wyckoff-mcp`), generated from the registry's
ToolSpecs, with no conversation loop of its own."""
