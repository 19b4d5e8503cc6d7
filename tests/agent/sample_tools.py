"""Moved to ``tests.support.sample_tools``: this alias stays only until the branches of this round are merged."""

import sys

from tests.support import sample_tools

sys.modules[__name__] = sample_tools
