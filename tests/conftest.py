from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from tests.servers import HttpServer, SmtpServer, start_smtp
from toolrig.rig import Rig

if TYPE_CHECKING:
    from tests.support.fake_llm import FakeLLM

Call = Callable[..., dict[str, Any]]

# Hypothesis's deadline and its "input generation is slow" health check are wall-clock assertions: on a
# loaded 2-core machine they fail tests whose behaviour is fine. The suite makes no timed assertions.
settings.register_profile("toolrig", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("toolrig")


@pytest.fixture(autouse=True)
def toolrig_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own user-level toolrig home, so no test reads or writes the real ~/.toolrig."""
    home = tmp_path_factory.mktemp("toolrig-home")
    monkeypatch.setenv("TOOLRIG_HOME", str(home))
    yield home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def rig(workspace: Path) -> Iterator[Rig]:
    with Rig(workspace) as opened:
        yield opened


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def governed_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Rig built in the test (the CLI's too) gets the built-in catalog plus the governed test tools."""
    from tests.policy.governed_tools import catalog
    from toolrig.registry import Registry

    monkeypatch.setattr(Registry, "default", classmethod(lambda cls, entry_points=True: catalog()))


@pytest.fixture
def user_config(toolrig_home: Path) -> Callable[[str], Path]:
    """Write the user's config file (``~/.toolrig/config.yaml``), which every consumer reads."""

    def write(text: str) -> Path:
        path = toolrig_home / "config.yaml"
        path.write_text(text)
        return path

    return write


def via_rig(workspace: Path) -> Call:
    def call(name: str, args: dict[str, Any], agent: str | None = None) -> dict[str, Any]:
        return Rig(workspace, agent=agent).call_sync(name, args).model_dump(mode="json")

    return call


def via_cli(workspace: Path) -> Call:
    def call(name: str, args: dict[str, Any], agent: str | None = None) -> dict[str, Any]:
        from toolrig.cli import app

        argv = ["call", name, "--json", json.dumps(args), "--root", str(workspace)]
        if agent:
            argv += ["--agent", agent]
        result = CliRunner().invoke(app, argv, catch_exceptions=False)
        assert result.exit_code in (0, 1), result.output
        data: dict[str, Any] = json.loads(result.stdout)
        assert result.exit_code == int(data["is_error"])
        return data

    return call


@pytest.fixture(params=["rig", "cli"])
def consumer(request: pytest.FixtureRequest, workspace: Path, governed_catalog: None) -> Call:
    """The same call made through ``Rig.call`` and through ``toolrig call``."""
    return via_rig(workspace) if request.param == "rig" else via_cli(workspace)


@pytest.fixture(scope="session")
def http_server() -> Iterator[HttpServer]:
    """One real HTTP server on 127.0.0.1 for the session; tests add routes under their own paths."""
    server = HttpServer().start()
    yield server
    server.stop()


def static_resolver(table: dict[str, list[str]]) -> Callable[[str], list[str]]:
    """A stand-in for DNS: answers from the table, fails like DNS for anything else."""

    def resolve(host: str) -> list[str]:
        if host not in table:
            raise LookupError(f"cannot resolve '{host}': not in the test's table")
        return list(table[host])

    return resolve


@pytest.fixture(scope="session")
def tls_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    """A throwaway CA and a certificate for 127.0.0.1: the server's TLS context and the CA file to trust."""
    import trustme

    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server)
    ca_file = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return server, str(ca_file)


@pytest.fixture(scope="session")
def smtp_servers(tls_ca: tuple[ssl.SSLContext, str]) -> Iterator[dict[str, SmtpServer]]:
    """Real aiosmtpd servers on loopback: plain, STARTTLS (required) and implicit TLS, all with AUTH."""
    context, ca_file = tls_ca
    users = {"agent": "s3cret"}
    servers = {
        "none": start_smtp("plain", users=users),
        "starttls": start_smtp("starttls", tls=context, ca_file=ca_file, users=users),
        "tls": start_smtp("tls", tls=context, ca_file=ca_file, users=users),
    }
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
def llm_server() -> Iterator[FakeLLM]:
    """A local server speaking the Anthropic and OpenAI wire protocols (tests/support/fake_llm.py)."""
    from tests.support.fake_llm import FakeLLM

    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def llm(llm_server: FakeLLM) -> Iterator[FakeLLM]:
    """The shared fake provider with an empty script; a test that leaves replies unused fails."""
    llm_server.reset()
    yield llm_server
    left = llm_server.reset()
    assert not left, f"{len(left)} scripted replies were never requested"


# Real servers (redis-server, BaseX) shared by the whole session; see tests/state_servers.py.
from tests.state_servers import basex_server, kv, librarian, redis_server  # noqa: E402, F401

# ------------------------------------------------------------------ markers for the fast inner loop
# Applied here, not in each file: `pytest -m "not slow"` is the loop a newcomer runs while editing, CI runs
# everything. A test is `terminal` if it drives tmux, `servers` if it starts or uses a real server, and
# `slow` if it is either, spawns processes by design, or was measured among the slowest (SLOW_FILES/SLOW_TESTS;
# remeasure with `pytest --durations=80`).
TERMINAL_FIXTURES = frozenset({"terminal"})
SERVER_FIXTURES = frozenset({"redis_server", "basex_server", "smtp_servers", "peer", "peer_state"})
SERVER_PARAMS = frozenset({"redis", "basex"})  # kv / librarian parametrised over a real server
SLOW_FILES = frozenset(
    {
        "tests/adapters/test_mcp_stdio.py",
        "tests/adapters/test_mcp_client.py",
        "tests/adapters/test_mcp_inspector.py",
        "tests/adapters/test_mcp_http.py",
        "tests/hostile/test_mcp_http_guard.py",
        "tests/stores/test_nothing_lost.py",
        "tests/test_dependencies.py",
        "tests/stores/memory/test_semantic.py",  # loads an embedding model
    }
)
SLOW_TESTS = frozenset(
    {
        "tests/test_cli.py::test_the_installed_console_script_works_end_to_end",
        "tests/test_cli.py::test_help_does_not_import_provider_sdks_or_tool_modules",
        "tests/test_cli.py::test_call_imports_only_the_called_tools_module_and_no_provider_sdk",
        "tests/test_readme.py::test_the_main_command_starts_the_mcp_server_it_promises",
        "tests/commands/test_mcp.py::test_serve_names_the_approval_mode_in_force_when_it_starts",
        # measured with --durations (load average ~10): each over 4 s
        "tests/test_schema.py::test_emitted_schemas_accept_exactly_what_the_model_accepts",
        "tests/agent/providers/test_anthropic.py::test_requests_cache_the_system_prompt_the_tools_and_the_newest_turn",
        "tests/approvals/test_routing.py::test_a_paused_run_saves_plain_json_and_resumes_in_another_process",
        "tests/commands/test_run.py::test_a_session_resumes_in_another_process_on_the_other_provider",
        "tests/approvals/test_terminal.py::test_toolrig_call_asks_on_a_terminal_and_remembers_always",
        "tests/policy/test_ratelimit.py::test_limits_hold_across_processes_sharing_a_workspace",
        "tests/sandbox/test_shell_syntax.py::test_quoted_words_joined_by_operators_are_read_back_exactly",
        "tests/tools/test_files.py::test_list_directory_stops_at_its_budget_and_says_so",
        "tests/agent/providers/test_openai.py::test_interleaved_tool_call_fragments_are_joined_by_index",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        params = {str(v) for v in getattr(getattr(item, "callspec", None), "params", {}).values()}
        path = Path(str(item.path)).relative_to(root).as_posix()
        test_id = f"{path}::{item.name.split('[')[0]}"
        slow = False
        if fixtures & TERMINAL_FIXTURES:
            item.add_marker(pytest.mark.terminal)
            slow = True
        if fixtures & SERVER_FIXTURES or params & SERVER_PARAMS:
            item.add_marker(pytest.mark.servers)
            slow = True
        if slow or path in SLOW_FILES or test_id in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
