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
    fused = fuse([(1, 9.0), (2, 5.0), (3, 4.0)], [(3, -0.1), (4, -0.9)])
    assert fused[0][0] == 3
    assert {chunk_id for chunk_id, _ in fused} == {1, 2, 3, 4}
    assert all(0.0 <= score <= 1.0 for _, score in fused)


def test_a_match_on_words_alone_does_not_outrank_the_nearest_paragraph() -> None:
    """Reciprocal rank fusion put BM25's first match (often only "the" and "is") above the embeddings' nearest."""
    bm25 = [(7, 2.0), (8, 1.0)]  # 7 shares words with the query, and is far from it in meaning
    vectors = [(1, -0.2), (5, -0.6), (8, -0.9), (7, -1.2)]  # 1 is the paragraph the question is about
    assert fuse(bm25, vectors)[0][0] == 1


def test_an_exact_name_found_by_bm25_wins_over_a_near_miss_of_the_embeddings() -> None:
    bm25 = [(3, 6.0), (9, 0.5)]  # a ticket number, found verbatim
    vectors = [(4, -0.50), (3, -0.55), (9, -1.2)]  # the embeddings rank a similar-looking ticket first
    assert fuse(bm25, vectors)[0][0] == 3


def test_the_hybrid_does_not_rank_by_stopwords(tmp_path: Path) -> None:
    """The question's only shared words with the wrong note are stopwords: the nearest in meaning comes first."""
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "pets.md").write_text("Our young cat sleeps on the sofa all afternoon.\n")
    (root / "memory" / "office.md").write_text("What is the wifi code? It is on the fridge, where it was.\n")
    hybrid = MemoryIndex(root, tmp_path / "hybrid.sqlite", semantic=True)
    try:
        hybrid.refresh()
        assert hybrid.search("where is it that the kitten naps", max_results=1)[0].file == "memory/pets.md"
    finally:
        hybrid.close()


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
