"""Librarian query latency on 1,000 documents: embedded (Saxon worker + FTS5) vs a BaseX server.

Both run the same guarded XQuery and full-text searches through the store interface, alternately in one
run. Starts its own BaseX server on loopback (``apt-get install -y basex``).

    python benchmarks/librarian.py [--documents N] [--rounds N]
"""

from __future__ import annotations

import argparse
import random
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from _harness import alternate_sync, fmt_seconds, print_table, result_line
from toolrig.stores.librarian.basex import BaseXLibrarian
from toolrig.stores.librarian.embedded import EmbeddedLibrarian

JAR = "/usr/share/java/basex.jar"
WORDS = ["harbour", "tariff", "vessel", "cargo", "customs", "duty", "pilot", "berth", "anchor", "tonnage"]
QUERIES = {
    "count with predicate": "count(collection('acts')/act[xs:integer(@year) > 1950])",
    "lookup by attribute": "declare variable $id external; collection('acts')/act[@id = $id]/title/string()",
    "aggregate per group": (
        "for $y in distinct-values(collection('acts')/act/@decade) order by $y "
        "return $y || ':' || count(collection('acts')/act[@decade = $y])"
    ),
}


def document(n: int, rng: random.Random) -> str:
    year = rng.randint(1850, 2020)
    sections = "".join(f"<section n='{s}'><p>{' '.join(rng.choices(WORDS, k=40))}</p></section>" for s in range(5))
    return f"<act id='a{n}' year='{year}' decade='{year // 10 * 10}'><title>Act {n}</title>{sections}</act>"


def start_basex(home: Path) -> tuple[subprocess.Popen[str], int, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    password = secrets.token_hex(8)
    java = shutil.which("java")
    assert java and Path(JAR).is_file(), "apt-get install -y basex"
    props = [f"-Dorg.basex.path={home}/", f"-Dorg.basex.DBPATH={home}/data", "-cp", JAR]
    subprocess.run([java, *props, "org.basex.BaseX", "-c", f"ALTER PASSWORD admin {password}"], check=True)
    process = subprocess.Popen(
        [java, *props, "org.basex.BaseXServer", "-n127.0.0.1", f"-p{port}"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "Server was started" in line:
            break
    return process, port, password


def main(documents: int, rounds: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    server, port, password = start_basex(tmp / "basex")
    embedded = EmbeddedLibrarian(tmp / "embedded")
    basex = BaseXLibrarian(f"basex://127.0.0.1:{port}", "admin", password, timeout=60)
    try:
        rng = random.Random(3)
        for n in range(documents):
            text = document(n, rng)
            embedded.store("acts", f"a{n}.xml", text)
            basex.store("acts", f"a{n}.xml", text)
        rows = []
        ratios = []
        cases = {name: (query, {"id": "a500"}) for name, query in QUERIES.items()}
        for name, (query, variables) in cases.items():
            used = variables if "$id" in query else {}
            assert embedded.query(query, None, used) == basex.query(query, None, used), name
            series = alternate_sync(
                {
                    "embedded": lambda q=query, v=used: embedded.query(q, None, v),
                    "basex": lambda q=query, v=used: basex.query(q, None, v),
                },
                rounds=rounds,
                per_round=5,
            )
            ratios.append(series["embedded"].median / series["basex"].median)
            rows.append((name, fmt_seconds(series["embedded"].median), fmt_seconds(series["basex"].median)))
        search = alternate_sync(
            {
                "embedded": lambda: embedded.search("tariff berth", None, 10),
                "basex": lambda: basex.search("tariff berth", None, 10),
            },
            rounds=rounds,
            per_round=5,
        )
        rows.append(
            ("full-text search, 10 hits", fmt_seconds(search["embedded"].median), fmt_seconds(search["basex"].median))
        )
        print_table(f"librarian, {documents:,} documents (median per call)", rows, ("query", "embedded", "BaseX"))
        first = cases["count with predicate"][0]
        series = alternate_sync(
            {"embedded": lambda: embedded.query(first, None, {}), "basex": lambda: basex.query(first, None, {})},
            rounds=rounds,
            per_round=5,
        )
        print(
            result_line(
                "librarian",
                series["embedded"].median,
                series["basex"].median,
                search_ratio=round(search["embedded"].median / search["basex"].median, 3),
            )
        )
    finally:
        embedded.close()
        basex.close()
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=15)
    arguments = parser.parse_args()
    main(arguments.documents, arguments.rounds)
