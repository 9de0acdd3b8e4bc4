"""Benchmark: what early stop (`testprism replay --early-stop`) saves, measured per instance.

Reads two stores of the same benchmark replayed once without and once with `--early-stop`
(each into a store and a work area of its own, so that both pay the same environment and
state builds), and prints per instance: runs stored, attempts made in a sandbox (a row
reused from another's work carries its attempts without making them: cost_model's
`attempts_executed`), runs left out (`E`/early_stopped), the runs' own time in their
sandboxes (the executed rows' `duration_s`) and the share of each saved; then the same
pooled, and whether every suite's joint success S, which is all JVR is made of, is the same
in both (tasks/score/metrics.py `instance_scores`). The replays' wall times come from the
caller (`--wall FULL STOPPED`, e.g. `/usr/bin/time`'s), as only they include what a replay
spends outside its runs.

Run: `python bench/early_stop_saving.py FULL_STORE STOPPED_STORE [--wall 412 230]`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cost_model import attempts_executed, content_keys  # noqa: E402 - the bench's sibling, one mechanism per job

from testprism.storage import Store  # noqa: E402
from testprism.tasks.score.metrics import instance_scores  # noqa: E402

log = logging.getLogger("bench.early_stop_saving")
console = Console(width=max(160, Console().width))


def sandbox_seconds(runs: pl.DataFrame) -> float:
    """The runs' own time in a sandbox: each content key's executed row once (reused rows and
    twins carry another's work, early-stopped rows made none)."""
    ran = runs.with_columns(key=pl.Series(content_keys(runs))).filter(pl.col("reused_from").is_null())
    return float(ran.unique("key", keep="first")["duration_s"].fill_null(0.0).sum())


def per_instance(runs: pl.DataFrame) -> dict[str, tuple[int, int, int, float]]:
    """Per instance: rows, attempts executed, rows left out by early stop, sandbox seconds."""
    found = {}
    for (instance,), part in runs.group_by("instance_id"):
        stopped = int((part["reason"] == "early_stopped").sum())
        found[instance] = (part.height, attempts_executed(part), stopped, sandbox_seconds(part))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("full", type=Path, help="store of the replay without --early-stop")
    parser.add_argument("stopped", type=Path, help="store of the replay with --early-stop")
    parser.add_argument("--wall", nargs=2, type=float, default=None, metavar=("FULL", "STOPPED"),
                        help="the two replays' wall times in seconds")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)])

    full_runs, stopped_runs = (Store(p).scan("runs").collect() for p in (args.full, args.stopped))
    full, stopped = per_instance(full_runs), per_instance(stopped_runs)
    table = Table(title=f"early stop, per instance: {args.full} (without) against {args.stopped} (with)")
    for column in ("instance", "runs", "attempts without", "attempts with", "attempts saved", "left out (E)",
                   "sandbox s without", "sandbox s with", "sandbox time saved"):
        table.add_column(column, justify="left" if column == "instance" else "right")
    totals = [0, 0, 0, 0, 0.0, 0.0]
    for instance in sorted(full):
        rows, made, _, seconds = full[instance]
        _, made_es, left_out, seconds_es = stopped.get(instance, (0, 0, 0, 0.0))
        table.add_row(instance, str(rows), str(made), str(made_es), f"{1 - made_es / made:.0%}", str(left_out),
                      f"{seconds:.1f}", f"{seconds_es:.1f}", f"{1 - seconds_es / seconds:.0%}")
        for k, value in enumerate((rows, made, made_es, left_out, seconds, seconds_es)):
            totals[k] += value
    rows, made, made_es, left_out, seconds, seconds_es = totals
    table.add_row("all", str(rows), str(made), str(made_es), f"{1 - made_es / made:.0%}", str(left_out),
                  f"{seconds:.1f}", f"{seconds_es:.1f}", f"{1 - seconds_es / seconds:.0%}", style="bold")
    console.print(table)
    if args.wall:
        console.print(f"replay wall time: {args.wall[0]:.0f} s without, {args.wall[1]:.0f} s with: "
                      f"{1 - args.wall[1] / args.wall[0]:.0%} saved")

    key = ["configuration", "instance_id"]
    s_full = instance_scores(Store(args.full)).select(*key, "s")
    s_stopped = instance_scores(Store(args.stopped)).select(*key, "s")
    both = s_full.join(s_stopped, on=key, how="full", suffix="_stopped", coalesce=True)
    differ = both.filter(pl.col("s").ne_missing(pl.col("s_stopped")))
    console.print(f"joint success S per suite and instance: {both.height - differ.height} of {both.height} the same"
                  + ("" if differ.is_empty() else f"; differing: {differ.rows()}"))
    jvr = both.group_by("configuration").agg(pl.col("s").mean().alias("mean S without"),
                                              pl.col("s_stopped").mean().alias("mean S with")).sort("configuration")
    console.print(jvr)


if __name__ == "__main__":
    main()
