"""Benchmark: a cost model, measured. What one run costs on a real repository, by component,
and what one configuration costs at SWEPatchTest's scale with each saving on and off.

Measured (one process, paired rounds, as bench/replay_overhead.py measures: its functions
are imported, not copied): one suite on the reference state of one real instance (default:
a SWE-bench Lite sympy record rebuilt from a PyPI source release, its suite a generated
test patch; building it: docs/performance.md, "A cost model"). Every round runs each of these `--block`
times back to back, in turn, so the machine's drifting load hits them alike:

- `bare`: the suite's command in a prepared copy of the state, no sandbox, no copy
  (replay_overhead.bare_runner; the suite's test patch applied once, untimed);
- `local`: LocalBackend.run as it runs by default: the state's tree a read-only image mounted
  fresh for the run under a writable layer of its own (issue 29; tasks/sandbox/layer.py,
  tree_image.py);
- `local-copy`: the same with a full copy of the state's tree into the run's workspace
  (TESTPRISM_LAYERED=0, the fallback and the default before the image);
- `local-tree`: the same with the old layer over the tree itself (TESTPRISM_LAYERED=tree);
- `local-warm`: `local` with each run cloned from the state's frozen warm process (`replay --warm`,
  tasks/sandbox/warm.py: the interpreter, pytest and the program imported once per state);
- `start`: the environment's interpreter with `import pytest`, from the state's tree: the
  part of a cold start a warm interpreter saves; `start+program` (`import pytest, sympy`)
  is the rest of it: a warm state (one warm process per state, `local-warm`) holds the
  program too;
- `state`: the state's tree materialised (tasks/model/state.py `materialise`: the program
  copied and the reference applied) into a fresh work area: once per state, not per run;
- `state-image`: the state's image built from its tree (tree_image.py `image_of`,
  mkfs.erofs): once per state, and only under the default.

and, after the rounds, alone: `fill` copy, tree layer and image layer
(replay_overhead.fill_cost: the workspace fill and its removal, which every attempt pays).

Components (medians; differences are medians over rounds of the paired difference):
interpreter + pytest import = start; the program's import = start+program − start; the
tests themselves = bare − start+program; workspace fill = fill; sandbox = local − bare −
fill (of the same way): bubblewrap, rlimits, the uid hand-over, JUnit read back; state tree
= state (+ state-image under the default).

Outcome shares are read from stores the same benchmark was replayed into (`--store`, the
default policy's first, then the audit policy's; `testprism replay … --confirm-audit 0.25
--audit-seed 1`): per kind of state (buggy, reference, valid, invalid candidate) the share
of runs that failed at their first attempt (`replayed` not null); the share of runs whose
content key (suite, state, environment, policy) repeats another row's; the attempts each
store took; the flake rate among replayed failures with its exact interval
(tasks/score/metrics.py `flake_table`). `--outcomes-of` takes the extrapolation's shares
from some instances only (an instance whose stand-in release does not behave as its
`base_commit` would skew them; the stores' table still shows every run).

Extrapolation (`core_hours`, a plain function): core-hours for ONE configuration at
`--instances` 619 × (1 buggy + 1 reference + `--valid` 45 + `--invalid` 89 candidates) =
136 runs an instance (SWEPatchTest's shape; the valid/invalid split is that of the
synthetic store of bench/synthetic_store.py). Assumptions:

1. every attempt costs what the measured run on the reference costs (its components: of
   `local`, `local-copy` or `local-tree` as the tree is given to it), a
   confirming replay as much as a first attempt (a fresh workspace each); an attempt holds
   one core for its wall time (pytest runs one thread; the sandbox's own work is on the
   same core), so core-hours = attempts × seconds per attempt / 3600;
2. the first-attempt failure share of each kind of state is the measured one; a failure
   is confirmed once (`Policy()`), or under the audit (buggy and reference always, the
   `--audit` share of candidates); infrastructure retries are left out (none were seen);
3. each state's tree is materialised once (one configuration: once per run), and under
   the default its image built once; where `--suites-per-state` suites are replayed on the
   same states (the rows saying so), each of them pays its share of the state's tree and
   image, cold or warm alike (the work area keeps a built state for every later run);
4. work never done twice: the measured share of runs whose content repeats another's
   inside one configuration is not run (nor its state built); what configurations share
   with each other (identical suites) is printed but not counted, this being one
   configuration; a rerun of the same configuration (a resume, a second replay) costs
   nothing more, which the line under the table says;
5. warm states (`replay --warm`, built; measured): a state's first attempt is cloned from
   its warm process and costs the measured `local-warm` run instead of `local` (the paired
   saving off the way's own run); its confirmations start cold (Environments.judged). Each
   warm state pays its warm process's start once (interpreter, pytest and the program
   imported: `start+program`), shared by the `--suites-per-state` suites run on the state
   in one replay (other configurations' on the same states; 1 when one configuration is
   replayed alone, where nothing is saved). `replay --warm` serves any benchmark, every
   state alike, agents' candidates included: each run is a clone of the state's frozen warm
   process (SECURITY.md, Warm states);
6. early stop for JVR-only questions (`replay --early-stop`; its saving estimated here): an instance's joint success
   S = F · Π a(valid) · Π r(invalid) is decided by the first run that contradicts it. From
   the default store, per suite: if buggy does not fail or the reference does not pass,
   two runs decide it; otherwise with a share p of its candidate runs contradicting, the
   first of 134 candidates in random order that does is, in expectation, at
   (134 + 1) / (134 p + 1) (hypergeometric first-success), and none (every run) when
   p = 0. Runs not made are saved with their confirmations ("estimated"). It answers JVR
   only: GRR, CAR, WDR and the rest need every run. `--early-stop-stores FULL STOPPED`
   (the same benchmark replayed without and with `--early-stop`) checks the estimate: it is
   computed at each suite's own runs in FULL and set beside the share of runs STOPPED made.

Below the table, the core-hours of every built saving on (the default's image layer) split
by component, against `--target` (40 core-hours): what remains and where it goes.

Prints the per-run components, the outcome measurement of each store and the core-hours
table. Run: `python bench/cost_model.py --benchmark DIR --instance ID --configuration C
--store DEFAULT_STORE --store AUDIT_STORE [--early-stop-stores FULL STOPPED] [--rounds 5 --block 2]`
as root with bubblewrap (no Docker needed). Defaults take 9–12 minutes on the sympy instance
(2 shared cores).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_overhead import (  # noqa: E402 - the bench's sibling, one mechanism per job
    MODE_SETTINGS, backend_runner, bare_environment, bare_runner, fill_cost, measure, subject, with_settings,
)

from testprism.storage import Store  # noqa: E402
from testprism.tasks.execution.batch import Environments  # noqa: E402
from testprism.tasks.model.benchmark import load_benchmark  # noqa: E402
from testprism.tasks.model.hashing import digest  # noqa: E402
from testprism.tasks.model.state import materialise, states_of  # noqa: E402
from testprism.tasks.model.workdir import WorkPaths  # noqa: E402
from testprism.tasks.sandbox import tree_image  # noqa: E402
from testprism.tasks.sandbox.local import LocalBackend  # noqa: E402
from testprism.tasks.sandbox.workspace import SETTLED_MTIME  # noqa: E402
from testprism.tasks.score.metrics import _flake_interval, flake_table  # noqa: E402 - the table's interval, pooled

log = logging.getLogger("bench.cost_model")
console = Console(width=max(200, Console().width))

KINDS = ("buggy", "reference", "valid", "invalid")

#: how an attempt is given its state's tree: the measured run of each (its runner's name)
PROGRAMS = {"copy": "local-copy", "tree": "local-tree", "image": "local"}


# -- the extrapolation (pure) ------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    """One configuration's runs: instances × states of each kind an instance."""

    instances: int = 619
    per_instance: tuple[tuple[str, int], ...] = (("buggy", 1), ("reference", 1), ("valid", 45), ("invalid", 89))

    @property
    def runs(self) -> int:
        return self.instances * sum(n for _, n in self.per_instance)


@dataclass(frozen=True)
class Savings:
    """Which savings are on."""

    audit: bool = False  # (a) the audit confirmation policy
    reuse: bool = False  # (b) work never done twice
    program: str = "copy"  # (c) how a run gets its state's tree (PROGRAMS): "image", the default, or "tree"
    warm: bool = False  # (d) warm states: every state's first attempt forked
    early_stop: bool = False  # (e) early stop, JVR-only (estimated)


def attempts(scale: Scale, first_failure: Mapping[str, float], audit_share: float | None) -> float:
    """Attempts of one configuration: every run once, and its failure replayed once when the
    policy confirms it (Policy.confirms: always, or buggy and reference always and the
    audit share of candidates)."""
    return sum(first + again for first, again in attempts_by_kind(scale, first_failure, audit_share).values())


def attempts_by_kind(scale: Scale, first_failure: Mapping[str, float], audit_share: float | None
                     ) -> dict[str, tuple[float, float]]:
    """`attempts` per kind of state: (first attempts, confirmations)."""
    made = {}
    for kind, n in scale.per_instance:
        confirm = 1.0 if audit_share is None or kind in ("buggy", "reference") else audit_share
        made[kind] = (scale.instances * n, scale.instances * n * first_failure.get(kind, 0.0) * confirm)
    return made



def core_hours(scale: Scale, savings: Savings, *, first_failure: Mapping[str, float], attempt_s: Mapping[str, float],
               warm_saving_s: float, warm_start_s: float, state_s: float, image_s: float, duplicate_share: float,
               early_stop_share: float, audit_share: float = 0.25, suites_per_state: int = 1) -> float:
    """Core-hours of one configuration (module docstring, Extrapolation): attempts ×
    seconds per attempt (`attempt_s` of the way the program is given; a warm first attempt
    `warm_saving_s` less, its state's warm process `warm_start_s` shared by
    `suites_per_state`) + states × seconds per state tree (and its image, under the image
    layer), each state's built once for the `suites_per_state` suites run on it (its warm
    process too), less the work the savings on leave undone. `early_stop_share` is the share of
    runs an early stop would still make."""
    cold = attempt_s[savings.program]
    seconds = 0.0
    warm = cold - warm_saving_s + warm_start_s / suites_per_state
    for first, again in attempts_by_kind(scale, first_failure, audit_share if savings.audit else None).values():
        seconds += first * (warm if savings.warm else cold) + again * cold
    seconds += scale.runs * (state_s + (image_s if savings.program == "image" else 0.0)) / suites_per_state
    if savings.reuse:
        seconds *= 1.0 - duplicate_share
    if savings.early_stop:
        seconds *= early_stop_share
    return seconds / 3600.0


def expected_runs_to_decide(candidates: int, contradicting_share: float) -> float:
    """Expected candidate runs until the first contradicting one, in random order, among
    `candidates` of which a share contradicts (first success without replacement:
    (n + 1) / (c + 1)); all of them when none does."""
    c = contradicting_share * candidates
    return float(candidates) if c <= 0 else min(float(candidates), (candidates + 1) / (c + 1))


# -- outcome shares from the stores ------------------------------------------------------------


def kind_of(state: str, label: str | None) -> str:
    return state if state in ("buggy", "reference") else (label or "invalid")


def store_runs(path: Path) -> pl.DataFrame:
    return Store(path).scan("runs").collect()


def outcome_shares(runs: pl.DataFrame) -> dict[str, float]:
    """Per kind of state, the share of runs that failed at their first attempt."""
    shares = {}
    kinds = runs.with_columns(kind=pl.struct("state", "label").map_elements(
        lambda r: kind_of(r["state"], r["label"]), return_dtype=pl.String))
    for kind in KINDS:
        part = kinds.filter(pl.col("kind") == kind)
        if part.height:
            shares[kind] = part["replayed"].is_not_null().sum() / part.height
    return shares


def content_keys(runs: pl.DataFrame) -> list[str]:
    """Each row's content key (suite, state, environment, policy), as tasks/replay/runs.py makes it."""
    return [digest("run", *r) for r in runs.select("suite_hash", "state_hash", "environment_hash",
                                                     "policy_hash").iter_rows()]


def duplicate_share(runs: pl.DataFrame) -> float:
    """The share of rows whose content key another row has (work done once for both)."""
    keys = content_keys(runs)
    return 1.0 - len(set(keys)) / len(keys) if keys else 0.0


def duplicate_share_within(runs: pl.DataFrame) -> float:
    """The same share, counted inside each configuration: what one configuration alone repeats."""
    repeated = sum(duplicate_share(part) * part.height for _, part in runs.group_by("configuration"))
    return repeated / runs.height if runs.height else 0.0


def attempts_executed(runs: pl.DataFrame) -> int:
    """Attempts made in a sandbox: a row that shares its content key with another (a twin in
    its batch, or reused from the store) carries that work's attempts without making them."""
    ran = runs.with_columns(key=pl.Series(content_keys(runs))).filter(pl.col("reused_from").is_null())
    return int(ran.unique("key", keep="first")["attempts"].sum())


def early_stop_share(runs: pl.DataFrame, scale: Scale | None) -> tuple[float, int, int]:
    """The share of an instance's runs an early stop would still make (module docstring, 6),
    over the suites of the store, at `scale`'s states an instance (None: at each suite's own
    runs in the store, to check the estimate against a measured early stop); and how many
    suites were decided by buggy/reference and how many succeeded jointly."""
    needed, by_two, joint = [], 0, 0
    for _, group in runs.group_by("configuration", "instance_id"):
        total = group.height if scale is None else sum(n for _, n in scale.per_instance)
        candidates = total - 2
        rows = {kind_of(s, lab): [] for s, lab in zip(group["state"], group["label"], strict=True)}
        for s, lab, o in zip(group["state"], group["label"], group["outcome"], strict=True):
            rows[kind_of(s, lab)].append(o)
        if rows.get("buggy", ["P"])[0] != "F" or rows.get("reference", ["F"])[0] != "P":
            needed.append(min(2, total) / total)
            by_two += 1
            continue
        wrong = sum(o != "P" for o in rows.get("valid", [])) + sum(o != "F" for o in rows.get("invalid", []))
        seen = len(rows.get("valid", [])) + len(rows.get("invalid", []))
        share = wrong / seen if seen else 0.0
        joint += wrong == 0
        needed.append((2 + expected_runs_to_decide(candidates, share)) / total)
    return (statistics.fmean(needed) if needed else 1.0), by_two, joint


# -- the per-run measurement -------------------------------------------------------------------


def command_runner(argv: list[str], cwd: Path, env: dict[str, str]) -> Callable[[], int]:
    def run() -> int:
        return subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return run


def state_runner(instance, state, scratch: Path) -> Callable[[], int]:
    """`materialise` of `state` into a fresh work area each time (the removal untimed, before)."""
    root = scratch / "state-work"

    def before() -> None:
        shutil.rmtree(root, ignore_errors=True)

    def run() -> int:
        tree = materialise(instance, state, WorkPaths(root, runs_root=None))
        return 0 if tree.patch.applied else 1

    run.before = before  # type: ignore[attr-defined]  # replay_overhead.measure runs it untimed
    return run


def image_runner(instance, state, scratch: Path) -> Callable[[], int]:
    """`tree_image.image_of` of `state`'s tree, materialised once in a work area of its own
    (the runs' image is never touched); the image removed before each (untimed)."""
    root = scratch / "image-work"
    tree: list[Path] = []

    def before() -> None:
        if not tree:
            tree.append(materialise(instance, state, WorkPaths(root, runs_root=None)).tree)
        tree[0].with_name(tree[0].name + tree_image.SUFFIX).unlink(missing_ok=True)

    def run() -> int:
        return 0 if tree_image.image_of(tree[0], SETTLED_MTIME).is_file() else 1

    run.before = before  # type: ignore[attr-defined]
    return run


def paired(per_round: dict[str, list[float]], name: str, minus: str) -> float:
    return statistics.median(t - b for t, b in zip(per_round[name], per_round[minus], strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", required=True, help="benchmark folder (the real-data one)")
    parser.add_argument("--instance", required=True)
    parser.add_argument("--configuration", required=True, help="the configuration whose suite is measured")
    parser.add_argument("--store", action="append", default=[], help="the default policy's store, then the audit's")
    parser.add_argument("--work", default=None, help="work area the stores were replayed with (environments cached)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--block", type=int, default=2)
    parser.add_argument("--instances", type=int, default=619)
    parser.add_argument("--valid", type=int, default=45)
    parser.add_argument("--invalid", type=int, default=89)
    parser.add_argument("--audit", type=float, default=0.25, help="the audit policy's share")
    parser.add_argument("--outcomes-of", action="append", default=None, metavar="INSTANCE",
                        help="take the extrapolation's outcome shares from these instances' runs only (repeatable; "
                             "default: every instance of the stores)")
    parser.add_argument("--early-stop-stores", nargs=2, default=None, metavar=("FULL", "STOPPED"),
                        help="stores of one benchmark replayed without and with --early-stop: (e)'s estimate checked")
    parser.add_argument("--target", type=float, default=40.0, help="core-hours the all-built-on harness is held to")
    parser.add_argument("--suites-per-state", type=int, default=7,
                        help="suites replayed on each state together, sharing its warm process (the real sympy "
                             "data's 7 generated suites of 24066)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)])
    scale = Scale(args.instances, (("buggy", 1), ("reference", 1), ("valid", args.valid), ("invalid", args.invalid)))

    scratch = Path(tempfile.mkdtemp(prefix="testprism-cost-", dir="/var/tmp"))
    scratch.chmod(0o755)
    work = WorkPaths(Path(args.work) if args.work else scratch / "work", runs_root=None)
    work.ensure()
    local = LocalBackend(work)
    try:
        bench = load_benchmark(Path(args.benchmark), (args.configuration,))
        subj = subject(bench, args.instance, args.configuration, work, [Environments(local)])
        environment = local.prepare(subj.environment)
        env = bare_environment(subj, environment, subj.tree)
        python = str(environment / "bin" / "python")
        instance = bench.instances[args.instance]
        reference = next(s for s in states_of(instance) if s.kind == "reference")
        runners = {
            "bare": bare_runner(subj, environment, scratch),
            "local": backend_runner(local, subj, environment, name="local"),  # the default: the image layer
            "local-copy": with_settings(backend_runner(local, subj, environment, name="local-copy"),
                                        MODE_SETTINGS["-copy"]),
            "local-tree": with_settings(backend_runner(local, subj, environment, name="local-tree"),
                                        MODE_SETTINGS["-tree"]),
            # cloned from the state's frozen warm process (replay --warm): started by the warm-up run
            "local-warm": backend_runner(local, subj, environment, name="local-warm", warm=True),
            "start": command_runner([python, "-c", "import pytest"], subj.tree, env),
            "start+program": command_runner([python, "-c", "import pytest, sympy"], subj.tree, env),
            "state": state_runner(instance, reference, scratch),
            "state-image": image_runner(instance, reference, scratch),
        }
        log.info("%s; %d cores; load %.1f %.1f %.1f; %d rounds × %d", subj.label, os.cpu_count(), *os.getloadavg(),
                 args.rounds, args.block)
        started = time.perf_counter()
        times, per_round = measure(runners, args.rounds, args.block, {})
        fill = {way: fill_cost(subj, environment, scratch, way) for way in PROGRAMS}
        log.info("measured in %.0f s; load after %.1f %.1f %.1f", time.perf_counter() - started, *os.getloadavg())
    finally:
        local.close()
        shutil.rmtree(scratch, ignore_errors=True)

    med = {name: statistics.median(v) for name, v in times.items()}
    program = paired(per_round, "start+program", "start")
    tests = paired(per_round, "bare", "start+program")
    sandbox = {way: paired(per_round, name, "bare") - fill[way] for way, name in PROGRAMS.items()}
    components = Table(title=f"per-run components (s, medians over {args.rounds} paired rounds × {args.block}): "
                             f"{subj.label}")
    for column in ("component", "seconds", "share of a local run (the default)"):
        components.add_column(column, justify="left" if column == "component" else "right")
    for name, value in (("interpreter + import pytest (start)", med["start"]),
                        ("the program's import, sympy (start+program − start)", program),
                        ("the tests themselves (bare − start+program)", tests),
                        ("workspace fill, copy of the state's tree (and its removal)", fill["copy"]),
                        ("workspace fill, layer over the tree", fill["tree"]),
                        ("workspace fill, layer over the tree's image (the default)", fill["image"]),
                        ("sandbox, copy (local-copy − bare − fill copy)", sandbox["copy"]),
                        ("sandbox, tree layer (local-tree − bare − fill tree)", sandbox["tree"]),
                        ("sandbox, image layer (local − bare − fill image)", sandbox["image"]),
                        ("state tree, once per state (materialise)", med["state"]),
                        ("state image, once per state under the default (mkfs.erofs)", med["state-image"]),
                        ("bare run", med["bare"]),
                        ("local run (the default: image layer)", med["local"]),
                        ("local run, copy", med["local-copy"]),
                        ("local run, tree layer", med["local-tree"]),
                        ("local run, warm (cloned from the state's frozen warm process)", med["local-warm"]),
                        ("warm saving (local − local-warm, paired)", paired(per_round, "local", "local-warm"))):
        components.add_row(name, f"{value:.3f}", f"{value / med['local']:.1%}")
    console.print(components)
    console.print(f"paired: local − bare {paired(per_round, 'local', 'bare'):+.3f} s, local-copy − bare "
                  f"{paired(per_round, 'local-copy', 'bare'):+.3f} s, local-tree − bare "
                  f"{paired(per_round, 'local-tree', 'bare'):+.3f} s; local − local-copy "
                  f"{paired(per_round, 'local', 'local-copy'):+.3f} s, local − local-tree "
                  f"{paired(per_round, 'local', 'local-tree'):+.3f} s")

    if not args.store:
        log.warning("no --store: outcome shares unknown, no extrapolation")
        return
    stores = [store_runs(Path(p)) for p in args.store]
    outcomes = Table(title="outcomes of the stores (the same benchmark replayed under each policy)")
    for column in ("store", "confirmation", "runs", "first failures", "replayed", "unreplayed", "attempts of rows",
                   "attempts executed", "unstable", "flake rate [95% exact]", "duplicate content"):
        outcomes.add_column(column, justify="left" if column in ("store", "confirmation") else "right")
    for path, runs in zip(args.store, stores, strict=True):
        flakes = flake_table(Store(Path(path)))
        unstable, replayed = int(flakes["unstable"].sum()), int(flakes["replayed"].sum())
        rate, low, high = _flake_interval(unstable, replayed)
        outcomes.add_row(Path(path).name, runs["confirmation"][0], str(runs.height), str(runs["replayed"].is_not_null().sum()),
                         str(replayed), str(int(flakes["unreplayed"].sum())), str(int(runs["attempts"].sum())),
                         str(attempts_executed(runs)),
                         str(unstable), "—" if rate is None else f"{unstable}/{replayed} = {rate:.3f} [{low:.3f}, {high:.3f}]",
                         f"{duplicate_share(runs):.1%}")
    console.print(outcomes)
    default = stores[0]
    if args.outcomes_of:
        default = default.filter(pl.col("instance_id").is_in(args.outcomes_of))
        log.info("outcome shares from %s: %d runs", ", ".join(args.outcomes_of), default.height)
    shares = outcome_shares(default)
    dup = duplicate_share_within(default)
    early, by_two, joint = early_stop_share(default, scale)
    suites = default.select("configuration", "instance_id").unique().height
    console.print("first-attempt failure share by state: " + ", ".join(f"{k} {v:.2f}" for k, v in shares.items())
                  + f"; duplicate content within a configuration {dup:.1%}, across the configurations "
                    f"{duplicate_share(default):.1%}; early stop: {by_two} of {suites} suites decided by buggy/reference, {joint} jointly successful "
                    f"→ {early:.1%} of the runs still made (estimated)")
    early_basis = "built; saving estimated"
    if args.early_stop_stores:  # the estimate at the stores' own panel sizes against what early stop did there
        full, stopped = (store_runs(Path(p)) for p in args.early_stop_stores)
        predicted = early_stop_share(full, None)[0]
        made = 1.0 - (stopped["reason"] == "early_stopped").sum() / stopped.height
        early_basis += f" (checked: {predicted:.0%} of runs estimated, {made:.0%} made)"
        console.print(f"early stop on {full.select('configuration', 'instance_id').unique().height} suites of "
                      f"{args.early_stop_stores[0]}: estimated {predicted:.1%} of the runs still made at their own "
                      f"panel sizes; measured {made:.1%} of the runs, {attempts_executed(stopped)} attempts against "
                      f"{attempts_executed(full)} ({attempts_executed(stopped) / attempts_executed(full):.1%})")

    attempt_s = {way: med[name] for way, name in PROGRAMS.items()}
    warm_saving = paired(per_round, "local", "local-warm")
    inputs = dict(first_failure=shares, attempt_s=attempt_s, warm_saving_s=warm_saving, warm_start_s=med["start+program"],
                  state_s=med["state"], image_s=med["state-image"], duplicate_share=dup, early_stop_share=early,
                  audit_share=args.audit)
    built = Savings(audit=True, reuse=True, program="image")
    every = Savings(True, True, "image", True)
    k = args.suites_per_state
    rows = [("naive: copy, every F confirmed, nothing shared, cold interpreter", Savings(), "measured", 1),
            ("(a) audit confirmation policy only", Savings(audit=True), "measured", 1),
            ("(b) work never done twice only", Savings(reuse=True), "measured", 1),
            ("(c) image layer only (the default)", Savings(program="image"), "measured", 1),
            ("(c') the old layer over the tree only", Savings(program="tree"), "measured", 1),
            ("(d) warm states only, one suite a state", Savings(warm=True), "measured", 1),
            (f"(d) warm states only, {k} suites a state", Savings(warm=True), "measured", k),
            ("(e) early stop (--early-stop, JVR only) only", Savings(early_stop=True), early_basis, 1),
            ("all built on: (a) + (b) + (c), the default", built, "measured", 1),
            ("all built on with (c') instead of (c)", Savings(audit=True, reuse=True, program="tree"), "measured", 1),
            (f"all built on, {k} suites a state (cold: their states built once)", built, "measured", k),
            ("all built on + (d), one suite a state", every, "measured", 1),
            (f"all built on + (d), {k} suites a state", every, "measured", k),
            (f"all on: (a) … (e), {k} suites a state", Savings(True, True, "image", True, True),
             "(e) estimated", k)]
    naive = core_hours(scale, Savings(), **inputs)
    table = Table(title=f"core-hours of one configuration at {scale.instances} × "
                        f"{sum(n for _, n in scale.per_instance)} runs ({scale.runs:,} runs)")
    for column in ("configuration of the harness", "attempts", "core-hours", "× naive", "saved", "basis"):
        table.add_column(column, justify="left" if column in ("configuration of the harness", "basis") else "right")
    for name, savings, basis, suites in rows:
        hours = core_hours(scale, savings, **inputs, suites_per_state=suites)
        made = attempts(scale, shares, args.audit if savings.audit else None)
        made *= (1 - dup if savings.reuse else 1) * (early if savings.early_stop else 1)
        table.add_row(name, f"{made:,.0f}", f"{hours:,.1f}", f"{hours / naive:.2f}", f"{1 - hours / naive:.0%}", basis)
    console.print(table)
    console.print(f"a rerun of the same configuration into the same store (a resume, a second replay): "
                  f"{naive:,.1f} core-hours again without (b), 0 with it (every content key settled)")

    # what the all-built-on harness spends, by component (they add up to its row above), cold
    # and with every state warm; against the floor of the tests alone
    kept = 1.0 - dup
    cold_parts = (("interpreter + import pytest", med["start"]), ("the program's import", program),
                  ("the tests themselves", tests), ("workspace fill (image layer)", fill["image"]),
                  ("sandbox (the rest of a local run)", med["local"] - med["start"] - program - tests - fill["image"]))
    warm_parts = (("the tests themselves", tests), ("workspace fill (image layer)", fill["image"]),
                  ("fork, namespaces, pytest session (the rest of a warm run)",
                   med["local"] - warm_saving - tests - fill["image"]))
    floor = attempts(scale, shares, args.audit) * kept * tests / 3600.0
    for title, savings, suites in (("all built on (the default)", built, 1),
                                   (f"all built on, cold, {k} suites a state", built, k),
                                   (f"all built on + warm states, {k} suites a state", every, k)):
        by_kind = attempts_by_kind(scale, shares, args.audit)
        first = sum(f for f, _ in by_kind.values()) * kept if savings.warm else 0.0
        cold = sum(f + a for f, a in by_kind.values()) * kept - first
        parts = [(f"{name}, cold attempts", cold * t / 3600.0, f"{cold:,.0f} × {t:.3f} s") for name, t in cold_parts]
        parts += [(f"{name}, warm attempts", first * t / 3600.0, f"{first:,.0f} × {t:.3f} s") for name, t in warm_parts
                  if first]
        warm_states = scale.runs * kept * (first > 0) / suites
        parts += [(name, n * t / 3600.0, f"{n:,.0f} × {t:.3f} s") for name, n, t in (
            ("warm process start, per state (shared by the suites on it)", warm_states, med["start+program"]),
            ("state tree, per state (materialise)", scale.runs * kept / suites, med["state"]),
            ("state image, per state (mkfs.erofs)", scale.runs * kept / suites, med["state-image"])) if n]
        total = core_hours(scale, savings, **inputs, suites_per_state=suites)
        split = Table(title=f"{title}: {total:,.1f} core-hours against a target of {args.target:g} "
                            f"({total - args.target:+,.1f}) and the tests-only floor of {floor:,.1f}, by component")
        for column in ("component", "core-hours", "share", "as"):
            split.add_column(column, justify="right" if column in ("core-hours", "share") else "left")
        for name, hours, basis in parts:
            split.add_row(name, f"{hours:,.1f}", f"{hours / total:.0%}", basis)
        console.print(split)


if __name__ == "__main__":
    main()
