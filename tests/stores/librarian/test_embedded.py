"""The embedded librarian's Saxon worker: a query's timeout is the query's own, whatever loading Saxon costs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian.embedded import EmbeddedLibrarian

RUNAWAY = "sum(for $i in 1 to 100000, $j in 1 to 100000 return ($i * $j) mod 7)"


@pytest.mark.slow  # waits for two slowed start-ups and one timeout by design
def test_a_query_timeout_counts_the_query_not_the_engine_starting_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every worker takes longer to start than the whole query timeout, as on a loaded machine.
    slow = tmp_path / "slow-start"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text("import time\ntime.sleep(1.5)\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(slow), os.environ.get("PYTHONPATH")])))
    librarian = EmbeddedLibrarian(tmp_path / "lib", timeout=1.0)
    try:
        librarian.store("books", "moby.xml", "<book><title>Moby-Dick</title></book>")
        assert librarian.query("count(collection('books'))", None, {}) == ["1"]  # the first start
        with pytest.raises(ToolError) as caught:
            librarian.query(RUNAWAY, None, {})
        assert caught.value.error_type is ErrorType.TIMEOUT
        assert librarian.query("count(collection('books'))", None, {}) == ["1"]  # the start after the kill
    finally:
        librarian.close()
