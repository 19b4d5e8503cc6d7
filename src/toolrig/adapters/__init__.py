"""Adapters turn a consumer's call into (tool name, JSON arguments) and a ToolResult into its shape.

They see tool definitions and the registry only, never a specific tool.
"""
