from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.file_helpers import Caller


@pytest.fixture
def call(workspace: Path) -> Caller:
    return Caller(workspace)
