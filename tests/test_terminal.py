"""What a command leaves on the terminal (issue 43, item 7): Prefect's own lines kept off it
unless `--verbose` (flows/progress.py `quiet_console`, which must run before Prefect is
imported, so only a real process shows it), and the closing panel whose last line, `next:`,
names the command to run next, which runs as named."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.flows.progress import QUIET_LOGS
from tests.test_dask import with_flow_api
from tests.test_export import small_store

#: lines Prefect's console handler writes for a flow run (its run logger's start and end)
PREFECT_LINES = re.compile(r"Beginning flow run|Finished in state|\| INFO +\| (prefect|Flow run)")


def closing_panel(output: str) -> list[str]:
    """The body lines of the last panel the output holds, which must end it."""
    lines = output.rstrip("\n").splitlines()
    assert lines[-1].startswith("╰"), lines[-3:]  # the panel closes the output
    top = max(n for n, line in enumerate(lines) if line.startswith("╭"))
    return [line.strip().strip("│").strip() for line in lines[top + 1:-1]]


def next_command(output: str) -> list[str]:
    """The command of the closing panel's `next:` line, without the parenthesised
    alternative: its last line, or the one before where a Prefect server is configured
    (the last then says where the flow runs are)."""
    body = closing_panel(output)
    last = body[-2] if body[-1].startswith("flow runs and their logs: ") else body[-1]
    assert last.startswith("next: testprism "), body
    return shlex.split(last.removeprefix("next: testprism ").split("   (")[0])


@pytest.fixture(scope="module")
def flow_api() -> dict[str, str]:
    """This process's environment with the session's Prefect server (started now if no flow
    has started it yet)."""
    return with_flow_api(None)


def test_a_command_keeps_prefect_s_lines_off_the_terminal_and_verbose_shows_them(tmp_path, flow_api):
    """A real `testprism score` process (reporting to this session's Prefect server, so that
    it starts none of its own) writes its warning and closing panel and none of Prefect's
    lines; the control, the same command with `--verbose`, shows the flow run's lines."""
    small_store(tmp_path / "store")
    env = {k: v for k, v in flow_api.items() if k not in QUIET_LOGS}  # as a user's shell has them
    env["COLUMNS"] = "300"
    testprism = str(Path(sys.executable).with_name("testprism"))

    def run(*flags: str) -> str:
        done = subprocess.run([testprism, *flags, "score", str(tmp_path / "store")], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stderr

    quiet, loud = run(), run("--verbose")
    assert not PREFECT_LINES.search(quiet), quiet
    assert "expected runs are not in the store" in quiet  # testprism's own lines stay
    assert next_command(quiet)[:1] == ["report"]
    assert "flow runs and their logs: " + env["PREFECT_API_URL"].removesuffix("/api") + "/runs" in quiet
    assert re.search(r"Beginning flow run '[\w-]+' for flow 'score'", loud), loud  # the control
    assert "Finished in state Completed()" in loud


def test_each_closing_next_line_names_a_command_that_runs(tmp_path, monkeypatch):
    """score's closing line names report, report's names export; each runs as written."""
    small_store(tmp_path / "store")
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)  # report's `--out report.html` is relative to where the user is
    result = runner.invoke(app, ["score", "store"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    chain = []
    for _ in range(2):
        args = next_command(result.output)
        chain.append(args[0])
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
    assert chain == ["report", "export"] and (tmp_path / "report.html").is_file()
    assert result.output.startswith("| configuration |")  # export's markdown leaderboard: the end of the line
