"""An MCP connection's opening (``initialize``, then ``tools/list``) answered before the ``mcp`` SDK is imported.

An MCP client starts ``toolrig mcp serve`` at every launch and waits for these two answers; importing the
SDK is about two thirds of the time to them (issue 13 item 12). Both answers follow from the server's
identity, its handlers and its tools, so this module writes them itself, byte for byte as the SDK would:
its result models dump their fields in declaration order and drop ``None``, and every handshake-era
version is shaped by the 2025-11-25 schema (tests compare both paths, version by version and profile by
profile). The stdio transport (``mcp_stdio``) hands every other message to the SDK once it is loaded.

Hostile by default: a message or a tool schema this module cannot vouch for (a field it does not check,
a value the SDK's models might refuse or coerce) gets no answer here; it goes to the SDK, which answers
it (or refuses it) exactly as before. The checks are narrower than the SDK's models, never wider: a
hypothesis test holds that everything accepted here the SDK accepts too, and dumps the same.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from toolrig.policy.hints import hints

if TYPE_CHECKING:
    from toolrig.registry import AnyTool

# Copies of ``mcp_types.version``'s tuples: importing that module imports every SDK type (most of the cost
# this module exists to avoid). A test holds them equal to the SDK's.
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)

_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_CLIENT_INFO_KEYS = frozenset({"name", "version", "title", "description"})
_KNOWN_CAPABILITIES = frozenset({"elicitation", "experimental", "roots", "sampling", "tasks", "extensions"})
_ID_BOUND = 1 << 53  # integers JSON peers agree on


def handshake_capabilities(handlers: Collection[str]) -> dict[str, Any]:
    """``ServerCapabilities`` as the SDK derives them from a low-level server's ``on_*`` handlers.

    Handshake era, default notification options (no ``listChanged``), no experimental capabilities or
    extensions: what ``Server.create_initialization_options()`` gives. Keys in the model's field order.
    """
    capabilities: dict[str, Any] = {}
    if "on_completion" in handlers:
        capabilities["completions"] = {}
    if "on_set_logging_level" in handlers:
        capabilities["logging"] = {}
    if "on_list_prompts" in handlers:
        capabilities["prompts"] = {"listChanged": False}
    if "on_list_resources" in handlers:
        capabilities["resources"] = {"listChanged": False, "subscribe": "on_subscribe_resource" in handlers}
    if "on_list_tools" in handlers:
        capabilities["tools"] = {"listChanged": False}
    return capabilities


def schema_surface(schema: object) -> dict[str, Any] | None:
    """A tool's input or output schema as the SDK's ``InputSchema``/``OutputSchema`` dump it, or None.

    Declared fields first (``$schema``, ``properties``, ``required``, ``type``), then the other keys in
    their order, ``None`` values dropped. None when the SDK's model might refuse or coerce the schema.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object" or type(schema["type"]) is not str:
        return None
    out: dict[str, Any] = {}
    declared = schema.get("$schema")
    if declared is not None:
        if type(declared) is not str:
            return None
        out["$schema"] = declared
    properties = schema.get("properties")
    if properties is not None:
        if type(properties) is not dict or not all(type(v) in (dict, bool) for v in properties.values()):
            return None
        out["properties"] = properties
    required = schema.get("required")
    if required is not None:
        if type(required) is not list or not all(type(name) is str for name in required):
            return None
        out["required"] = required
    out["type"] = "object"
    for key, value in schema.items():
        if key not in ("$schema", "properties", "required", "type") and value is not None:
            out[key] = value
    return out


def tool_wire(tool: AnyTool) -> dict[str, Any] | None:
    """One tool as ``tools/list`` carries it (``mcp_server.mcp_tool`` after the SDK's sieve), or None."""
    inputs = schema_surface(tool.input_schema())
    output = tool.output_schema()
    outputs = schema_surface(output) if output is not None and output.get("type") == "object" else None
    if inputs is None or (outputs is None and output is not None and output.get("type") == "object"):
        return None
    title = tool.display_name
    declared = hints(tool)
    annotations: dict[str, Any] = {}
    for key, value in (
        ("destructiveHint", declared.destructive),
        ("openWorldHint", declared.open_world),
        ("readOnlyHint", declared.read_only),
        ("title", title),
    ):
        if value is not None:
            annotations[key] = value
    if not all(type(value) is (str if key == "title" else bool) for key, value in annotations.items()):
        return None
    wire: dict[str, Any] = {"annotations": annotations}
    if tool.description is not None:
        wire["description"] = tool.description
    wire["inputSchema"] = inputs
    wire["name"] = tool.name
    if outputs is not None:
        wire["outputSchema"] = outputs
    if title is not None:
        wire["title"] = title
    return wire


def plain_request(message: dict[str, Any]) -> bool:
    """A JSON-RPC request with no field beyond the envelope's, and an id every peer reads alike."""
    request_id = message.get("id")
    return (
        message.keys() <= _REQUEST_KEYS
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and (type(request_id) is str or (type(request_id) is int and -_ID_BOUND < request_id < _ID_BOUND))
    )


def vouched_initialize(params: object) -> bool:
    """``initialize`` params the SDK's ``InitializeRequestParams`` takes as they are (narrower, never wider)."""
    if type(params) is not dict or not params.keys() <= {"protocolVersion", "capabilities", "clientInfo"}:
        return False
    info = params.get("clientInfo")
    return (
        type(params.get("protocolVersion")) is str
        and type(info) is dict
        and info.keys() <= _CLIENT_INFO_KEYS
        and {"name", "version"} <= info.keys()
        and all(type(value) is str for value in info.values())
        and type(params.get("capabilities")) is dict
        and all(_plain_capability(value) for key, value in params["capabilities"].items() if key in _KNOWN_CAPABILITIES)
    )


def _plain_capability(value: object) -> bool:
    """Objects all the way down, with ``listChanged`` the one boolean: a shape every capability model takes."""
    if type(value) is not dict:
        return False
    return all(type(item) is bool if key == "listChanged" else _plain_capability(item) for key, item in value.items())


class OpeningAnswers:
    """The answers to ``initialize`` and ``tools/list`` for one connection, as wire bytes, or None for the SDK.

    ``tools`` is called at the first ``tools/list``: the tool modules load then, not before the
    ``initialize`` answer.
    """

    def __init__(
        self,
        *,
        name: str,
        version: str,
        instructions: str | None,
        handlers: Collection[str],
        tools: Callable[[], Iterable[AnyTool]],
    ) -> None:
        self._info = {"name": name, "version": version}
        self._instructions = instructions
        self._capabilities = handshake_capabilities(handlers)
        self._tools = tools
        self._listing: list[dict[str, Any]] | None = None
        self.version: str | None = None  # negotiated by the initialize answered here

    def answer(self, message: dict[str, Any]) -> bytes | None:
        if not plain_request(message):
            return None
        method, params = message["method"], message.get("params")
        if method == "initialize" and self.version is None and vouched_initialize(params):
            asked = params["protocolVersion"]  # type: ignore[index] # vouched just above
            self.version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            result: dict[str, Any] = {"capabilities": self._capabilities}
            if self._instructions is not None:
                result["instructions"] = self._instructions
            result["protocolVersion"] = self.version
            result["serverInfo"] = self._info
            return _frame(message["id"], result)
        if method == "tools/list" and self.version is not None and (params is None or params == {}):
            listing = self.listing()
            return None if listing is None else _frame(message["id"], {"tools": listing})
        return None

    def listing(self) -> list[dict[str, Any]] | None:
        """Every tool's wire form, or None when one of them is not ours to vouch for."""
        if self._listing is None:
            wires = [tool_wire(tool) for tool in self._tools()]
            if any(wire is None for wire in wires):
                return None
            self._listing = [wire for wire in wires if wire is not None]
        return self._listing


def _frame(request_id: int | str, result: dict[str, Any]) -> bytes:
    """A JSON-RPC response line, as ``JSONRPCResponse.model_dump_json`` writes it (the same serializer)."""
    from pydantic_core import to_json

    return to_json({"jsonrpc": "2.0", "id": request_id, "result": result}) + b"\n"
