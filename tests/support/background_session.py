"""Calling tools as one run that owns background commands would (tests of background commands)."""

from __future__ import annotations

import json
from typing import Any

from toolrig.rig import Rig
from toolrig.sandbox.background import BackgroundJobs
from toolrig.scope import CallScope


class Session:
    """A Rig and a run's background owner, calling tools as that run would."""

    def __init__(self, rig: Rig, jobs: BackgroundJobs) -> None:
        self.rig, self.jobs = rig, jobs
        self.scope = CallScope(session_id="s1", background=jobs)

    async def call(self, name: str, **args: Any) -> dict[str, Any]:
        result = await self.rig.call(name, args, scope=self.scope)
        data = json.loads(result.to_json())
        assert isinstance(data, dict)
        return data

    async def ok(self, name: str, **args: Any) -> dict[str, Any]:
        data = await self.call(name, **args)
        assert not data["is_error"], data
        return dict(data["output"])
