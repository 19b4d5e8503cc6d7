"""Checkpoints: the file tools' changes of each agent session, kept so a person can turn them back.

``log`` records (before every write, through the change journal's ``record`` hook), ``rewind`` puts a
session's files back as they were before a turn, ``watch`` finds what commands changed (not restorable).
The Python API is ``rewind(workspace, session_id, turn)`` and ``turns(Checkpoints(workspace), session_id)``.
"""

from __future__ import annotations

from toolrig.stores.checkpoints.log import Checkpoints, Limits, Mark, Recorder
from toolrig.stores.checkpoints.rewind import RewindPlan, rewind, turns

__all__ = ["Checkpoints", "Limits", "Mark", "Recorder", "RewindPlan", "rewind", "turns"]
