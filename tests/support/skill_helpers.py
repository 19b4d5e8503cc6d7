"""Shared set-up for skill tests: the sample skills of tests/data/skills placed where discovery looks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from toolrig.config import set_trust

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "skills"


def isolate_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh $HOME, so the machine's own ~/.agents/skills never joins a test's catalog."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def install_samples(workspace: Path, folder: str = ".agents/skills", *, trusted: bool = True) -> Path:
    target = workspace / folder
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SAMPLES, target)
    if trusted:
        set_trust(workspace)
    return target
