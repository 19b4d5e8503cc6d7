"""Where tools come from besides the built-in groups: MCP servers (``mcp_client``), entry-point plugins.

A source turns something outside into ``Tool`` objects the registry holds; what calls them (the executor)
never knows where they came from. Sources sit beside tools, below the Rig and the adapters.
"""

# The most one MCP message may be, either way: our server reads no more of a stdio line or an HTTP body, our
# client no more of a reply (mcp_bounded), an SSE event or a stdio line (mcp_stdio_client). The TypeScript SDK's
# cap on a message it reads (MAXIMUM_MESSAGE_SIZE, "4mb"), and the Python SDK's on an HTTP body; it reads stdio
# lines and JSON replies whole.
# Here, not in mcp_transport, so the stdio server's start-up reads it without loading the client.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
