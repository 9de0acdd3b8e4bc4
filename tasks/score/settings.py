"""What a score does, declared once: the bootstrap's replicates and seed, and whether rows
that failed the release gate count. The CLI's `score` options are made from these fields
(flows/settings_options.py), the flow takes the object whole, and a pipeline config's
`[score]` is this model plus whether coverage is measured (tasks/pipeline/config.py).
Where its coverage runs happen is the stage's RunSettings, as for every stage."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ScoreSettings(BaseModel):
    """How a store is scored, whatever starts it (the CLI, a deployment, a pipeline config)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    replicates: int = Field(10_000, gt=0, description="bootstrap replicates of every interval")
    seed: int = Field(42, description="seed of the bootstrap's draws")
    include_failed_gate: bool = Field(
        False, description="also score the instances whose newest release gate verdict is not ok (docs/gate.md)")
