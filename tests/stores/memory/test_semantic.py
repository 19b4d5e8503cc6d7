"""Hybrid memory search with the packaged MiniLM model, run on numpy (no PyTorch, no model hub)."""

from __future__ import annotations

from pathlib import Path

from toolrig.rig import Rig
from toolrig.stores.memory import MemoryIndex
from toolrig.stores.memory.semantic import fuse


def notes(root: Path) -> None:
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "pets.md").write_text("# Pets\nOur young cat sleeps on the sofa all afternoon.\n")
    (root / "memory" / "infra.md").write_text("# Infra\nThe database runs on Postgres 16 with nightly backups.\n")


def test_fusion_ranks_an_item_found_by_both_lists_above_items_found_by_one() -> None:
    fused = fuse([1, 2, 3], [3, 4])
    assert fused[0][0] == 3
    assert {chunk_id for chunk_id, _ in fused} == {1, 2, 3, 4}


def test_semantic_search_finds_a_paraphrase_that_shares_no_word_with_the_query(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    notes(root)
    plain = MemoryIndex(root, tmp_path / "plain.sqlite")
    plain.refresh()
    assert plain.search("kitten napping") == []
    hybrid = MemoryIndex(root, tmp_path / "hybrid.sqlite", semantic=True)
    try:
        hybrid.refresh()
        hits = hybrid.search("kitten napping", max_results=1)
        assert [(h.file, h.lines) for h in hits] == [("memory/pets.md", "1-2")]
        assert hybrid.search("postgres backups", max_results=1)[0].file == "memory/infra.md"
        (root / "memory" / "pets.md").unlink()
        hybrid.refresh()
        assert [h.file for h in hybrid.search("kitten napping")] == ["memory/infra.md"]
    finally:
        hybrid.close()
        plain.close()


def test_memory_search_tool_uses_semantic_search_when_the_config_turns_it_on(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    notes(root)
    with Rig(root, config={"stores": {"memory": {"semantic": True}}}) as rig:
        output = rig.call_sync("memory_search", {"query": "kitten napping", "max_results": 1}).output
    assert output is not None and str(output["results"]).startswith("1. memory/pets.md lines 1-2")
