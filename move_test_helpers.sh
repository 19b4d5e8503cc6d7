#!/usr/bin/env bash
# Move the test helper modules that sat among the tests into tests/support (issue 33 item 15) and rewrite every
# reference to them: dotted module names (imports, `python -m`, entry-point strings), slash paths (scripts run by
# path, docs, .ci/run) and `"tests" / "dir" / "file.py"` path segments.
#
# Idempotent: a helper already moved is skipped, and references are rewritten every run, so it can run again on
# a tree where other branches added tests that import the old paths (merge them, then run this, then commit).
# It ends by failing loudly if any old path is still named anywhere tracked.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

# old path -> new path (a helper whose name says little on its own is renamed after its directory)
MOVES=(
  tests/adapters/conformance_peers.py:tests/support/conformance_peers.py
  tests/adapters/conformance_tools.py:tests/support/conformance_tools.py
  tests/adapters/mcp_fixture_server.py:tests/support/mcp_fixture_server.py
  tests/adapters/mcp_peer_server.py:tests/support/mcp_peer_server.py
  tests/adapters/mcp_peers.py:tests/support/mcp_peers.py
  tests/agent/subagents/conversations.py:tests/support/subagent_conversations.py
  tests/commands/terminal.py:tests/support/terminal.py
  tests/cpu_cost.py:tests/support/cpu_cost.py
  tests/durable/postgres.py:tests/support/postgres.py
  tests/durable/support.py:tests/support/durable.py
  tests/durable/worker_main.py:tests/support/worker_main.py
  tests/file_helpers.py:tests/support/file_helpers.py
  tests/media_tools.py:tests/support/media_tools.py
  tests/policy/governed_tools.py:tests/support/governed_tools.py
  tests/profiles/contract.py:tests/support/profile_contract.py
  tests/remote/bot_api.py:tests/support/bot_api.py
  tests/sandbox/journal_child.py:tests/support/journal_child.py
  tests/servers.py:tests/support/servers.py
  tests/skills/helpers.py:tests/support/skill_helpers.py
  tests/sources/conformance_client.py:tests/support/conformance_client.py
  tests/sources/mcp_big_reply_server.py:tests/support/mcp_big_reply_server.py
  tests/sources/mcp_long_line_server.py:tests/support/mcp_long_line_server.py
  tests/sources/mcp_oauth_server.py:tests/support/mcp_oauth_server.py
  tests/sources/mcp_relay_server.py:tests/support/mcp_relay_server.py
  tests/state_servers.py:tests/support/state_servers.py
  tests/telemetry/mcp_trace_server.py:tests/support/mcp_trace_server.py
  tests/telemetry/otlp.py:tests/support/otlp.py
)

# Every tracked text file that may name a helper (tests, sources, docs, CI, config); this script itself is not one.
tracked() {
  git ls-files -z -- '*.py' '*.md' '*.toml' '*.cfg' '*.ini' '*.txt' '*.yaml' '*.yml' '*.sh' '.ci/*' \
    | grep -zv '^move_test_helpers\.sh$' | grep -zv '^tests/peers/'
}

re() { printf '%s' "$1" | sed -e 's/[].[\\*^$/]/\\&/g'; }  # text as a literal sed pattern
rep() { printf '%s' "$1" | sed -e 's/[\\/&]/\\&/g'; }     # text as a literal sed replacement

for pair in "${MOVES[@]}"; do
  old=${pair%%:*}
  new=${pair##*:}
  if [[ -e $old ]]; then
    if [[ -e $new ]]; then
      echo "move_test_helpers: both $old and $new exist; merge them by hand" >&2
      exit 1
    fi
    git mv "$old" "$new"
  fi
  old_mod=${old%.py}; old_mod=${old_mod//\//.}     # tests.adapters.mcp_peers
  new_mod=${new%.py}; new_mod=${new_mod//\//.}     # tests.support.mcp_peers
  old_pkg=${old_mod%.*}; old_name=${old_mod##*.}    # tests.adapters / mcp_peers
  new_name=${new_mod##*.}
  old_dir=$(dirname "$old"); new_dir=$(dirname "$new")
  segments_old="\"${old_dir//\//\" \/ \"}\" / \"$(basename "$old")\""   # "tests" / "adapters" / "mcp_peers.py"
  segments_new="\"${new_dir//\//\" \/ \"}\" / \"$(basename "$new")\""
  if [[ $old_name == "$new_name" ]]; then
    from_import="from tests.support import ${new_name}"
  else
    from_import="from tests.support import ${new_name} as ${old_name}"
  fi
  { tracked | xargs -0 -r grep -lZF -e "$old_mod" -e "$old" -e "$segments_old" -e "from $old_pkg import $old_name" || true; } \
    | xargs -0 -r sed -i \
      -e "s/\\b$(re "$old_mod")\\b/$(rep "$new_mod")/g" \
      -e "s/$(re "$old")/$(rep "$new")/g" \
      -e "s/$(re "$segments_old")/$(rep "$segments_new")/g" \
      -e "s/^\\(\\s*\\)from $(re "$old_pkg") import $(re "$old_name")\$/\\1$(rep "$from_import")/"
done

# References a plain rewrite cannot see: paths a moved helper or a test computes from its own file.
if grep -q 'DATA = Path(__file__).parent / "data"' tests/support/profile_contract.py 2>/dev/null; then
  sed -i 's|DATA = Path(__file__).parent / "data"|DATA = Path(__file__).resolve().parents[1] / "profiles" / "data"|' \
    tests/support/profile_contract.py
fi
if grep -q 'HERE / "mcp_trace_server.py"' tests/telemetry/test_mcp.py 2>/dev/null; then
  sed -i 's|HERE / "mcp_trace_server.py"|HERE.parent / "support" / "mcp_trace_server.py"|' tests/telemetry/test_mcp.py
fi

# Imports were rewritten in place: let ruff put them back in order.
if [[ -x .venv/bin/ruff ]]; then RUFF=.venv/bin/ruff; else RUFF=ruff; fi
"$RUFF" check --select I --fix --quiet src tests benchmarks >/dev/null || true
"$RUFF" format --quiet tests >/dev/null || true

# A path grown longer may push a comment or docstring past the line length, which no formatter rewraps.
"$RUFF" check --select E501 --quiet tests benchmarks >&2 || echo "move_test_helpers: rewrap the lines above" >&2

left=0
for pair in "${MOVES[@]}"; do
  old=${pair%%:*}
  old_mod=${old%.py}; old_mod=${old_mod//\//.}
  base=$(basename "$old")
  if tracked | xargs -0 -r grep -nE -e "\\b${old_mod//./\\.}\\b" -e "${old//./\\.}" --; then left=1; fi
  # A sibling named by file name alone (Path(__file__).parent / "x.py") in the helper's old directory: a warning,
  # since a test may also write a file of that name on purpose.
  git ls-files -z -- ":(glob)$(dirname "$old")/*.py" | xargs -0 -r grep -nE "[\"']${base//./\\.}[\"']" -- \
    | grep -v '"support" /' | sed "s/^/move_test_helpers: check (a sibling of $base?): /" >&2 || true
done
if [[ $left -ne 0 ]]; then
  echo "move_test_helpers: the lines above still name a helper's old place; fix them by hand" >&2
  exit 1
fi
echo "move_test_helpers: ${#MOVES[@]} helpers live in tests/support; now run: pytest --collect-only -q"
