"""A hook chain as an agent run passes its own (``CallScope.hooks``), for calls made directly in a test."""

from __future__ import annotations

from toolrig.hooks import HookChain
from toolrig.scope import CallScope


def scope_with_hooks(chain: HookChain) -> CallScope:
    """The scope of a run whose own hooks are ``chain``: pass it as ``rig.call(..., scope=...)``."""
    return CallScope(hooks=chain)
