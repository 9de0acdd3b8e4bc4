"""bench/realrows/maven_seed.py (docs/real-benchmarks.md, java40b): one seed module per distinct
pom at the rows' bases, the parent pinned to its release, the project renamed, its enforcer off,
the PackageVersion template kept and a test in the pom's JUnit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import script_module

SEED = Path(__file__).resolve().parents[1] / "bench" / "realrows" / "maven_seed.py"

POM = """<project>
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>com.fasterxml.jackson</groupId>
    <artifactId>jackson-base</artifactId>
    <version>{parent}</version>
  </parent>
  <groupId>com.fasterxml.jackson.core</groupId>
  <artifactId>jackson-databind</artifactId>
  <version>2.17.1-SNAPSHOT</version>
  <properties>
    <packageVersion.dir>com/fasterxml/jackson/databind/cfg</packageVersion.dir>
  </properties>
  <dependencies><dependency><artifactId>{junit}</artifactId></dependency></dependencies>
</project>
"""


@pytest.fixture(scope="module")
def seed():
    return script_module(SEED, "realrows_maven_seed")


def commit(repo: Path, files: dict[str, str]) -> str:
    for name, content in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(content)
    run = ["git", "-C", str(repo)]
    subprocess.run([*run, "add", "-A"], check=True)
    subprocess.run([*run, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c"], check=True)
    return subprocess.run([*run, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def test_seed_pom_pins_only_the_parent_and_renames_the_project(seed):
    pom = seed.seed_pom(POM.format(parent="2.17.1-SNAPSHOT", junit="junit-jupiter"), "seed-x")
    assert "<artifactId>jackson-base</artifactId>\n    <version>2.17.1</version>" in pom
    # the project's own snapshot version stays: only the parent is served by Maven Central
    assert "<artifactId>seed-x</artifactId>\n  <version>2.17.1-SNAPSHOT</version>" in pom
    assert "<artifactId>jackson-databind</artifactId>" not in pom
    assert "<properties>\n    <enforcer.skip>true</enforcer.skip>" in pom
    released = seed.seed_pom(POM.format(parent="2.17.0", junit="junit"), "seed-y")
    assert "<version>2.17.0</version>" in released and "<version>2.17.1-SNAPSHOT</version>" in released


def test_one_module_per_distinct_pom_with_its_template_and_framework(seed, tmp_path):
    repo = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    template = "src/main/java/com/fasterxml/jackson/databind/cfg/PackageVersion.java.in"
    first = commit(repo, {"pom.xml": POM.format(parent="2.16.1-SNAPSHOT", junit="junit"), template: "@projectversion@"})
    same = commit(repo, {"README": "the pom is unchanged"})
    newer = commit(repo, {"pom.xml": POM.format(parent="2.18.0-SNAPSHOT", junit="junit-jupiter")})
    # the repositories folder holds bare git directories, as `fetch` leaves them
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(tmp_path / "repos" / "fasterxml__jackson-databind")],
                   check=True)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"org": "fasterxml", "repo": "jackson-databind", "number": n, "base": {"sha": sha}})
                            + "\n" for n, sha in ((1, first), (2, same), (3, newer))))
    out = tmp_path / "maven-seed"
    subprocess.run([sys.executable, str(SEED), "--repos", str(tmp_path / "repos"), "--out", str(out), str(rows)],
                   check=True, capture_output=True)
    modules = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(modules) == 2  # rows 1 and 2 share a pom
    aggregator = (out / "pom.xml").read_text()
    assert all(f"<module>{m.name}</module>" in aggregator for m in modules)
    by_parent = {("2.16.1" if "<version>2.16.1</version>" in (m / "pom.xml").read_text() else "2.18.0"): m
                 for m in modules}
    old, new = by_parent["2.16.1"], by_parent["2.18.0"]
    assert (old / template).read_text() == "@projectversion@"
    assert "import org.junit.Test;" in (old / "src/test/java/seed/SeedTest.java").read_text()
    assert "org.junit.jupiter.api.Test" in (new / "src/test/java/seed/SeedTest.java").read_text()
    # written whole: a second run into the same folder is refused rather than mixing seeds
    again = subprocess.run([sys.executable, str(SEED), "--repos", str(tmp_path / "repos"), "--out", str(out), str(rows)],
                           capture_output=True, text=True)
    assert again.returncode != 0 and "not empty" in again.stderr
