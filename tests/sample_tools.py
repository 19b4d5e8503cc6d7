"""Moved to ``tests.support.sample_tools``: this alias stays only until the branches of this round are merged."""

from tests.support.sample_tools import *  # noqa: F403
