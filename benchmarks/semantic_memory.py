"""Semantic memory: recall on paraphrased questions, and embedding throughput, numpy backend vs PyTorch.

The corpus is 40 one-paragraph notes, each with a question that says the same thing in other words (few
shared words, so BM25 alone misses many), and 40 ticket notes asked for by their number (where words win:
the embeddings confuse one ticket number with another). Recall@1 and recall@3 are measured on each set for
BM25 alone, the hybrid search (BM25 + MiniLM vectors fused) and the vectors alone, with each backend.
Throughput: sentences per second embedding 256 memory-sized paragraphs (~40 words), alternated between the
backends over several rounds.

The PyTorch column needs ``pip install torch sentence-transformers`` (no longer part of the ``semantic``
extra); without it only the numpy backend is measured.

    python benchmarks/semantic_memory.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from _harness import Series, print_table, result_line
from toolrig.stores.memory import MemoryIndex, semantic
from toolrig.stores.memory.minilm import MiniLM, model_dir

NOTES = [
    ("Our young cat sleeps on the sofa all afternoon.", "where does the kitten nap during the day"),
    ("The database runs on Postgres 16 with nightly backups.", "which SQL server do we use and is it saved"),
    ("Alice moved the release deadline to Friday.", "when is the ship date now"),
    ("The office coffee machine is broken; use the kettle on the third floor.", "how can I make a hot drink at work"),
    ("Bob is allergic to peanuts, so order the satay without sauce.", "food restrictions for the team lunch"),
    ("Deploys go out through GitHub Actions after two approvals.", "how does code reach production"),
    ("The staging cluster is shut down every weekend to save money.", "why is the test environment off on Saturday"),
    ("Carol prefers to be called in the morning, never after 6 pm.", "best time to phone her"),
    ("Invoices are paid on the 15th of each month by the finance team.", "when do suppliers get their money"),
    ("The garden hose leaks at the tap; a new washer is in the shed.", "fix the dripping water pipe outside"),
    ("Our flight to Lisbon leaves at 7:40 from terminal 2.", "what time is the plane to Portugal"),
    ("The API rate limit is 100 requests per minute per key.", "how many calls can a client make"),
    ("Passwords rotate every 90 days; the vault sends a reminder.", "how often must credentials change"),
    ("Dentist appointment moved to Tuesday the 12th at 3 pm.", "when do I see the doctor for my teeth"),
    ("The printer on floor two only works with the blue cable.", "trouble connecting to the copier upstairs"),
    ("Dave is on parental leave until March.", "who is away caring for a new baby"),
    ("The search service caches results for ten minutes.", "how long are query answers kept"),
    ("We chose Rust for the parser because of memory safety.", "why that language for parsing"),
    ("Grandma's birthday dinner is at the Italian place on Elm Street.", "where is the family celebration meal"),
    ("Logs older than 30 days are deleted automatically.", "how long do we keep records of events"),
    ("The car needs new winter tyres before December.", "vehicle maintenance for the cold season"),
    ("Eve owns the billing microservice and its on-call rota.", "who is responsible for payments code"),
    ("Monthly rent is 1,450 euros, due on the first.", "how much is the apartment per month"),
    ("The Wi-Fi password for guests is written on the fridge.", "how do visitors get online"),
    ("Unit tests must finish in under ten minutes in CI.", "time budget for the automated checks"),
    ("The conference talk is about streaming compression.", "topic of my presentation at the event"),
    ("Our dog must not eat grapes or chocolate.", "foods that are toxic to the puppy"),
    ("The VPN disconnects if the laptop sleeps; reconnect manually.", "lost the secure tunnel after closing the lid"),
    ("Frank speaks Japanese and can translate the contract.", "someone who knows the language of Tokyo"),
    ("The team retrospective happens every other Thursday.", "how often do we review how the sprint went"),
    ("Backups are encrypted with a key stored offline in the safe.", "where is the secret for the archives kept"),
    ("The kitchen tap drips; the plumber comes on Monday.", "when will someone repair the sink faucet"),
    ("Grace runs the marathon in April and trains on Sundays.", "who is preparing for a long race"),
    ("The mobile app supports iOS 16 and newer only.", "minimum iPhone software version"),
    ("We pay 12 dollars a month for the domain and DNS hosting.", "cost of the website name"),
    ("The heating turns on at 6 am and off at 10 pm.", "schedule of the radiators"),
    ("Henry broke his wrist skiing and cannot type this week.", "why is he slow to answer messages"),
    ("Feature flags live in LaunchDarkly, not in the config file.", "where are toggles for new functionality"),
    ("The library books are due back on the 3rd.", "deadline to return what I borrowed"),
    ("Ivy is the only one with the admin password for the router.", "who can change the network settings at home"),
]
_SUBJECTS = [
    "the vendor firmware",
    "a flaky login test",
    "the billing export",
    "disk space on the runner",
    "the mobile crash",
    "a memory leak in the worker",
    "the DNS migration",
    "slow search queries",
    "the expired certificate",
    "the invoice template",
]
_STATES = [
    "is blocked on",
    "was fixed by reverting",
    "waits for a decision about",
    "was reopened because of",
    "is assigned to",
]


def tickets(seed: int = 5) -> list[tuple[str, str]]:
    """Notes that differ mostly by a ticket number, each asked for by that number."""
    rng = random.Random(seed)
    numbers = [f"{rng.choice(['OPS', 'WEB', 'API', 'INF'])}-{rng.randint(1000, 9999)}" for _ in range(40)]
    return [
        (f"Ticket {number} {rng.choice(_STATES)} {rng.choice(_SUBJECTS)}.", f"what is going on with {number}")
        for number in numbers
    ]


SETS = {"paraphrases": NOTES, "ticket numbers": tickets()}
WORDS = "the a of to and in is it for on with as at by from our we this that be are was".split()  # noqa: SIM905


def corpus(root: Path) -> None:
    (root / "memory").mkdir(parents=True)
    for number, (note, _) in enumerate(pair for pairs in SETS.values() for pair in pairs):
        (root / "memory" / f"note{number:02d}.md").write_text(note + "\n")


def path_of(index: MemoryIndex, chunk_id: int) -> str:
    row = index.db.read(lambda conn: conn.execute("SELECT path FROM chunks WHERE rowid = ?", (chunk_id,)).fetchone())
    return str(row[0])


def recall(index: MemoryIndex, *, vectors_only: bool = False) -> list[str]:
    """Recall@1 and @3 on each question set, as table cells."""
    cells: list[str] = []
    offset = 0
    for pairs in SETS.values():
        first = top3 = 0
        for number, (_, question) in enumerate(pairs, start=offset):
            if vectors_only:  # the embeddings alone, without BM25's list fused in
                assert index._semantic is not None
                files = [path_of(index, chunk_id) for chunk_id, _ in index._semantic.nearest(question, 3)]
            else:
                files = [hit.file for hit in index.search(question, max_results=3)]
            first += files[:1] == [f"memory/note{number:02d}.md"]
            top3 += f"memory/note{number:02d}.md" in files
        cells.append(f"{first / len(pairs):.3f} / {top3 / len(pairs):.3f}")
        offset += len(pairs)
    return cells


class TorchModel:
    """sentence-transformers behind the numpy backend's interface, for the comparison only."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(model_dir()), device="cpu")

    def encode(self, texts: list[str]) -> Any:
        vectors = self.model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return vectors.astype(np.float32)


def backends() -> dict[str, Callable[[], Any]]:
    found: dict[str, Callable[[], Any]] = {"numpy": lambda: MiniLM(model_dir())}
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        print("(sentence-transformers is not installed: the PyTorch column is left out)")
    else:
        found["pytorch"] = TorchModel
    return found


def paragraphs(count: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    vocabulary = WORDS + [word.lower().strip(".,;") for note, _ in NOTES for word in note.split()]
    return [" ".join(rng.choices(vocabulary, k=40)) + "." for _ in range(count)]


def main(rounds: int) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the PyTorch path reads the same packaged folder
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    models = {name: make() for name, make in backends().items()}
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        corpus(root)
        plain = MemoryIndex(root, Path(tmp) / "plain.sqlite")
        plain.refresh()
        rows.append(("BM25 only", *recall(plain), "-"))
        plain.close()
        texts = paragraphs(256)
        speed = {name: Series(name) for name in models}
        for name, model in models.items():
            semantic._model = model  # the process-wide model, swapped for this comparison
            hybrid = MemoryIndex(root, Path(tmp) / f"{name}.sqlite", semantic=True)
            hybrid.refresh()
            rows.append((f"hybrid, {name}", *recall(hybrid), ""))
            rows.append((f"vectors, {name}", *recall(hybrid, vectors_only=True), ""))
            hybrid.close()
        for _ in range(rounds):  # alternated, so both backends see the same machine load
            for name, model in models.items():
                start = time.perf_counter()
                model.encode(texts)
                speed[name].samples.append(time.perf_counter() - start)
    rate = {name: f"{len(texts) / series.median:.1f}" for name, series in speed.items()}
    rows = [(*row[:3], rate[row[0].split(", ")[1]] if row[3] == "" else row[3]) for row in rows]
    print_table(
        f"Semantic memory: {len(NOTES)} paraphrased questions, {len(SETS['ticket numbers'])} by ticket number; "
        f"{len(texts)} paragraphs x {rounds} rounds",
        rows,
        ("search", *(f"{name}: recall@1 / @3" for name in SETS), "sentences/s (median)"),
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if "pytorch" in speed:
        print(result_line("semantic_embed", speed["numpy"].median, speed["pytorch"].median))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    main(parser.parse_args().rounds)
