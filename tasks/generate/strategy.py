"""A generation strategy: the fields an agent's run is shaped by, each with its bounds, and the
fixed caps no strategy may raise (TestPrism's Table 12: "mutable strategy ranges and fixed
inference caps").

The strategy is what rsi searches over, so its fields are bounded numbers with defaults, and
its `instructions`, prompt text the agent adds to what it tells its model, bounded in length
(the paper's self-improvement refines the synthesis strategy itself, not only its knobs); the
caps are what keeps a search honest: every strategy is tried under the same inference budget,
so a better JSF is never bought with more tokens. A run receives its strategy as
`tmp/.task/strategy.json` (docs/generate.md documents the file).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from testprism.tasks.model.input_error import BenchmarkError
from testprism.tasks.model.config_file import read_config
from testprism.tasks.model.hashing import digest


class StrategyError(BenchmarkError):
    """A strategy, its bounds or its caps are invalid; the message names the file and field."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Strategy(_Frozen):
    """The mutable fields (defaults: the shape of TestPrism's Table 12)."""

    rounds: int = 3  #: test-repair rounds: write, run on the buggy program, revise
    agent_steps: int = 30  #: model calls of the whole run, at most
    repair_steps: int = 10  #: model calls spent on a repair (heterogeneous synthesis), at most
    context_tokens: int = 16_000  #: program text in the prompt (about 4 characters a token)
    tool_output_chars: int = 4_000  #: test output fed back to the model per round
    review_tokens: int = 2_048  #: max_tokens of one reply
    model: str = "default"  #: the model name sent to the endpoint
    repair: bool = False  #: also write a repair of the program (heterogeneous synthesis)
    #: how to go about the task, in words: the agent adds it to its system prompt (rsi's llm
    #: proposer may rewrite it, within `StrategySpace.instructions_max_chars`)
    instructions: str = ""

    @property
    def key(self) -> str:
        """Without instructions, the key a strategy had before they existed (stores keep their runs)."""
        return digest("strategy", self.model_dump_json(exclude=None if self.instructions else {"instructions"}))

    def as_json(self) -> str:
        return json.dumps(self.model_dump(), indent=2, sort_keys=True) + "\n"


class Bound(_Frozen):
    low: int
    high: int

    @model_validator(mode="after")
    def _ordered(self) -> Bound:
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        return self


#: the searchable fields and their ranges (the paper's shape: rounds and steps small
#: integers, budgets of context and output in the thousands); plain pairs, made into
#: `Bound`s when a space is made: a model built at import would cost the CLI's `--help`
#: its schema (the models here defer theirs, issue 32)
DEFAULT_BOUNDS: dict[str, tuple[int, int]] = {
    "rounds": (1, 8),
    "agent_steps": (5, 100),
    "repair_steps": (0, 40),
    "context_tokens": (2_000, 64_000),
    "tool_output_chars": (500, 20_000),
    "review_tokens": (256, 8_192),
}


def default_bounds() -> dict[str, Bound]:
    return {name: Bound(low=low, high=high) for name, (low, high) in DEFAULT_BOUNDS.items()}


class Caps(_Frozen):
    """Fixed per run and per search: a strategy cannot raise them. The per-run caps are
    options of generate's CLI (flows/settings_options.py flattens them); the search's are
    an rsi space's (`cli` False)."""

    wall_clock_s: float = Field(1_800.0, gt=0, description="cap: seconds of one run",
                                json_schema_extra={"cli": "--wall-clock"})
    run_tokens: int = Field(200_000, gt=0, description="cap: tokens of one run, measured by the channel")
    run_steps: int = Field(120, gt=0, description="cap: model calls of one run")
    search_tokens: int = Field(5_000_000, gt=0, description="cap: every run of an rsi search together",
                               json_schema_extra={"cli": False})
    #: the most tokens one model reply may count: the headroom rsi keeps per run under
    #: `search_tokens`, because the channel learns a reply's tokens only once it is back,
    #: so a run may pass its own cap by its last reply (tasks/generate/search.py)
    reply_tokens: int = Field(16_000, gt=0, description="the most tokens one model reply may count (rsi's headroom)",
                              json_schema_extra={"cli": False})


#: how long the instructions a proposer writes may be, by default (characters)
INSTRUCTIONS_MAX_CHARS = 2_000


class StrategySpace(_Frozen):
    """`strategy.toml`: the starting strategy, the bounds of the fields a search may move,
    the longest instructions a proposer may write (0: the text is not searched) and the
    caps. Each bound must contain its field's starting value."""

    strategy: Strategy = Field(default_factory=Strategy)
    bounds: dict[str, Bound] = Field(default_factory=default_bounds)
    instructions_max_chars: int = Field(INSTRUCTIONS_MAX_CHARS, ge=0)
    caps: Caps = Field(default_factory=Caps)

    @property
    def identity(self) -> str:
        """The space as JSON, the text fields left out while at their defaults (so a search
        keeps the identity it had before they existed)."""
        exclude: dict = {}
        if not self.strategy.instructions:
            exclude["strategy"] = {"instructions"}
        if self.instructions_max_chars == INSTRUCTIONS_MAX_CHARS:
            exclude["instructions_max_chars"] = True
        return self.model_dump_json(exclude=exclude or None)

    @model_validator(mode="after")
    def _within(self) -> StrategySpace:
        if self.instructions_max_chars and len(self.strategy.instructions) > self.instructions_max_chars:
            raise ValueError(f"strategy.instructions: {len(self.strategy.instructions)} characters, past "
                             f"instructions_max_chars = {self.instructions_max_chars}")
        for name, bound in self.bounds.items():
            if name not in DEFAULT_BOUNDS:
                raise ValueError(f"bounds.{name}: not a searchable field; one of {', '.join(DEFAULT_BOUNDS)}")
            value = getattr(self.strategy, name)
            if not bound.low <= value <= bound.high:
                raise ValueError(f"strategy.{name} = {value} is outside bounds.{name} [{bound.low}, {bound.high}]")
        return self


def load_space(path: Path | None) -> StrategySpace:
    """The space of `path` (TOML), or the defaults."""
    return StrategySpace() if path is None else read_config(path, StrategySpace, StrategyError)


def load_strategy(path: Path | None) -> Strategy:
    """A strategy JSON file (what `--strategy` names and rsi exports), or the defaults."""
    if path is None:
        return Strategy()
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise StrategyError(path, "(file)", f"cannot read: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise StrategyError(path, "(syntax)", str(exc)) from exc
    try:
        return Strategy.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise StrategyError(path, ".".join(str(p) for p in first["loc"]) or "(root)", first["msg"]) from exc
