"""A child process that runs XQuery with Saxon, so a runaway query can be killed without killing toolrig.

Trust model: the parent sends queries that passed the guard and the paths of library documents only;
those are opened here from ``root`` without following symlinks (the library is in a state dir a cloned
repository may have seeded). Saxon may open no URI at all (``allowedProtocols`` is empty) and the
environment is scrubbed.

Protocol: one JSON object per line each way. Request ``{"query", "root", "documents": {var: [paths
relative to root]}, "variables": {name: value}}``; reply ``{"items": [...]}`` or ``{"error": message}``.
Once Saxon is loaded, before the first request, the worker says ``{"ready": true}``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

_XML_DECLARATION = "<?xml"
READY = '{"ready": true}'


class Engine:
    def __init__(self) -> None:
        from saxonche import PySaxonProcessor

        self.proc = PySaxonProcessor(license=False)
        self.proc.set_configuration_property("http://saxon.sf.net/feature/allowedProtocols", "")
        self.xquery = self.proc.new_xquery_processor()
        self.xquery.set_query_base_uri("urn:toolrig:librarian/")
        self._documents: dict[str, tuple[tuple[int, int], Any]] = {}
        self._sequences: dict[tuple[tuple[str, int, int], ...], Any] = {}

    def document(self, root: str, path: str) -> tuple[tuple[str, int, int], Any]:
        from pathlib import Path

        from toolrig.sandbox.fdwalk import open_regular, read_fd

        fd = open_regular(Path(root), path.split("/"))
        try:
            info = os.fstat(fd)
            stamp = (info.st_mtime_ns, info.st_size)
            key = f"{root}/{path}"
            cached = self._documents.get(key)
            if cached is None or cached[0] != stamp:
                node = self.proc.parse_xml(xml_text=read_fd(fd).decode("utf-8"))
                cached = (stamp, node)
                self._documents[key] = cached
        finally:
            os.close(fd)
        return (key, *stamp), cached[1]

    def sequence(self, root: str, paths: list[str]) -> Any:
        loaded = [self.document(root, path) for path in paths]
        key = tuple(stamp for stamp, _ in loaded)
        found = self._sequences.get(key)
        if found is None:
            # PyXdmValue has no constructor: start from the first node's value and append the rest.
            self.xquery.clear_parameters()
            self.xquery.set_parameter("first", loaded[0][1])
            self.xquery.set_query_content("declare variable $first external; $first")
            found = self.xquery.run_query_to_value()
            for _, node in loaded[1:]:
                found.add_xdm_item(node)
            if len(self._sequences) > 64:
                self._sequences.clear()
            self._sequences[key] = found
        return found

    def value(self, value: Any) -> Any:
        make = self.proc
        if isinstance(value, bool):
            return make.make_boolean_value(value)
        if isinstance(value, int):
            return make.make_integer_value(value)
        if isinstance(value, float):
            return make.make_double_value(value)
        return make.make_string_value(str(value))

    def run(self, request: dict[str, Any]) -> list[str]:
        xquery = self.xquery
        bindings = {name: self.sequence(request["root"], paths) for name, paths in request["documents"].items()}
        xquery.clear_parameters()
        for name, value in bindings.items():
            xquery.set_parameter(name, value)
        for name, value in request["variables"].items():
            xquery.set_parameter(name, self.value(value))
        xquery.set_query_content(request["query"])
        result = xquery.run_query_to_value()
        if result is None:
            return []
        return [render(result.item_at(i)) for i in range(result.size)]


def render(item: Any) -> str:
    if item.is_node:
        text = str(item)
        if text.startswith(_XML_DECLARATION):
            text = text[text.index("?>") + 2 :]
        return text
    return str(item)


def main() -> None:
    engine = Engine()
    out = sys.stdout
    out.write(READY + "\n")  # the parent's query timeout starts only now, not while Saxon loads
    out.flush()
    for line in sys.stdin:
        try:
            reply: dict[str, Any] = {"items": engine.run(json.loads(line))}
        except Exception as exc:
            reply = {"error": " ".join(str(exc).split())}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
