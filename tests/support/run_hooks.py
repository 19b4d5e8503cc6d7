"""A hook chain as the agent loop installs one for its run (the ``run_hooks`` context variable), for a block."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from toolrig.hooks import HookChain, run_hooks


@contextmanager
def hooks_of_the_run(chain: HookChain) -> Iterator[HookChain]:
    token = run_hooks.set(chain)
    try:
        yield chain
    finally:
        run_hooks.reset(token)
