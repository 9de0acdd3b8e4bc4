"""The interface every language's coverage toolchain implements (one module per language
beside this one; the registry is the package's `TOOLCHAINS`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.changes import ChangedFile
from testprism.tasks.model.outcome import Reason
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.reports import MeasuredFile


class Toolchain(ABC):
    """One language's instrumentation for the coverage pass."""

    #: the reason of a row whose reference changes no line this toolchain measures
    no_change: Reason = Reason.NO_CODE_CHANGE

    @property
    @abstractmethod
    def helpers_hash(self) -> str:
        """What the helper files are: part of every measurement's key."""

    #: whether the state's build step must run again in `environment(...)`: coverage that
    #: is compiled in (gcc's --coverage) rather than turned on when the suite runs
    instruments_build: bool = False

    def environment(self, environment: EnvironmentSpec) -> EnvironmentSpec:
        """The environment the coverage run needs (Go and Node bring their own coverage)."""
        return environment

    @abstractmethod
    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """What the reference changes, read from the materialised reference `tree`."""

    @abstractmethod
    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        """The helper folder of the suite's runs, mounted read-only (instrument.with_helpers)."""

    @abstractmethod
    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        """The run's report → measured files; ValueError when there is none to read."""
