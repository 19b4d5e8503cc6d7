"""``toolrig serve``: agents over HTTP (a JSON API and live event streams) and a web page for people, one port.

Runs go through the same ``run_agent`` as the CLI, each with its own web approval channel; the guard in
``auth`` (built on ``adapters.http_auth``) decides who may use any of it.
"""
