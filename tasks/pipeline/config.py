"""The pipeline config: one TOML file holds every parameter of a pipeline run, curate, collect
and generate optional, replay, score and report always (examples/pipeline.toml). Each
stage's section is that stage's settings object (declared in its folder) plus what it reads
and writes.

Paths are relative to the config file, so a config and its inputs travel together; a
deployment's `store` parameter may override the config's store. A bad file fails in one
line naming the file and the field (PipelineConfigError, a BenchmarkError: flows/errors.py
prints it and exits 2), before any stage runs.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from testprism.tasks.collect.settings import CollectSettings
from testprism.tasks.execution.run_settings import RunSettings
from testprism.tasks.gate.settings import CheckSettings
from testprism.tasks.generate.settings import GenerateSettings
from testprism.tasks.importing.suite_import import checked_configuration
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import BenchmarkError
from testprism.tasks.model.config_file import read_config
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.score.settings import ScoreSettings


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CurateStage(_Section):
    """Curate sources into a test split (tasks/curate/config.py reads `config`)."""

    config: Path  #: the curate config
    out: Path  #: the test split's benchmark folder (the training split goes beside it)


class CollectStage(CollectSettings):
    """A collect's settings (tasks/collect/settings.py, declared there once) and what it
    reads and writes; replay then runs the panels."""

    benchmark: Path | None = None  #: default: curate's test split
    predictions: tuple[Path, ...] = ()
    diffs: tuple[Path, ...] = ()
    out: Path  #: the panels' benchmark folder


class CheckStage(CheckSettings):
    """A release gate's settings (tasks/gate/settings.py, declared there once) and what it
    gates; it runs first, so that collect and replay leave out the rows it fails."""

    benchmark: Path | None = None  #: default: what collect reads, else curate's test split, else what replay runs


class GenerateStage(GenerateSettings):
    """A generate's settings (tasks/generate/settings.py, declared there once) and what it
    generates; replay then runs the generated suites with the benchmark's own."""

    benchmark: Path | None = None  #: default: collect's panels, else curate's test split
    configuration: str  #: the generated suites' configuration
    command: str  #: the agent's command, run in the sandbox
    out: Path | None = None  #: the benchmark folder the suites go to (default: `benchmark`)

    @field_validator("configuration")
    @classmethod
    def _folder_name(cls, value: str) -> str:
        return checked_configuration(value)


class ReplayStage(ReplaySettings):
    """A replay's settings (tasks/replay/settings.py, declared there once) and what it replays."""

    benchmark: Path | None = None  #: default: collect's panels, else curate's test split


class ScoreStage(ScoreSettings):
    """A score's settings (tasks/score/settings.py, declared there once) and whether it
    measures coverage."""

    coverage: bool = False  #: also measure ΔC and EC (one more run of every suite)


class ReportStage(_Section):
    out: Path | None = None  #: default: report.html in the store


class PipelineConfig(_Section):
    store: Path
    #: where every stage runs ([run]: backend, workers, dask_address or [run.dask_cluster],
    #: work, unsafe_no_sandbox, patch_fuzz: tasks/execution/run_settings.py)
    run: RunSettings = RunSettings()
    curate: CurateStage | None = None
    check: CheckStage | None = None
    collect: CollectStage | None = None
    generate: GenerateStage | None = None
    replay: ReplayStage = ReplayStage()
    score: ScoreStage = ScoreStage()
    report: ReportStage = ReportStage()

    @property
    def collect_benchmark(self) -> Path | None:
        if self.collect is None:
            return None
        return self.collect.benchmark or (self.curate.out if self.curate else None)

    @property
    def check_benchmark(self) -> Path | None:
        """What the gate reads: its own, else the rows the first stage after it reads."""
        if self.check is None:
            return None
        return self.check.benchmark or self.collect_benchmark or (self.curate.out if self.curate else None) or \
            self.replay_benchmark

    @property
    def generate_benchmark(self) -> Path | None:
        """What generate reads: its own, else what the stage before it produces."""
        if self.generate is None:
            return None
        return self.generate.benchmark or (self.collect.out if self.collect else None) or (
            self.curate.out if self.curate else None)

    @property
    def generate_out(self) -> Path | None:
        """Where generate writes its suites: its `out`, else the benchmark it reads."""
        return None if self.generate is None else self.generate.out or self.generate_benchmark

    @property
    def replay_benchmark(self) -> Path:
        """What replay runs: the stage before it produces it when there is one."""
        chosen = self.replay.benchmark or self.generate_out or (self.collect.out if self.collect else None) or (
            self.curate.out if self.curate else None)
        assert chosen is not None, "load_pipeline checks it"
        return chosen

    @property
    def report_out(self) -> Path:
        return self.report.out or self.store / "report.html"

    @property
    def replay_trusted(self) -> bool:
        """Only the bundled benchmark's own code is trusted (as by the CLI's replay)."""
        return self.replay_benchmark.resolve() == BUNDLED

    @property
    def collect_trusted(self) -> bool:
        """The bundled benchmark's own candidates only: patches from outside never are."""
        chosen = self.collect_benchmark
        return (chosen is not None and chosen.resolve() == BUNDLED and self.collect is not None
                and not self.collect.predictions and not self.collect.diffs)


class PipelineConfigError(BenchmarkError):
    """A pipeline config is invalid; the message names the file and the field."""


def _resolved(config: PipelineConfig, base: Path, store: Path | None) -> PipelineConfig:
    def at(path: Path | None) -> Path | None:
        return None if path is None else (path if path.is_absolute() else (base / path).resolve())

    def stage(section: BaseModel | None, *fields: str) -> BaseModel | None:
        return None if section is None else section.model_copy(update={f: at(getattr(section, f)) for f in fields})

    collect = stage(config.collect, "benchmark", "out")
    if collect is not None:
        collect = collect.model_copy(update={"predictions": tuple(at(p) for p in collect.predictions),
                                             "diffs": tuple(at(d) for d in collect.diffs)})
    generate = stage(config.generate, "benchmark", "out", "strategy")
    if generate is not None:
        generate = generate.model_copy(update={"tools": tuple(at(t) for t in generate.tools)})
    return config.model_copy(update={
        "store": store.resolve() if store else at(config.store),
        "run": config.run.model_copy(update={"work": at(config.run.work)}),
        "curate": stage(config.curate, "config", "out"), "check": stage(config.check, "benchmark"),
        "collect": collect, "generate": generate,
        "replay": stage(config.replay, "benchmark"), "report": stage(config.report, "out"),
    })


def load_pipeline(path: Path, store: Path | None = None) -> PipelineConfig:
    """Read and check a pipeline config, its paths resolved against its folder; `store`
    (relative to the working directory) replaces the config's store."""
    config = read_config(path, PipelineConfig, PipelineConfigError)
    if config.replay.benchmark is None and config.collect is None and config.curate is None \
            and config.generate is None:
        raise PipelineConfigError(path, "replay.benchmark",
                                  "required when none of [generate], [collect] and [curate] is set")
    if config.generate is not None and config.generate.benchmark is None and config.collect is None \
            and config.curate is None:
        raise PipelineConfigError(path, "generate.benchmark", "required when neither [collect] nor [curate] is set")
    if config.collect is not None and config.collect.benchmark is None and config.curate is None:
        raise PipelineConfigError(path, "collect.benchmark", "required when [curate] is not set")
    return _resolved(config, path.parent.resolve(), store)
