"""The curate config: one TOML file says which sources to read, their bounds, the split,
the judge and the difficulty filter (docs/curate.md; examples/curate.toml).

Paths are relative to the config file, so a config and its sources travel together. A bad
file fails in one line naming the file and the field (CurateConfigError, a BenchmarkError:
flows/errors.py prints it and exits 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from testprism.tasks.curate.judge import JudgeConfig, JudgeConfigError
from testprism.tasks.curate.selection import SourceRule, SplitRule
from testprism.tasks.model.benchmark import BenchmarkError
from testprism.tasks.model.benchmark_format import NAME
from testprism.tasks.model.config_file import read_config
from testprism.tasks.model.hashing import digest


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceConfig(_Section):
    """One source benchmark and the adapter that reads it."""

    name: str = Field(pattern=NAME)  #: the `source` its instances get (a benchmark keeps its own)
    kind: Literal["benchmark", "swebench", "harbor", "exercises"]
    #: benchmark: the folder holding instances/; swebench: the rows file; harbor: the folder of
    #: task folders; exercises: the track's root (holding exercises/practice/)
    path: Path
    recipes: tuple[Path, ...] = ()  #: swebench: recipe files or folders
    repos: Path | None = None  #: swebench: clones named owner__name, or a mapping file
    releases: Path | None = None  #: swebench: release folders named by instance id, or a mapping file


class DifficultyConfig(_Section):
    """SWEPatchTest's filter: drop what every configuration of a panel already solves."""

    configurations: tuple[str, ...] = ()
    store: Path | None = None  #: where their runs are (default: the curate store)


class CurateConfig(_Section):
    sources: tuple[SourceConfig, ...] = Field(min_length=1)
    bounds: dict[str, SourceRule] = {}  #: per source name
    split: SplitRule = SplitRule()
    difficulty: DifficultyConfig = DifficultyConfig()
    #: the reference-test audit: on when the table is there (tasks/curate/judge.py JudgeConfig;
    #: what it leaves out comes from the environment, e.g. the API key)
    judge: dict[str, Any] | None = None

    def judge_config(self) -> JudgeConfig | None:
        return None if self.judge is None else JudgeConfig.load(self.judge)

    @property
    def key(self) -> str:
        """What the selection depends on, besides the sources' content."""
        return digest("curate-config", self.model_dump_json())


class CurateConfigError(BenchmarkError):
    """A curate config is invalid; the message names the file and the field."""


def _resolved(config: CurateConfig, base: Path) -> CurateConfig:
    def at(path: Path | None) -> Path | None:
        return None if path is None else (path if path.is_absolute() else (base / path).resolve())

    sources = tuple(s.model_copy(update={"path": at(s.path), "recipes": tuple(at(r) for r in s.recipes),
                                         "repos": at(s.repos), "releases": at(s.releases)})
                    for s in config.sources)
    difficulty = config.difficulty.model_copy(update={"store": at(config.difficulty.store)})
    return config.model_copy(update={"sources": sources, "difficulty": difficulty})


def load_config(path: Path) -> CurateConfig:
    """Read and check a curate config; its paths resolved against its folder."""
    config = read_config(path, CurateConfig, CurateConfigError)
    names = [s.name for s in config.sources]
    if len(set(names)) != len(names):
        raise CurateConfigError(path, "sources.name", f"names repeat: {sorted(n for n in names if names.count(n) > 1)}")
    try:
        config.judge_config()
    except JudgeConfigError as exc:
        setting, _, message = str(exc).partition(": ")
        raise CurateConfigError(path, setting, message) from exc
    resolved = _resolved(config, path.parent.resolve())
    for i, source in enumerate(resolved.sources):
        wanted_file = source.kind == "swebench"
        if not (source.path.is_file() if wanted_file else source.path.is_dir()):
            raise CurateConfigError(path, f"sources.{i}.path",
                                    f"{source.path} is not {'a file' if wanted_file else 'a folder'}")
    return resolved
