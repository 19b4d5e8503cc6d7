"""BERT's uncased WordPiece tokenizer in plain Python, so semantic memory needs neither PyTorch nor Rust wheels.

It follows Hugging Face's ``BertNormalizer`` + ``BertPreTokenizer`` + ``WordPiece`` (the fast tokenizer that
all-MiniLM-L6-v2 was trained and measured with) step by step: drop NUL, U+FFFD and every "other" (C*)
character, turn whitespace into spaces, pad CJK ideographs, strip accents (NFD, drop Mn), lowercase, split
on whitespace and isolate punctuation, then greedy longest-match word pieces. ``tests/stores/memory/
minilm_reference.json`` holds the Rust tokenizer's ids for awkward text; the tests compare against them.
Hostile text costs at most linear work: a word longer than 100 characters is one ``[UNK]`` without a scan.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

MAX_WORD_CHARS = 100  # HF's max_input_chars_per_word: longer words are [UNK] outright
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


def _is_punctuation(char: str) -> bool:
    # ASCII symbols such as $ + < = > ^ ` | ~ are not Unicode punctuation, but BERT splits them all the same.
    return (char.isascii() and not char.isalnum() and char.isprintable() and not char.isspace()) or (
        unicodedata.category(char).startswith("P")
    )


def _is_whitespace(char: str) -> bool:
    # Rust's char::is_whitespace (the Unicode White_Space property); the C* ones among them are already gone.
    return char in "\t\n\r " or unicodedata.category(char) in ("Zs", "Zl", "Zp")


def _normalized(text: str) -> Iterator[str]:
    """BertNormalizer, character by character (lazily, so a tokenizer that has its 256 tokens stops reading)."""
    for char in text:
        if char in "\t\n\r":
            yield " "
        elif char == "\ufffd" or unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co"):
            continue  # NUL and the other control characters; unassigned code points (Cn) stay, as in Rust
        elif _is_whitespace(char):
            yield " "
        elif char.isascii():
            yield char.lower()
        else:
            cjk = _is_cjk(ord(char))  # padded before NFD, which maps compatibility ideographs to unified ones
            if cjk:
                yield " "
            for part in unicodedata.normalize("NFD", char):  # strip accents (drop Mn), then lowercase char by
                if unicodedata.category(part) != "Mn":  # char as Rust does: no final-sigma rule
                    yield part.lower()
            if cjk:
                yield " "


def normalize(text: str) -> str:
    """Clean, pad CJK, strip accents and lowercase, in the order BertNormalizer does."""
    return "".join(_normalized(text))


def pre_tokenize(text: Iterable[str]) -> Iterator[str]:
    """Words split on whitespace, each punctuation character a word of its own (lazily: callers stop early)."""
    current: list[str] = []
    for piece in text:
        for char in piece:
            if _is_whitespace(char) or _is_punctuation(char):
                if current:
                    yield "".join(current)
                    current = []
                if not _is_whitespace(char):
                    yield char
            elif len(current) <= MAX_WORD_CHARS:  # longer is [UNK] however long: keep no more of it
                current.append(char)
    if current:
        yield "".join(current)


class WordPiece:
    """Token ids for text, as ``[CLS] pieces [SEP]`` truncated to ``max_length``."""

    def __init__(self, vocab_file: Path, max_length: int = 256) -> None:
        lines = vocab_file.read_text(encoding="utf-8").splitlines()
        self.vocab = {token: index for index, token in enumerate(lines)}
        self.unk, self.cls, self.sep = self.vocab["[UNK]"], self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.max_length = max_length
        self.longest = max(len(token) for token in lines)

    def pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self.unk]
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = min(len(word), start + self.longest)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    break
                end -= 1
            if end == start:
                return [self.unk]  # one piece missing makes the whole word unknown
            start = end
        return ids

    def encode(self, text: str) -> list[int]:
        budget = self.max_length - 2
        ids: list[int] = []
        for word in pre_tokenize(_normalized(text)):
            ids.extend(self.pieces(word))
            if len(ids) >= budget:
                break
        return [self.cls, *ids[:budget], self.sep]
