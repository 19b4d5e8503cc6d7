"""A worker process for the multi-worker tests: ``python -m tests.support.worker_main ROOT DATABASE_URL LLM_URL``.

The real ``Worker`` and DBOS, with the test tools and the scripted model; prints READY once it takes work.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path


def main() -> None:
    root, url, llm_url = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    from tests.support.durable import access_for, install_rig
    from toolrig.workers.worker import Worker

    class _Llm:
        anthropic_url = llm_url

    from tests.support.durable import config

    cfg = config(_Llm(), database_url=url, dead_after_seconds=3)  # type: ignore[arg-type]
    install_rig(cfg)
    access = access_for(root, cfg)
    worker = Worker(access, concurrency=concurrency)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    if not worker.ready.wait(120):
        sys.exit("worker did not start")
    print("READY", worker.worker_id, flush=True)
    thread.join()


if __name__ == "__main__":
    main()
