from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.otlp import Receiver, start_receiver


@pytest.fixture(scope="session")
def otlp() -> Iterator[Receiver]:
    """One receiver per test process: the exporter's providers are process-wide, one per endpoint."""
    receiver, server = start_receiver()
    yield receiver
    from toolrig.telemetry.setup import shutdown

    shutdown()  # every provider flushed while the receiver still listens (the session ends)
    server.shutdown()
    server.server_close()
