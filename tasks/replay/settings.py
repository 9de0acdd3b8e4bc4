"""A replay's own settings, declared once.

Every option a replay has beyond where it runs (backend, workers, work area: shared by
every stage) is a field here, with its default, its bounds and its help text. The CLI's
`replay` options are made from these fields (flows/settings_options.py), the flow takes
the object whole (`replay_flow(settings=...)`, so Prefect's run form shows each field with
its description), the pipeline config's `[replay]` section is this model plus the
benchmark it replays (tasks/pipeline/config.py), and prefect.yaml's defaults are checked
against it (tests/test_pipeline_config.py). Adding an option is adding a field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from testprism.tasks.sandbox.limits import Limits

if TYPE_CHECKING:
    from testprism.tasks.execution.verdict import Policy


class ReplaySettings(BaseModel):
    """What a replay does, whatever runs it (the CLI, a deployment, a pipeline config)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    configurations: tuple[str, ...] = Field(
        (), description="only these configurations (repeatable; none: every configuration)",
        json_schema_extra={"cli": "--configuration"})
    timeout_s: float = Field(
        Limits.timeout_s, gt=0, description="wall-clock limit of one run, seconds",
        json_schema_extra={"cli": "--timeout"})
    retry_errors: bool = Field(False, description="also redo stored timeouts, unstable and overflowing runs")
    concurrency: int | None = Field(
        None, gt=0,
        description="runs at once per worker (default: the backend's safe concurrency, split among local workers)")
    confirm_audit: float | None = Field(
        None, gt=0, le=1,
        description="replay to confirm every failure on buggy and reference, and only this seeded share of the "
                    "candidates' (default: every failure, the papers' rule); the scores' flakes table reports the "
                    "flake rate the audit observed, with its interval")
    audit_seed: int = Field(0, description="seed of --confirm-audit's draw")
    shared_disk: bool = Field(
        True,
        description="whether the Dask workers see this host's files; --no-shared-disk: each batch brings the "
                    "benchmark parts it reads, workers use their own work area ($TESTPRISM_WORK where they run) and "
                    "return their rows for the flow to write")
    early_stop: bool = Field(
        False,
        description="for JVR only: stop a suite's remaining runs on an instance once its joint success there is "
                    "decided (stored as E/early_stopped; GRR, CAR and WDR then undercount)")
    warm: bool = Field(
        False,
        description="clone each admitted Python run from its state's frozen warm process (the interpreter, pytest "
                    "and the program imported once per state, inside its sandbox) instead of starting it cold; local "
                    "backend, any benchmark, every state alike (SECURITY.md, Warm states)")
    include_failed_gate: bool = Field(
        False, description="also replay the rows whose newest release gate verdict (`testprism check`) is not ok")

    def limits(self) -> Limits:
        """The run limits these settings give (the rest are the defaults)."""
        return Limits(timeout_s=self.timeout_s)

    def policy(self) -> Policy:
        """The execution policy: how failures are confirmed (how patches apply is where the
        runs happen: the run settings' patch fuzz, set by the stage). Imported here: the CLI
        builds its options from this model for `--help`, which must not load the result parsers."""
        from testprism.tasks.execution.verdict import Policy

        return Policy(audit_share=self.confirm_audit, audit_seed=self.audit_seed)
