"""The coverage helpers run as a backend runs them, without a sandbox: the suite's files and
the run's nonce under the program's tmp/, the helper folder's run.sh from the program root,
the report at $TESTPRISM_JUNIT under out/ (tasks/score/coverage/instrument.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.score.coverage.instrument import NONCE_FILE, new_nonce, unseal


def run_helpers(program: Path, suite: Suite, helpers: Path, out: Path, env: dict[str, str],
                timeout: float = 300) -> tuple[subprocess.CompletedProcess, Path]:
    """Run `suite` through the helper folder `helpers`; returns the finished process and
    the report's path, its seal checked (`unseal`) and removed, so the file holds what the
    toolchain parses."""
    for rel in suite.files:
        (program / "tmp" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(suite.folder / rel, program / "tmp" / rel)
    nonce = new_nonce()
    (program / "tmp" / NONCE_FILE).parent.mkdir(parents=True, exist_ok=True)
    (program / "tmp" / NONCE_FILE).write_text(nonce + "\n")
    out.mkdir(exist_ok=True)
    report = out / "junit.xml"
    done = subprocess.run(["bash", str(helpers / "run.sh")], cwd=program, capture_output=True, text=True,
                          timeout=timeout, env={**env, "TESTPRISM_JUNIT": str(report)})
    assert not (program / "tmp" / NONCE_FILE).exists()  # read and removed before the suite ran
    if report.exists():
        report.write_bytes(unseal(report.read_bytes(), nonce))
    return done, report
