"""The select flow: the generated suites that meet a metric exported as fine-tuning
demonstrations (tasks/generate/selection.py), as a flow so that a deployment can run it
after a scheduled generate, replay and score.

Thin wiring: nothing runs in a sandbox; the settings are tasks/generate/settings.py's.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from testprism.tasks.generate.selection import SelectionSummary, select_demonstrations
from testprism.tasks.generate.settings import SelectSettings


@flow(name="select", log_prints=False)
def select_flow(store: str, out: str, settings: SelectSettings) -> SelectionSummary:
    """Write to `out` one demonstration per scored suite of `store` that meets
    `settings.by` >= `settings.minimum` (each field's description in Prefect's run form)."""
    return select_demonstrations(Path(store), settings.by, settings.minimum, Path(out), settings.configurations,
                                 settings.export_format, settings.max_tokens)
