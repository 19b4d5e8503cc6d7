"""Nothing of DBOS (or the durable records) is imported unless a schedule or task is touched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = (
    "import sys\n"
    "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'dbos', 'sqlalchemy', 'croniter'})\n"
    "durable = sorted(m for m in sys.modules if m.startswith('toolrig.durable.') and m not in "
    "('toolrig.durable.access', 'toolrig.durable.api'))\n"
    "print('LOADED', loaded, durable, file=sys.stderr)\n"
)


def run_code(code: str, cwd: Path) -> str:
    out = subprocess.run([sys.executable, "-c", code + PROBE], capture_output=True, text=True, check=False, cwd=cwd)
    return out.stderr


def cli(args: list[str]) -> str:
    return (
        "import sys\nfrom toolrig.cli import main\n"
        f"sys.argv = ['toolrig', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )


def test_help_imports_no_durable_engine(workspace: Path) -> None:
    assert "LOADED [] []" in run_code(cli(["--help"]), workspace)


def test_call_of_another_tool_imports_no_durable_engine(workspace: Path) -> None:
    err = run_code(cli(["call", "calculate", "--json", '{"expression": "1+1"}', "--root", str(workspace)]), workspace)
    assert "LOADED [] []" in err, err


def test_the_mcp_server_imports_no_durable_engine_while_listing_and_calling(workspace: Path) -> None:
    code = (
        "import anyio\n"
        "from toolrig.rig import Rig\n"
        "from toolrig.adapters.mcp_server import McpToolServer\n"
        f"rig = Rig({str(workspace)!r})\n"
        "server = McpToolServer(rig)\n"
        "assert any(t.name == 'cron' for t in server.listing().tools)\n"
        "anyio.run(lambda: rig.call('calculate', {'expression': '2*3'}))\n"
    )
    err = run_code(code, workspace)
    assert "LOADED [] []" in err, err


def test_touching_a_schedule_opens_the_records_but_still_not_the_engine(workspace: Path) -> None:
    err = run_code(cli(["call", "cron", "--json", '{"action": "list"}', "--root", str(workspace)]), workspace)
    assert "'dbos'" not in err and "sqlalchemy" in err, err
