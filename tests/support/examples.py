"""How many examples a property test tries: all it asks for in CI and a plain `pytest`, a tenth in the fast
loop (`pytest -m "not slow"`, which loads the `toolrig-fast` hypothesis profile; tests/conftest.py)."""

from __future__ import annotations

from hypothesis import settings

FAST_PROFILE = "toolrig-fast"
SHARE = 10  # the fast loop tries 1/SHARE of a test's examples ...
FLOOR = 10  # ... but at least this many (or all, if the test asks for fewer)


def fewer(full: int) -> int:
    """``full`` cut to the fast loop's share; every profile but the fast one keeps ``full``."""
    return max(min(full, FLOOR), full // SHARE)


def examples(full: int) -> int:
    """The ``max_examples`` for a test that builds its own ``@settings`` at run time (an inner ``@given``):
    the conftest cuts only the counts of collected property tests."""
    return fewer(full) if settings.get_current_profile_name() == FAST_PROFILE else full
