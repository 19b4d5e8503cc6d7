"""Moved to ``tests.support.fake_llm``: this alias stays only until the branches of this round are merged."""

from tests.support.fake_llm import *  # noqa: F403
