"""SWE-bench rows written as image instances, as the image route of `testprism import
swebench` writes them: the official image name, the program at /testbed, sympy's official
test command (`bin/test -C --verbose FILES`) read by the `sympy` log parser."""

from __future__ import annotations

import json
import re
from pathlib import Path

from testprism.tasks.model import toml_writer
from tests.swebench_image import official_name


def write_image_instances(rows: Path, out: Path, candidates: list[dict] = ()) -> None:
    """Each row of `rows` as `out/instances/<id>/`; `candidates`: prediction rows written
    as the instance's candidates, labelled as their `official_resolved` says."""
    for row in map(json.loads, rows.read_text().splitlines()):
        folder = out / "instances" / row["instance_id"]
        folder.mkdir(parents=True)
        files = re.findall(r"^diff --git a/(\S+)", row["test_patch"], re.M)
        declared = []
        for number, cand in enumerate(c for c in candidates if c["instance_id"] == row["instance_id"]):
            name = f"prediction-{number}"
            (folder / "candidates").mkdir(exist_ok=True)
            (folder / "candidates" / f"{name}.diff").write_text(cand["model_patch"])
            declared.append({"id": name, "label": "valid" if cand["official_resolved"] else "invalid",
                             "patch": f"candidates/{name}.diff", "note": cand["model_name_or_path"]})
        document = {
            "id": row["instance_id"], "source": "swe-bench-lite", "language": "python",
            "environment": {"image": official_name(row["instance_id"]), "program_in_image": "/testbed"},
            "checks": {"patch": "checks.diff", "command": "bin/test -C --verbose " + " ".join(files),
                       "parser": "sympy", "fail_to_pass": json.loads(row["FAIL_TO_PASS"]),
                       "pass_to_pass": json.loads(row["PASS_TO_PASS"])},
        } | ({"candidates": declared} if declared else {})
        (folder / "instance.toml").write_text(toml_writer.dumps(document))
        (folder / "instruction.md").write_text(row["problem_statement"])
        (folder / "reference.diff").write_text(row["patch"])
        (folder / "checks.diff").write_text(row["test_patch"])
        (folder / "origin.toml").write_text(toml_writer.dumps(
            {"test_command": "python -m pytest -p no:cacheprovider -q {test_files} --junitxml=$TESTPRISM_JUNIT"}))
