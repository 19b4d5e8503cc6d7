"""Subagents: agent types, a child's narrowed permissions, and the hub that runs children (docs/agents.md)."""
