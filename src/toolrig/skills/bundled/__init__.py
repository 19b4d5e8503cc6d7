"""Skills toolrig ships (seed 003 names them): our own text, in the Agent Skills format, copied on request.

``toolrig skills install NAME`` copies a folder from here into the user's or the workspace's skills folder;
nothing here is offered to a model until it is installed there, so installing is the person's choice.
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).parent

SHIPPED: dict[str, str] = {
    "mintlify": "Write and maintain a Mintlify documentation site (MDX pages, docs.json, preview, link check).",
    "doc-reader": "Answer from a library's documentation, not from memory: find, read, check the version, cite.",
    "doc-author": "Write documentation people can follow: the right kind of page, runnable examples, checked.",
}


def install_skill(name: str, target: Path, *, force: bool = False) -> Path:
    """Copy the shipped skill ``name`` to ``target/name``; an existing folder is kept unless ``force``."""
    if name not in SHIPPED:
        raise KeyError(name)
    destination = target / name
    if destination.exists() or destination.is_symlink():
        if not force:
            raise FileExistsError(f"{destination} exists already")
        if destination.is_symlink() or not destination.is_dir():
            destination.unlink()
        else:
            shutil.rmtree(destination)
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(HERE / name, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination
