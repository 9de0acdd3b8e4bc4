"""Opt-in: one real SWE-bench Lite sympy record rebuilt without GitHub, from a PyPI source
release, imported with the bundled recipe and its checks run on buggy and reference.

Runs only when TESTPRISM_REALDATA names the real-data folder (the project never reads it
otherwise) and PyPI is reachable: `TESTPRISM_REALDATA=/work/shared/realdata pytest -m realdata`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.importing.recipe import load_recipes
from testprism.tasks.sandbox.local import LocalBackend
from testprism.tasks.importing.sources import ProgramSources
from testprism.tasks.importing.swebench import import_rows
from testprism.tasks.importing.verifier import Verifier

REALDATA = os.environ.get("TESTPRISM_REALDATA")
RECIPE = Path(__file__).resolve().parents[1] / "examples" / "recipes" / "sympy.toml"
#: version 1.11 of the records pairs with the last release before that series (realdata README)
INSTANCE, RELEASE = "sympy__sympy-23191", "1.10"

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.slow,
    pytest.mark.skipif(not REALDATA, reason="set TESTPRISM_REALDATA to the real-data folder to run"),
    pytest.mark.requires("sandbox"),
]


def sympy_release(folder: Path, version: str) -> Path:
    """The sdist of sympy `version`, unpacked and committed (patches need a tree to reset)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", ":all:", f"sympy=={version}", "-d", str(folder)], check=True, timeout=600)
    with tarfile.open(folder / f"sympy-{version}.tar.gz") as sdist:
        # owned by us: git refuses foreign trees (`filter` from Python 3.11.4; Debian's 3.11.2 lacks it)
        sdist.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    release = folder / f"sympy-{version}"
    for dirpath, _, filenames in os.walk(folder):  # ours, as filter="data" makes it: git refuses foreign trees
        for path in (dirpath, *(os.path.join(dirpath, name) for name in filenames)):
            os.chown(path, os.getuid(), os.getgid(), follow_symlinks=False)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A", "-f"], ["commit", "-q", "-m", f"sympy {version}"]):
        subprocess.run(["git", *args], cwd=release, env=env, check=True, capture_output=True)
    return release


def test_a_record_reproduces_on_its_source_release(tmp_path, work):
    rows = [json.loads(line) for line in Path(REALDATA, "swebench_lite_sympy_dev.jsonl").read_text().splitlines()]
    [row] = [r for r in rows if r["instance_id"] == INSTANCE]
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    release = sympy_release(tmp_path / "sdist", RELEASE)
    mapping = tmp_path / "releases.toml"
    mapping.write_text(f'"{INSTANCE}" = "{release}"\n')
    out = tmp_path / "bench"
    report = import_rows(tmp_path / "rows.jsonl", out, load_recipes([RECIPE]), ProgramSources.from_options(None, mapping),
                         verifier=Verifier(LocalBackend(work), work))
    assert not report.issues, report.issues
    assert report.imported == [INSTANCE]
    checks = load_benchmark(out).instances[INSTANCE].spec.checks
    assert len(checks.fail_to_pass) == len(json.loads(row["FAIL_TO_PASS"]))
    assert len(checks.pass_to_pass) == len(json.loads(row["PASS_TO_PASS"]))
