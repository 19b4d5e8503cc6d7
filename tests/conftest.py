from __future__ import annotations

import itertools
import json
import re
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from tests.support.examples import FAST_PROFILE, fewer
from tests.support.servers import HttpServer, SmtpServer, start_smtp
from toolrig.rig import Rig

if TYPE_CHECKING:
    from tests.support.fake_llm import FakeLLM

Call = Callable[..., dict[str, Any]]

# Hypothesis's deadline and its "input generation is slow" health check are wall-clock assertions: on a
# loaded 2-core machine they fail tests whose behaviour is fine. The suite makes no timed assertions.
settings.register_profile("toolrig", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The fast inner loop (`-m "not slow"`) tries a tenth of the examples; CI and a plain `pytest` try them all.
settings.register_profile(FAST_PROFILE, parent=settings.get_profile("toolrig"), max_examples=fewer(100))
settings.load_profile("toolrig")


# Per-test directories are numbered by a counter of this process, never by pytest's ``mktemp``: to find the
# next free number it lists the whole base temp directory, so with a directory kept per test a session grew
# quadratic (3,400 numbered directories cost a worker ~8 s of CPU; docs/performance.md, fast loop round 5).
# A number is never reused within a session: a path that comes back would meet the process-wide state the
# earlier test left for it (shared SQLite connections are keyed by path).
_numbers = itertools.count()


@pytest.fixture(scope="session")
def per_test_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory holding every test's ``tmp_path`` and toolrig home (one per xdist worker)."""
    return tmp_path_factory.mktemp("per-test")


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, per_test_dirs: Path) -> Path:
    """pytest's ``tmp_path`` (a new empty directory per test, kept after the run, named after the test),
    without the listing described above."""
    path = per_test_dirs / f"{re.sub(r'[^A-Za-z0-9_]', '_', request.node.name)[:30]}-{next(_numbers)}"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture(autouse=True)
def toolrig_home(per_test_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own user-level toolrig home, so no test reads or writes the real ~/.toolrig."""
    home = per_test_dirs / f"toolrig-home-{next(_numbers)}"
    home.mkdir(mode=0o700)
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
    from tests.support.governed_tools import catalog
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


# Real servers (redis-server, BaseX) shared by the whole session; see tests/support/state_servers.py.
from tests.support.state_servers import basex_server, kv, librarian, redis_server  # noqa: E402, F401

# ------------------------------------------------------------------ markers for the fast inner loop
# Applied here, not in each file: `pytest -m "not slow" -n 2` is the loop a newcomer runs while editing, CI
# runs everything, serially. A test is `terminal` if it drives tmux, `servers` if it starts or uses a real
# server, and `slow` if it is either, spawns processes by design, or was measured among the costliest for
# what it adds to the fast loop (SLOW_FILES/SLOW_TESTS; a SLOW_TESTS entry without `[...]` covers every
# parameter; remeasure with `pytest -m "not slow" --durations=60`, docs/performance.md).
TERMINAL_FIXTURES = frozenset({"terminal"})
SERVER_FIXTURES = frozenset({"redis_server", "basex_server", "smtp_servers", "peer", "peer_state", "postgres"})
SERVER_PARAMS = frozenset({"redis", "basex"})  # kv / librarian parametrised over a real server
SLOW_FILES = frozenset(
    {
        "tests/adapters/test_mcp_stdio.py",
        "tests/adapters/test_mcp_inspector.py",
        "tests/adapters/test_mcp_http.py",
        "tests/hostile/test_mcp_http_guard.py",
        "tests/stores/test_nothing_lost.py",
        "tests/test_dependencies.py",
        "tests/stores/memory/test_semantic.py",  # loads an embedding model
        "tests/stores/memory/test_minilm.py",  # loads an embedding model, embeds 256-token texts
        "tests/test_servers.py",  # starts redis-server, BaseX and PostgreSQL on ports another process holds
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
        # round 4, measured by CPU time per test (docs/performance.md). Each waits seconds by design (the
        # durable worker's: one test per module still runs a real worker in the loop):
        "tests/hostile/test_command_containment.py::test_a_fork_burst_over_max_processes_is_bounded[cgroup]",
        "tests/hostile/test_command_containment.py::test_a_command_that_stops_its_keeper_still_loses_its_children",
        "tests/sandbox/test_journal.py::test_fifty_kills_during_a_three_file_patch_leave_every_file_before_or_every_file_after",
        *(  # a one-second timeout each: the loop keeps the plain `setsid` spelling, with and without a cgroup
            f"tests/hostile/test_command_containment.py::test_setsid_children_do_not_outlive_the_timeout[{mode}-{way}]"
            for mode in ("cgroup", "no cgroup")
            for way in ("subshell", "setsid-f", "setsid-bash")
        ),
        "tests/sources/test_mcp_client.py::test_a_call_times_out_by_the_server_setting_and_the_server_stays_usable",
        "tests/sources/test_mcp_client.py::test_a_server_that_died_while_idle_is_restarted_by_the_next_call",
        "tests/durable/test_worker.py::test_queued_tasks_each_run_once_and_end_with_their_terminal_tool",
        "tests/durable/test_worker.py::test_a_task_waiting_for_another_resumes_in_its_session_once_the_other_ends",
        "tests/durable/test_worker.py::test_a_run_that_needs_approval_parks_as_paused_until_a_person_approves",
        "tests/durable/test_worker.py::test_a_scheduled_job_fires_through_the_worker_once_per_firing",
        "tests/durable/test_questions.py::test_a_queued_task_that_asks_the_user_goes_on_with_skipped_answers",
        "tests/test_hooks.py::test_failing_and_slow_scripts_are_logged_and_the_call_goes_on",
        # ... a new process is the point (a fresh `toolrig` or `toolrig mcp serve`, 1.5-3 s of CPU each):
        "tests/commands/test_run.py::test_a_paused_run_resumes_in_a_new_process_with_answers_and_the_model_receives_them",
        "tests/commands/test_run.py::test_a_paused_run_resumes_once_and_refuses_unknown_sessions_and_malformed_answers",
        "tests/commands/test_run.py::test_a_resumed_run_that_asks_again_pauses_again_and_resumes_with_the_new_answers",
        "tests/commands/test_run.py::test_todos_and_followups_are_json_events_and_the_todo_list_survives_a_pause_into_a_new_process",
        "tests/commands/test_run.py::test_a_state_paused_on_an_approval_resumes_from_the_cli_with_decisions",
        "tests/adapters/test_content_conversion.py::test_toolrig_mcp_serve_sends_an_image_read_from_disk_as_image_content",
        "tests/hostile/test_calculator.py::test_r20_another_mcp_clients_arithmetic_answers_while_a_costly_expression_is_refused",
        "tests/durable/test_lazy_import.py::test_the_mcp_server_imports_no_durable_engine_while_listing_and_calling",
        "tests/durable/test_lazy_import.py::test_call_of_another_tool_imports_no_durable_engine",
        "tests/test_registry.py::test_third_party_tools_load_from_the_entry_point_group",
        "tests/test_registry.py::test_a_broken_plugin_is_logged_and_does_not_take_the_catalog_down",
        "tests/durable/test_lazy_import.py::test_touching_a_schedule_opens_the_records_but_still_not_the_engine",
        "tests/policy/test_gate.py::test_the_strict_flag_makes_a_name_that_matches_no_tool_exit_2",
        "tests/sources/test_mcp_client.py::test_a_url_server_is_reached_over_streamable_http_with_its_headers",
        # ... or a peer from npm per parameter (the module keeps four tests against npm peers in the loop):
        "tests/sources/test_mcp_client.py::test_allow_and_deny_name_server_tools_by_display_name_or_server_glob",
        # ... or a race run for seconds against a swapping thread (the other hostile file tests stay):
        "tests/hostile/test_memory_files.py::test_r07_memory_get_and_write_never_reach_outside_while_memory_is_swapped_with_a_symlink",
        "tests/hostile/test_search_swap_race.py::test_code_search_and_glob_never_show_outside_content_while_a_directory_is_swapped",
        # round 5, measured by the time a test's thread spent blocked (wall - CPU - run-queue wait): each waits
        # 0.8-2.8 s by design for a timeout, a grace period or the durable worker, and the loop keeps a sibling
        # (the other provider, the other trickle, the other cgroup mode, two durable worker tests):
        "tests/durable/test_questions.py::test_a_queued_task_keeps_its_todo_list_and_followups_with_its_session",
        "tests/durable/test_worker.py::test_a_cancelled_task_does_not_run",
        "tests/remote/test_forward.py::test_a_replayed_and_a_late_press_are_refused_and_audited",
        "tests/remote/test_telegram.py::test_no_answer_within_the_timeout_follows_the_fallback_and_a_late_press_is_refused",
        "tests/agent/test_loop.py::test_the_run_timeout_stops_a_run_that_takes_too_long[openai]",
        "tests/agent/test_loop.py::test_a_stalled_stream_times_out_as_a_run_error[openai]",
        "tests/agent/subagents/test_hub.py::test_a_child_past_its_timeout_is_timed_out_and_its_parent_goes_on[openai]",
        "tests/hostile/test_trickle_timeouts.py::"
        "test_fetch_url_timeout_bounds_the_whole_call_not_each_read[body trickles]",
        "tests/hostile/test_trickle_timeouts.py::"
        "test_webhook_timeout_bounds_the_whole_call_not_each_read[head trickles]",
        "tests/hostile/test_command_containment.py::test_setsid_children_do_not_outlive_the_timeout[no cgroup-setsid]",
        "tests/hostile/test_commands.py::test_a_child_that_ignores_sigterm_is_killed",
        "tests/stores/librarian/test_backends.py::test_librarian_stops_a_query_that_overruns_its_timeout_and_keeps_working[embedded]",
        "tests/test_cli.py::test_an_ignored_workspace_setting_is_warned_about_once",  # a new process is the point
    }
)


def fast_loop(config: pytest.Config) -> bool:
    """The fast inner loop: slow tests deselected and no hypothesis profile chosen on the command line."""
    return "not slow" in (config.getoption("markexpr") or "") and not config.getoption("--hypothesis-profile")


def pytest_configure(config: pytest.Config) -> None:
    if fast_loop(config):
        settings.load_profile(FAST_PROFILE)


def fewer_examples(item: pytest.Item, done: set[int]) -> None:
    """Cut a property test's own ``max_examples`` to the fast loop's share (a profile cannot: a test's explicit
    setting wins over it). Hypothesis reads the settings off the test function each time it runs."""
    function = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    if not getattr(function, "is_hypothesis_test", False) or id(function) in done:
        return
    done.add(id(function))
    own = function._hypothesis_internal_use_settings  # type: ignore[union-attr]
    function._hypothesis_internal_use_settings = settings(own, max_examples=fewer(own.max_examples))  # type: ignore[union-attr]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    scaled: set[int] = set()
    fast = fast_loop(config)
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
        if slow or path in SLOW_FILES or test_id in SLOW_TESTS or f"{path}::{item.name}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        elif fast:
            fewer_examples(item, scaled)
