"""Java: JaCoCo's agent in every JVM through JAVA_TOOL_OPTIONS, its XML report written by
JaCoCo's command line in the run (JavaToolchain)."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from testprism.tasks.model import syntax
from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_jacoco_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


JACOCO_VERSION = "0.8.15"
"""JaCoCo's agent (`org.jacoco.agent:runtime`) and command line (`org.jacoco.cli:nodeps`):
resolved into the environment's Maven repository by examples/environments/java/maven-seed."""

_JACOCO_ERROR = "testprism jacoco: "

# Where the environment's Maven repository is: the local backend's (bin/mvn's ../m2:
# tasks/sandbox/environment.py), Maven's global settings' localRepository (the docker image's
# /opt/m2), the user's.
_JAVA_RUNNER = runner_head("with JaCoCo's agent in every JVM") + """\
version=__VERSION__
fail() { printf '__ERROR__%s\\n' "$1" > "$report"; }
case "$data" in *[[:space:],=:]*) echo "testprism coverage: JaCoCo's options cannot hold the path $data" >&2; exit 2;; esac
jacoco=""
mvn_bin="$(command -v mvn 2>/dev/null)"
for repository in "${mvn_bin:+$(dirname "$mvn_bin")/../m2}" \\
    "$(sed -n 's:.*<localRepository>\\(.*\\)</localRepository>.*:\\1:p' /usr/share/maven/conf/settings.xml 2>/dev/null | head -n 1)" \\
    "$HOME/.m2/repository"; do
  if [ -n "$repository" ] && [ -f "$repository/org/jacoco/org.jacoco.cli/$version/org.jacoco.cli-$version-nodeps.jar" ]; then
    jacoco="$repository/org/jacoco"; break
  fi
done
if [ -z "$jacoco" ]; then collecting; fail "JaCoCo $version is in no Maven repository of the environment"; hand_back; exit 2; fi
(
  export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:+$JAVA_TOOL_OPTIONS }-javaagent:$jacoco/org.jacoco.agent/$version/org.jacoco.agent-$version-runtime.jar=destfile=$data/jacoco.exec,append=true,includes=$(cat "$here/includes")"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
classes=()
while IFS= read -r pattern; do classes+=(-o -path "$pattern"); done < "$here/classes"
found=()
while IFS= read -r -d '' file; do found+=(--classfiles "$file"); done < <(find "$root" -type f \\( -false "${classes[@]}" \\) -print0)
if [ ! -f "$data/jacoco.exec" ]; then fail "no JVM wrote JaCoCo data"
elif [ "${#found[@]}" -eq 0 ]; then fail "no compiled class of the changed files under the program"
elif ! java -jar "$jacoco/org.jacoco.cli/$version/org.jacoco.cli-$version-nodeps.jar" report "$data/jacoco.exec" \\
    "${found[@]}" --xml "$report" > "$data/jacoco.log" 2>&1; then
  fail "JaCoCo's report failed: $(tail -c 400 "$data/jacoco.log" | tr '\\n' ' ')"
fi
hand_back
exit "$status"
""".replace("__VERSION__", JACOCO_VERSION).replace("__ERROR__", _JACOCO_ERROR)

_JAVA_PACKAGE = re.compile(rb"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)


def java_class(tree: Path, path: str) -> str:
    """`src/main/java/a/b/C.java` → `a/b/C`: its package (declared in the file) and name."""
    found = _JAVA_PACKAGE.search((tree / path).read_bytes())
    name = PurePosixPath(path).stem
    return f"{found.group(1).decode().replace('.', '/')}/{name}" if found else name


class JavaToolchain(Toolchain):
    """JaCoCo's agent in every JVM of the run (`JAVA_TOOL_OPTIONS`: Maven's, Surefire's
    forks, any other), limited to the changed files' classes (and their nested ones); its
    command line turns the data into its XML report against the classes the build step
    compiled. The agent instruments classes as they load, so the state's built tree is the
    replay's. JaCoCo's jars come from the environment's Maven repository (the bundled Java
    environment's seed resolves them); an environment without them is `coverage_failed`."""

    helpers_hash = digest("coverage-helpers-java", _JAVA_RUNNER)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .java files."""
        return analyse_reference(tree, reference, lambda path: syntax.language_of(path) is syntax.JAVA)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        classes = sorted({java_class(tree, c.path) for c in changes})
        return with_helpers({
            "run.sh": _JAVA_RUNNER,
            "entry.sh": suite.entry + "\n",
            "includes": ":".join(f"{name.replace('/', '.')}*" for name in classes) + "\n",
            "classes": "".join(f"*/{name}.class\n*/{name}$*.class\n" for name in classes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        """Each changed file is the report's source file of its package (`a/b/C.java`)."""
        if report.startswith(_JACOCO_ERROR.encode()):
            raise ValueError(report.decode("utf-8", errors="replace").strip()[:500])
        if not report:
            raise ValueError("no JaCoCo report: the suite's run left none")
        sources = parse_jacoco_report(report)
        return {c.path: sources[name] for c in changes
                if (name := f"{PurePosixPath(java_class(tree, c.path)).parent}/{PurePosixPath(c.path).name}".lstrip("./"))
                in sources}
