"""Durable tasks, workers and schedules: work that outlives one conversation and one process.

Layout: ``schedule`` (the grammar), ``store`` (toolrig's own records on SQLite or PostgreSQL), ``jobs`` and
``tasks`` (the rules), ``journal`` (each model turn and tool call a recorded step), ``runner`` (one attempt of
a task as an agent run), ``engine`` (the narrow interface to the workflow engine) with ``dbos_engine`` (DBOS
Transact, the only module that imports ``dbos``), ``worker`` (the process loop) and ``access`` (what tools
get through ``ToolContext.durable``). Importing this package imports nothing heavy.
"""
