"""Key-value tools: small JSON facts an agent keeps between calls and runs, scoped by namespace.

Trust model: keys, namespaces and values are the model's; the store checks sizes and the namespace
pattern. The namespace defaults to the calling agent's id, so agents do not overwrite each other by accident.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput

_NAMESPACE_HELP = "Namespace to use; defaults to your agent id (or 'default'). Letters, digits, '_', '.', '@', '-'."


def _namespace(given: str | None, ctx: ToolContext) -> str:
    return given or ctx.memory_owner() or "default"


class KeyValueGetInput(ToolInput):
    key: str = Field(description="The key to read.")
    namespace: str | None = Field(default=None, description=_NAMESPACE_HELP)


class KeyValueGetOutput(ToolOutput):
    found: bool = Field(description="False when the key is absent or its ttl ran out.")
    value: Any = Field(default=None, description="The stored JSON value (null when not found).")


class KeyValueGet(Tool[KeyValueGetInput, KeyValueGetOutput]):
    name = "key_value_get"
    group = "kv"
    read_only = True
    description = (
        "Read a JSON value you stored earlier with key_value_set. Returns found=false (not an error) when the "
        "key does not exist or has expired."
    )

    def execute(self, input: KeyValueGetInput, ctx: ToolContext) -> KeyValueGetOutput:
        found, value = ctx.stores.kv.get(_namespace(input.namespace, ctx), input.key)
        return KeyValueGetOutput(found=found, value=value)

    def subjects(self, input: KeyValueGetInput) -> list[str]:
        return [f"{input.namespace or ''}/{input.key}"]


class KeyValueSetInput(ToolInput):
    key: str = Field(description="The key, up to 512 characters, e.g. 'project/status'.")
    value: Any = Field(description="Any JSON value: string, number, boolean, null, list or object (max 1 MB).")
    namespace: str | None = Field(default=None, description=_NAMESPACE_HELP)
    ttl: float | None = Field(default=None, gt=0, description="Seconds until the value expires; omit to keep it.")


class KeyValueSetOutput(ToolOutput):
    namespace: str
    key: str
    expires_in_seconds: float | None = Field(description="The ttl that was set, or null when it never expires.")


class KeyValueSet(Tool[KeyValueSetInput, KeyValueSetOutput]):
    name = "key_value_set"
    group = "kv"
    description = (
        "Store a JSON value under a key, replacing any previous value. Use it for small facts to remember "
        "between steps or runs (progress, settings, ids); use memory_write for notes you want to search. "
        "Optional ttl makes the value expire after that many seconds."
    )

    def execute(self, input: KeyValueSetInput, ctx: ToolContext) -> KeyValueSetOutput:
        namespace = _namespace(input.namespace, ctx)
        ctx.stores.kv.set(namespace, input.key, input.value, input.ttl)
        return KeyValueSetOutput(namespace=namespace, key=input.key, expires_in_seconds=input.ttl)

    def subjects(self, input: KeyValueSetInput) -> list[str]:
        return [f"{input.namespace or ''}/{input.key}"]


class KeyValueDeleteInput(ToolInput):
    key: str = Field(description="The key to delete.")
    namespace: str | None = Field(default=None, description=_NAMESPACE_HELP)


class KeyValueDeleteOutput(ToolOutput):
    deleted: bool = Field(description="False when there was nothing to delete.")


class KeyValueDelete(Tool[KeyValueDeleteInput, KeyValueDeleteOutput]):
    name = "key_value_delete"
    group = "kv"
    destructive = True
    description = "Delete a key and its value. Deleting a key that does not exist is not an error (deleted=false)."

    def execute(self, input: KeyValueDeleteInput, ctx: ToolContext) -> KeyValueDeleteOutput:
        return KeyValueDeleteOutput(deleted=ctx.stores.kv.delete(_namespace(input.namespace, ctx), input.key))

    def subjects(self, input: KeyValueDeleteInput) -> list[str]:
        return [f"{input.namespace or ''}/{input.key}"]


TOOLS = [KeyValueGet(), KeyValueSet(), KeyValueDelete()]
