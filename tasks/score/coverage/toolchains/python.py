"""Python: coverage.py in every Python process of the run (tasks/score/coverage/instrument.py
holds its environment, helper files and report)."""

from __future__ import annotations

from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.outcome import Reason
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import HELPERS_HASH, coverage_environment, coverage_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


class PythonToolchain(Toolchain):
    """coverage.py in every Python process (instrument.py)."""

    no_change = Reason.NO_PYTHON_CHANGE
    helpers_hash = HELPERS_HASH

    def environment(self, environment: EnvironmentSpec) -> EnvironmentSpec:
        return coverage_environment(environment)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        return analyse_reference(tree, reference)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return coverage_helpers(suite, changes, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        return parse_report(report)
