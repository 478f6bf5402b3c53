"""MCP both ways. Out: `wyckoff-mcp` serves the registry's ToolSpecs to other agents with no
conversation loop of its own (`main`, `server`). In: tools of MCP servers the user added join
the agent's registry, their descriptions and schemas marked and capped as outside text
(`client`, `remote_schema`). docs/mcp.md has the details.
"""
