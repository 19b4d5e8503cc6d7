"""`toolrig run --timeout` and `llm.run_timeout_seconds` (seed 002's `timeoutSeconds: 300`, issue 38 item 6)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.commands.test_run import configure, invoke
from tests.support.fake_llm import FakeLLM, Text, reply


def test_run_timeout_stops_a_run_whose_model_never_finishes(llm: FakeLLM, workspace: Path, toolrig_home: Path) -> None:
    configure(toolrig_home, llm, "anthropic")
    llm.script(reply(Text("thinking", " forever"), hang_after=2))
    code, _, err = invoke("run", "go", "--timeout", "0.5", "--root", str(workspace))
    assert code == 1, err
    assert "did not finish within 0.5 seconds" in err
    llm.reset()  # the deadline may come before the request does: either way only the timeout ends the run


def test_the_config_key_bounds_a_run_and_the_flag_wins(llm: FakeLLM, workspace: Path, toolrig_home: Path) -> None:
    configure(toolrig_home, llm, "anthropic", run_timeout_seconds=0.5)
    llm.script(reply(Text("thinking", " forever"), hang_after=2))
    code, _, err = invoke("run", "go", "--root", str(workspace))
    assert code == 1 and "did not finish within 0.5 seconds" in err
    llm.reset()
    llm.script(reply(Text("thinking", " forever"), hang_after=2))
    code, _, err = invoke("run", "go", "--timeout", "0.25", "--root", str(workspace))
    assert code == 1 and "within 0.25 seconds" in err
    llm.reset()  # as above: the request may or may not have been made before the deadline


def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(workspace: Path, toolrig_home: Path) -> None:
    for bad in ("0", "-3", "soon"):
        code, _, err = invoke("run", "go", "--timeout", bad, "--root", str(workspace))
        assert code == 2, (bad, err)
    (toolrig_home / "config.yaml").write_text(yaml.safe_dump({"llm": {"run_timeout_seconds": 0}}))
    code, _, err = invoke("run", "go", "--root", str(workspace))
    assert code == 2 and "run_timeout_seconds" in err
