"""How an untrusted workspace's config may change a setting: the rule every field carries.

It sits at the bottom of the layers so that any settings model (the config's own sections, a tool's
``tool_config`` model, the network settings of the sandbox) can mark its fields with
``Annotated[T, Narrow.X]``. A field without a rule is trusted-only: an untrusted workspace's value for it
is ignored with a warning until ``toolrig trust``.
"""

from __future__ import annotations

from enum import Enum


class Narrow(Enum):
    """How an untrusted workspace may change a field; attach with ``Annotated[T, Narrow.X]``."""

    UNION = "union"  # lists that restrict (deny): the workspace may add entries
    INTERSECT = "intersect"  # lists that admit (allow, empty = all): the workspace may only keep entries
    # Lists that grant (write_paths, empty = nothing): the workspace may only drop entries, never add one.
    # Not INTERSECT: there an empty base means "all", so a workspace's list over the default would be adopted.
    GRANT = "grant"
    SUBSET = "subset"  # lists that admit where None = all (an agent's tools): the workspace may set or shrink
    MIN = "min"  # numbers that bound something: the lower value wins
    TRUE_WINS = "true_wins"  # switches that restrict (read_only): the workspace may turn them on
    RESTRICTIVE = "restrictive"  # rule lists: the workspace may add rules that deny or ask, never ones that allow
    GLOBS = "globs"  # gitignore-style lists that restrict: the workspace may add patterns, never '!' negations
    STRICTER = "stricter"  # a choice among levels (approvals.mode, fallback): only a stricter one applies
    RATES = "rates"  # rate limits by tool glob: the workspace may add one or lower one, never raise or drop
    RATE = "rate"  # one rate limit (None = unlimited): the workspace may set or lower it
