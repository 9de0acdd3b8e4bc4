"""The crossval config (heterogeneous synthesis): the agents, what they are shown, their
caps, and where the suites go (docs/generate.md, "Heterogeneous synthesis and peer
cross-validation"; examples/crossval/crossval.toml).

Paths are relative to the config file. A bad file fails in one line naming the file and
the field, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from testprism.tasks.curate.judge import JudgeConfig, JudgeConfigError
from testprism.tasks.generate.review import ReviewRule

from testprism.tasks.generate.strategy import Caps
from testprism.tasks.generate.task_folder import Mode
from testprism.tasks.importing.suite_import import checked_configuration
from testprism.tasks.model.benchmark import BenchmarkError
from testprism.tasks.model.config_file import read_config


class CrossvalConfigError(BenchmarkError):
    """A crossval config is invalid; the message names the file and the field."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Agent(_Section):
    """One of the K heterogeneous agents: its suites become configuration `name`."""

    name: str
    command: str
    tools: tuple[Path, ...] = ()
    strategy: Path | None = None  #: a strategy JSON; `repair` is set: every agent writes a repair
    mode: Mode | None = None  #: default: the config's

    @field_validator("name")
    @classmethod
    def _folder_name(cls, value: str) -> str:
        return checked_configuration(value)


class CrossvalConfig(_Section):
    benchmark: Path
    out: Path  #: a benchmark folder: each agent's suites and the merged ones
    merged: str = "testhelix"  #: the merged suites' configuration
    mode: Mode = Mode.PLAIN
    feedback_rounds: int = Field(1, ge=0, le=5)
    caps: Caps = Caps()  #: per run; a feedback round spends what its first run left of them
    model_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    agents: tuple[Agent, ...] = Field(min_length=2)
    #: the semantic review of flagged tests: on when the table is there (curate's judge
    #: settings, tasks/curate/judge.py JudgeConfig; what it leaves out comes from the environment)
    review: dict[str, Any] | None = None
    #: how execution's flag and the review combine (tasks/generate/review.py ReviewRule)
    rule: ReviewRule = ReviewRule.EXECUTION

    def review_config(self) -> JudgeConfig | None:
        return None if self.review is None else JudgeConfig.load(self.review)

    @field_validator("merged")
    @classmethod
    def _folder_name(cls, value: str) -> str:
        return checked_configuration(value)

    @field_validator("agents")
    @classmethod
    def _distinct(cls, agents: tuple[Agent, ...]) -> tuple[Agent, ...]:
        names = [a.name for a in agents]
        if len(set(names)) != len(names):
            raise ValueError(f"two agents share a name: {sorted(n for n in names if names.count(n) > 1)[0]}")
        return agents


def load_crossval(path: Path) -> CrossvalConfig:
    """Read and check a crossval config, its paths resolved against its folder."""
    config = read_config(path, CrossvalConfig, CrossvalConfigError)
    base = path.parent.resolve()

    def at(p: Path | None) -> Path | None:
        return None if p is None else (p if p.is_absolute() else (base / p).resolve())

    agents = []
    for n, agent in enumerate(config.agents):
        for tool in agent.tools:
            if not at(tool).is_file():
                raise CrossvalConfigError(path, f"agents.{n}.tools", f"{tool}: no such file")
        agents.append(agent.model_copy(update={"tools": tuple(at(t) for t in agent.tools),
                                               "strategy": at(agent.strategy)}))
    if config.merged in {a.name for a in agents}:
        raise CrossvalConfigError(path, "merged", f"{config.merged!r} is also an agent's name")
    if config.rule is not ReviewRule.EXECUTION and config.review is None:
        raise CrossvalConfigError(path, "rule", f"{config.rule.value!r} needs a [review] table (the judge)")
    try:
        config.review_config()
    except JudgeConfigError as exc:
        setting, _, message = str(exc).partition(": ")
        raise CrossvalConfigError(path, setting.replace("judge.", "review.", 1), message) from exc
    return config.model_copy(update={"benchmark": at(config.benchmark), "out": at(config.out), "agents": tuple(agents)})
