"""Shared test helpers, in one place: sample tools, the scripted model server (fake LLM)."""
