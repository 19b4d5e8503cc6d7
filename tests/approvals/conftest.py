from __future__ import annotations

# The run-level approval tests (tests/approvals/test_routing.py) drive the agent loop against the fake LLM.
from tests.agent.conftest import make_rig, provider

__all__ = ["make_rig", "provider"]
