"""CPU spent by a piece of work itself, for tests that bound a hostile input's cost.

The cyclic garbage collector runs whenever allocations cross its threshold, in whatever code allocates
then, and a full pass walks every object of the process: late in a whole-suite run that is hundreds of
milliseconds charged to an expression that cost two. Its time belongs to the heap, not to the work, so
it is kept out of the measurement (the work itself runs unchanged).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def cpu_spent(clock: Callable[[], float] = time.thread_time) -> Iterator[Callable[[], float]]:
    """``with cpu_spent() as spent: ...`` then ``spent()``: the block's CPU seconds, no garbage collection in it."""
    was_enabled = gc.isenabled()
    gc.disable()
    started = clock()
    ended: list[float] = []
    try:
        yield lambda: (ended[0] if ended else clock()) - started
    finally:
        ended.append(clock())
        if was_enabled:
            gc.enable()
