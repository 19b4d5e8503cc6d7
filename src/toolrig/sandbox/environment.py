"""The environment a command may see: what the allowlist names, never a secret-looking name by a glob.

Part of ``process`` (its trust model applies).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Mapping, Sequence

DEFAULT_ENV_ALLOW = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR", "HOSTNAME",
)  # fmt: skip
# A glob never lets these through; naming the variable exactly in the allowlist does.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE", re.IGNORECASE)


def scrub_env(
    environ: Mapping[str, str], allow: Sequence[str] = DEFAULT_ENV_ALLOW, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables a child may see: those the allowlist names, never a secret-looking one by glob.

    For ``os.environ`` the answer is kept and reused while the environment is unchanged (one comparison of its
    raw dictionary, in C): judging every variable cost ~50 µs per command.
    """
    raw = getattr(environ, "_data", None) if environ is os.environ else None
    if not isinstance(raw, dict):
        return _scrub(environ, tuple(allow), extra)
    key = (tuple(allow), tuple(extra.items()) if extra else ())
    kept = _SCRUBBED.get(key)
    if kept is not None and kept[0] == raw:
        return dict(kept[1])
    env = _scrub(environ, key[0], extra)
    if len(_SCRUBBED) >= 16:
        _SCRUBBED.clear()
    _SCRUBBED[key] = (dict(raw), env)
    return dict(env)


# (allowlist, extra) -> (the raw os.environ it was judged from, the scrubbed environment)
_SCRUBBED: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], tuple[dict[object, object], dict[str, str]]] = {}


def _scrub(environ: Mapping[str, str], allow: tuple[str, ...], extra: Mapping[str, str] | None) -> dict[str, str]:
    exact, globbed = _env_matcher(allow)
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name in exact or (globbed.match(name) and not SECRET_NAME.search(name)):
            env[name] = value
    env.update(extra or {})
    return env


@functools.lru_cache(maxsize=64)
def _env_matcher(allow: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str]]:
    globs = [fnmatch.translate(p) for p in allow if any(ch in p for ch in "*?[")] or ["(?!)"]
    return frozenset(allow), re.compile("|".join(globs))
