"""Durable schedules and tasks at the tools' level: work that outlives one conversation and one process.

Layout: ``schedule`` (the grammar), ``store`` (toolrig's own records on SQLite or PostgreSQL), ``jobs`` and
``tasks`` (the rules), ``api`` (the protocols tools import), ``access`` (what tools get through
``ToolContext.durable``) and ``traces`` (the trace each task was queued under). Running a task as an agent
run (the runner, the step journal, the engine, the worker process) sits above the agent, in
``toolrig.workers``. Importing this package imports nothing heavy.
"""
