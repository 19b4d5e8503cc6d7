"""The documented contract of a profile (tests/profiles/data/NAME.json) and the checks every profile shares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolrig.profiles import Profile

DATA = Path(__file__).resolve().parents[1] / "profiles" / "data"
COMPARED = ("type", "default", "enum", "maximum")


def raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


def documented(name: str) -> dict[str, Any]:
    """The documented faces of a profile (keys starting with '_' are notes about the source)."""
    return {key: value for key, value in raw(name).items() if not key.startswith("_")}


def schema_differences(profile: Profile, expected: dict[str, Any]) -> list[str]:
    """How the profile's faces differ from the documented schemas (names, tool, required, types, defaults)."""
    problems: list[str] = []
    for name, spec in expected.items():
        face = profile.face(name)
        if face is None:
            problems.append(f"{name}: missing from the profile")
            continue
        if face.tool != spec["tool"]:
            problems.append(f"{name}: stands for {face.tool}, documented as {spec['tool']}")
        schema = face.input_schema()
        if sorted(schema.get("required", [])) != sorted(spec["required"]):
            problems.append(f"{name}: required {schema.get('required', [])} != {spec['required']}")
        properties = schema.get("properties", {})
        if sorted(properties) != sorted(spec["properties"]):
            problems.append(f"{name}: parameters {sorted(properties)} != {sorted(spec['properties'])}")
        for param, wanted in spec["properties"].items():
            got = properties.get(param, {})
            for key in COMPARED:
                if (key in ("type", "default") or key in wanted) and got.get(key) != wanted.get(key):
                    problems.append(f"{name}.{param}: {key} {got.get(key)!r} != {wanted.get(key)!r}")
    return problems


def result_differences(spec: Any, output: dict[str, Any]) -> list[str]:
    """Which documented result keys a face's output lacks (``spec``: a key list, or {"type": .., "file": [..]})."""
    if isinstance(spec, dict):
        problems = [] if output.get("type") == spec["type"] else [f"type {output.get('type')!r} != {spec['type']!r}"]
        return problems + [f"file.{key} missing" for key in spec["file"] if key not in output.get("file", {})]
    return [f"{key} missing" for key in spec if key not in output]
