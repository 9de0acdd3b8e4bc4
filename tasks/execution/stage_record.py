"""What a stage ran with, stored beside what it produced: one `stage_runs` row each time a
stage's driver starts (flows/driver.py), so that which backend, limits, policy, placement,
stage settings and environment overrides a replay used can be read back from the store
(`testprism show`, and any reader of the dataset) rather than inferred from a row's
`policy_hash`. Harbor writes a job lock and inspect_ai an `EvalConfig` into each log for the
same reason: a result is only as reproducible as the settings kept with it.

What is written is what the runs were given, resolved: where the stage runs (its
RunSettings, tasks/execution/run_settings.py), the execution options (backend,
work area, limits, policy with its key, concurrency, trust, early stop, warm), the placement
(workers, cluster address or class), the stage's own settings object when it has one, and
the `TESTPRISM_*` environment variables set when the stage started (the docker backend's
switches, the image map, ...: overrides of the declared settings). Never the run order's
secret (ExecutionOptions.order_secret: a run must learn nothing from its place, and the
store is readable by whoever scores it), and never a variable whose name says it holds a
credential (KEY, TOKEN, SECRET, PASSWORD): those are named with their value withheld.
"""

from __future__ import annotations

import json
import os
import platform
import uuid
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.execution.batch import ExecutionOptions

#: environment variables recorded: the project's own switches
RECORDED_PREFIX = "TESTPRISM_"
#: a variable whose name holds one of these is recorded by name only
CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
WITHHELD = "(set; value withheld)"


def _plain(value: Any) -> Any:
    """A JSON-able form of an option's value: dataclasses and models as mappings, paths and
    times as text."""
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, (Path, datetime)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def options_record(options: ExecutionOptions) -> dict[str, Any]:
    """The execution options as stored: every field but the order's secret, plus the
    policy's key (what the rows' `policy_hash` is made from)."""
    fields = {name: _plain(getattr(options, name)) for name in options.__dataclass_fields__ if name != "order_secret"}
    return fields | {"policy_key": options.policy.key, "limits_key": options.limits.key,
                     "policy_hash": options.policy_hash}


def environment_record(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The `TESTPRISM_*` variables set, credentials by name only."""
    environ = dict(os.environ if environ is None else environ)
    return {name: (WITHHELD if any(word in name.upper() for word in CREDENTIAL_WORDS) else value)
            for name, value in sorted(environ.items()) if name.startswith(RECORDED_PREFIX)}


def stage_row(stage: str, options: ExecutionOptions, placement: dict[str, Any], settings: Any = None,
              run: Any = None) -> dict[str, Any]:
    """One `stage_runs` row (schema: storage/schema.py STAGE_RUNS)."""
    from testprism import __version__

    return {
        "stage_run": uuid.uuid4().hex, "stage": stage, "started_at": datetime.now(UTC),
        "testprism_version": __version__, "python": platform.python_version(), "host": platform.node(),
        "backend": options.backend, "policy_hash": options.policy_hash,
        "options": json.dumps(options_record(options), sort_keys=True),
        "placement": json.dumps(_plain(placement), sort_keys=True),
        "settings": None if settings is None else json.dumps(_plain(settings), sort_keys=True),
        "run": None if run is None else json.dumps(_plain(run), sort_keys=True),
        "environment": json.dumps(environment_record(), sort_keys=True),
    }


def record_stage(stage: str, options: ExecutionOptions, placement: dict[str, Any], settings: Any = None,
                 run: Any = None) -> None:
    """Append the stage's row to its store (a stage without a store of its own, such as a
    batch run for a caller that writes the rows, records nothing)."""
    if options.store_root is None:
        return
    row = stage_row(stage, options, placement, settings, run)
    Store(options.store_root).append("stage_runs", pa.Table.from_pylist([row], schema=SCHEMAS["stage_runs"]))


def stage_runs(store: Store, stage: str | None = None) -> list[dict[str, Any]]:
    """The stored rows, newest first (of `stage` only, when given), their JSON read back."""
    if not store.parts("stage_runs"):
        return []
    rows = store.scan("stage_runs").collect().sort("started_at", descending=True).to_dicts()
    return [row | {k: json.loads(row[k]) if row[k] is not None else None
                   for k in ("options", "placement", "settings", "run", "environment")}
            for row in rows if stage is None or row["stage"] == stage]
