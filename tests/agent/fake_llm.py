"""Moved to ``tests.support.fake_llm``: this alias stays only until the branches of this round are merged."""

import sys

from tests.support import fake_llm

sys.modules[__name__] = fake_llm
