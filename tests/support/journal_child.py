"""The child of the kill -9 test: imported once by a forkserver, so each killed child starts warm."""

from __future__ import annotations

from typing import Any

import toolrig.policy.audit  # noqa: F401  (imported by the first call otherwise)
from toolrig import Rig
from toolrig.registry import Registry

Registry.default(entry_points=False).list()  # imports every built-in tool group before the fork, not in each child


def apply(root: str, patch: str, ready: Any) -> None:  # pragma: no cover - runs in a forked child
    rig = Rig(root, config={})
    rig.call_sync("apply_patch", {"patch": "*** Begin Patch\n*** End Patch"})  # warm: the first call's set-up
    ready.send(True)
    result = rig.call_sync("apply_patch", {"patch": patch})
    assert not result.is_error, result.message
