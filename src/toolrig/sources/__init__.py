"""Where tools come from besides the built-in groups: MCP servers (``mcp_client``), entry-point plugins.

A source turns something outside into ``Tool`` objects the registry holds; what calls them (the executor)
never knows where they came from. Sources sit beside tools, below the Rig and the adapters.
"""
