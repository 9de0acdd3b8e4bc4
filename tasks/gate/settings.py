"""A gate's own settings, declared once (as tasks/collect/settings.py is for collect).

`check`'s options beyond what it reads (the benchmark) and where it runs (backend,
workers, work area: shared by every stage) are fields here; the CLI's options are made
from them (flows/settings_options.py) and the flow takes the object whole. The runs are
collect's gold runs: with the same limit and `--patch-fuzz` their keys are collect's, so
a gate followed by a collect (or the other way) runs each check once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # the sandbox's module is not the CLI's to import for a `--help` (issue 32)
    from testprism.tasks.sandbox.limits import Limits


class CheckSettings(BaseModel):
    """What a gate run does, whatever runs it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    timeout_s: float = Field(300.0, gt=0, description="wall-clock limit of one run of the checks, seconds (collect's "
                                                      "default: the same runs are reused by collect)",
                             json_schema_extra={"cli": "--timeout"})

    def limits(self) -> Limits:
        from testprism.tasks.sandbox.limits import Limits

        return Limits(timeout_s=self.timeout_s)
