"""The settings of the generation stages, each declared once: generate, rsi, crossval and
select.

Each option is a field with its default, bounds and help text. The CLI's options are
made from these fields (flows/settings_options.py), each flow takes its object whole
(Prefect's run form shows every field), the pipeline config's `[generate]` section is
`GenerateSettings` plus what it generates (tasks/pipeline/config.py), and prefect.yaml's
deployments are checked against them (tests/test_pipeline_config.py). What names a stage's
inputs and outputs (the benchmark, the store, the configuration a generate writes, the
agent's command) stays a parameter of its own, as replay's benchmark does.

Crossval's settings are its config file's model (tasks/generate/crossval_config.py
`CrossvalConfig`): the agents are a list of tables, which a config file holds and a
command line does not.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from testprism.tasks.generate.strategy import Caps
from testprism.tasks.generate.task_folder import Mode

#: a file an option names: typer checks that it exists before the command runs
_FILE = {"typer": {"exists": True, "dir_okay": False}}


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class AgentSettings(_Settings):
    """What an agent's runs are given, shared by generate and rsi."""

    mode: Mode = Field(Mode.PLAIN, description="plain: the instruction; testprism: and the reference fix")
    tools: tuple[Path, ...] = Field((), description="a file placed at tmp/.task/tools/ (repeatable)",
                                    json_schema_extra={"cli": "--tool", **_FILE})
    model_url: str | None = Field(
        None, description="the OpenAI-compatible base URL the runs may reach through their channel (none: no way "
                          "out); rsi's llm proposer asks it too")
    api_key_env: str | None = Field("OPENAI_API_KEY", description="harness variable holding the endpoint's key")


class GenerateSettings(AgentSettings):
    """What a generate does, whatever runs it."""

    strategy: Path | None = Field(None, description="strategy JSON (docs/generate.md)", json_schema_extra=_FILE)
    caps: Caps = Field(default_factory=Caps, description="the fixed caps of one run")
    instances: tuple[str, ...] = Field((), description="only these instances (repeatable)",
                                       json_schema_extra={"cli": "--instance"})


class Proposer(StrEnum):
    """Who proposes an rsi round's strategy."""

    TPE = "tpe"  #: Optuna's TPE sampler
    LLM = "llm"  #: a model over `model_url`


class RsiSettings(AgentSettings):
    """What an rsi search does, whatever runs it."""

    rounds: int = Field(ge=1, description="rounds in all, stored ones included (a rerun resumes)")
    space: Path | None = Field(
        None, description="strategy.toml: [strategy], [bounds.<field>] low/high, [caps] (default: the built-in space)",
        json_schema_extra=_FILE)
    proposer: Proposer = Field(Proposer.TPE, description="tpe: Optuna's TPE sampler; llm: a model over --model-url")
    proposer_model: str | None = Field(None, description="the llm proposer's model (default: the starting strategy's "
                                                         "model)")
    seed: int = Field(0, description="TPE's seed (round r samples with seed + r)")
    export_to: Path | None = Field(None, description="write the best strategy here (JSON, for generate --strategy)",
                                   json_schema_extra={"cli": "--export", "typer": {"dir_okay": False}})

    @field_validator("proposer")
    @classmethod
    def _llm_has_a_model(cls, proposer: Proposer, info: ValidationInfo) -> Proposer:
        """(`model_url` is validated before: AgentSettings declares it first.)"""
        if proposer is Proposer.LLM and not info.data.get("model_url"):
            raise ValueError("the llm proposer needs --model-url")
        return proposer


class SelectSettings(_Settings):
    """What a select exports, whatever runs it. `by` and `minimum` are checked with the
    store at hand (tasks/generate/selection.py `check_criterion`), so a bad one is refused
    in the error every select input gets: the store and the option named."""

    by: str = Field(description="the per-instance metric: jvr, wdr, car or grr (docs/generate.md)")
    minimum: float = Field(description="select where the metric is at least this, in [0, 1]",
                           json_schema_extra={"cli": "--min"})
    configurations: tuple[str, ...] = Field((), description="only these configurations (repeatable)",
                                            json_schema_extra={"cli": "--configuration"})
    export_format: str = Field("trajectory", description="trajectory: a record per suite; chat: its recorded model "
                                                         "conversations as {\"messages\": [...]} lines",
                               json_schema_extra={"cli": "--format"})
    max_tokens: int | None = Field(None, description="chat: the export's token budget (channel-measured)")
