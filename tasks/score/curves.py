"""Panel-size curves (TestPrism Fig. 3): how JVR and panel diversity change with the panel's
size, from the stored runs only (nothing is run again).

Definition. For k = 1 … K (K the largest pool of either label over the instances), the
panel at k of an instance is the first min(k, n_valid) of its valid candidates and the
first min(k, n_invalid) of its invalid ones, in the order of a schedule; k valid and k
invalid are added together, each side stopping at its pool's size. Then

    S_i(k) = F_i · Π a(first valid ones) · Π r(first invalid ones)
    JVR(k) = mean of S_i(k) over the configuration's instances

with F_i, a and r as the leaderboard's (tasks/score/metrics.py: the newest run per
configuration, instance and state; a missing or unresolved run is neither accepted nor
rejected). At K every candidate is in, so JVR(K) is the leaderboard's JVR.

Schedules (the order candidates are added in; the same order for every configuration):

- `random`: a seeded random permutation of each pool, the curve averaged over `seeds` seeds;
- `diversity`: greedy farthest-point. Valid: first the candidate farthest (AST distance) from
  the reference, then the one with the largest mean distance to those chosen. Invalid: first
  the one failing the fewest checks (collect's start), then the one with the largest mean
  (1 − Jaccard) to those chosen. Ties go to the smaller candidate id;
- `hardest`: first the candidate the most configurations get wrong (a valid one not
  accepted, an invalid one not rejected), from the same runs; ties to the smaller id.

Diversity at k, over the configuration's instances with at least two candidates of that
label in the panel: `valid_diversity` is the mean pairwise AST distance of the chosen valid
candidates (tasks/collect/panel.py `ast_distance`, higher is more diverse), and
`invalid_diversity` the mean pairwise Jaccard of their failed-check sets (lower is more
diverse). Both need what the runs do not hold: the valid candidates' patches applied to the
program (from the benchmark the store was replayed from) and the invalid candidates'
failed checks (collect's `candidates` dataset in the store). Where an instance's side is not
known the column is null rather than a mean over the instances that happen to be known, and
the `diversity` schedule is left out when any pool's order cannot be computed.

Computation: per schedule, one order per instance and label (an (instances × pool) index
matrix); the per-candidate correctness of every configuration × instance is a dense boolean
matrix, gathered in that order, and its cumulative minimum (`logical_and.accumulate`) read
at min(k, n) gives every k at once. Distances are computed once per instance.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl

from testprism.storage import Store
from testprism.tasks.collect.panel import TreeNode, ast_distance, jaccard, patch_tree
from testprism.tasks.model import patches
from testprism.tasks.model.benchmark import BenchmarkError, Instance, load_instance
from testprism.tasks.model.state import apply_patch
from testprism.storage.readers import latest_runs
from testprism.tasks.score.metrics import instance_scores

log = logging.getLogger(__name__)

SCHEDULES: tuple[str, ...] = ("random", "diversity", "hardest")
SEEDS = 20
SEED = 42
_LAST = np.iinfo(np.int64).max  # sort key of a padding position: after every candidate


# -- distances -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SideDistances:
    """One label's pool of one instance: candidate ids (sorted), the distance the
    `diversity` schedule maximises, the measure reported, and where that schedule starts."""

    ids: tuple[str, ...]
    distance: np.ndarray  # (n, n) symmetric, 0 on the diagonal
    shown: np.ndarray  # (n, n): AST distance (valid) or Jaccard (invalid)
    start: int


@dataclass(frozen=True)
class InstanceDistances:
    valid: SideDistances | None = None
    invalid: SideDistances | None = None


def valid_side(reference: TreeNode, trees: Mapping[str, TreeNode],
               distance: Callable[[TreeNode, TreeNode], float] = ast_distance) -> SideDistances:
    """Pairwise AST distances of the valid candidates, starting from the one farthest from
    the reference."""
    ids = tuple(sorted(trees))
    matrix = np.zeros((len(ids), len(ids)))
    for (i, a), (j, b) in combinations(enumerate(ids), 2):
        matrix[i, j] = matrix[j, i] = distance(trees[a], trees[b])
    from_reference = [distance(reference, trees[c]) for c in ids]
    start = int(np.argmax(from_reference)) if ids else 0
    return SideDistances(ids, matrix, matrix, start)


def invalid_side(failed: Mapping[str, frozenset[str]]) -> SideDistances:
    """Pairwise Jaccard of the invalid candidates' failed checks, starting from the one
    failing the fewest."""
    ids = tuple(sorted(failed))
    shown = np.ones((len(ids), len(ids)))
    for (i, a), (j, b) in combinations(enumerate(ids), 2):
        shown[i, j] = shown[j, i] = jaccard(failed[a], failed[b])
    start = min(range(len(ids)), key=lambda i: (len(failed[ids[i]]), ids[i])) if ids else 0
    distance = 1.0 - shown
    np.fill_diagonal(distance, 0.0)
    return SideDistances(ids, distance, shown, start)


def _post_patch_tree(instance: Instance, patch: bytes, scratch: Path) -> TreeNode | None:
    """The patch's tree (panel.patch_tree) over the program's files after it; only the files
    it names are copied. None when it does not apply or names a path outside the program."""
    try:
        parsed = patches.parse(patch)
    except Exception:  # noqa: BLE001 - unidiff raises several kinds; an unreadable patch has no tree
        return None
    touched = patches.touched_files(parsed)
    program = instance.program.resolve()
    tree = Path(tempfile.mkdtemp(dir=scratch))
    try:
        for rel in touched:
            if rel.startswith("/") or ".." in Path(rel).parts:
                return None
            source = (instance.program / rel)
            if source.is_file() and source.resolve().is_relative_to(program):
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, tree / rel)
        if not apply_patch(tree, patch).applied:
            return None
        checks = patches.touched_files(patches.parse(instance.checks_patch))

        def read(rel: str) -> str | None:
            path = tree / rel
            if rel in checks or not path.is_file() or path.is_symlink():
                return None
            return path.read_text(encoding="utf-8", errors="replace")

        return patch_tree(patch.decode("utf-8", errors="replace"), read)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def benchmark_valid_sides(benchmark: Path | str, pools: Mapping[str, tuple[str, ...]]) -> dict[str, SideDistances]:
    """The valid side of each instance whose reference and every valid candidate of its pool
    (`pools`: instance → valid ids) the benchmark holds and applies; others are left out."""
    root = Path(benchmark)
    sides: dict[str, SideDistances] = {}
    with tempfile.TemporaryDirectory(prefix="testprism-curves-") as scratch:
        for instance_id, ids in sorted(pools.items()):
            try:
                instance = load_instance(root / "instances" / instance_id)
            except (BenchmarkError, OSError) as exc:
                log.warning("panel curves: no distances for %s: %s", instance_id, exc)
                continue
            held = {c.id: c.patch for c in instance.candidates if c.label == "valid"}
            if any(cid not in held for cid in ids):
                log.warning("panel curves: %s: the benchmark lacks valid candidates %s", instance_id,
                            sorted(set(ids) - set(held)))
                continue
            reference = _post_patch_tree(instance, instance.reference, Path(scratch))
            trees = {cid: _post_patch_tree(instance, held[cid], Path(scratch)) for cid in ids}
            if reference is None or any(t is None for t in trees.values()):
                log.warning("panel curves: %s: a patch does not apply to its program: no distances", instance_id)
                continue
            sides[instance_id] = valid_side(reference, trees)  # type: ignore[arg-type]
    return sides


def store_invalid_sides(store: Store, pools: Mapping[str, tuple[str, ...]]) -> dict[str, SideDistances]:
    """The invalid side of each instance whose every invalid candidate has its failed checks
    in collect's `candidates` dataset (the newest collection of each candidate)."""
    if not store.parts("candidates"):
        return {}
    rows = (
        store.scan("candidates")
        .sort("flow_run", descending=True)
        .unique(["instance_id", "candidate_id"], keep="first")
        .filter(pl.col("label") == "invalid")
        .select("instance_id", "candidate_id", "failed_checks")
        .collect()
    )
    failed: dict[str, dict[str, frozenset[str]]] = {}
    for r in rows.iter_rows(named=True):
        failed.setdefault(r["instance_id"], {})[r["candidate_id"]] = frozenset(r["failed_checks"] or ())
    sides = {}
    for instance_id, ids in pools.items():
        known = failed.get(instance_id, {})
        if all(cid in known for cid in ids):
            sides[instance_id] = invalid_side({cid: known[cid] for cid in ids})
    return sides


def benchmark_invalid_sides(benchmark: Path | str, pools: Mapping[str, tuple[str, ...]]) -> dict[str, SideDistances]:
    """The invalid side of each instance whose every invalid candidate of its pool has its
    failed checks recorded in the benchmark (`failed_checks`, docs/benchmark-format.md)."""
    sides: dict[str, SideDistances] = {}
    for instance_id, ids in sorted(pools.items()):
        try:
            instance = load_instance(Path(benchmark) / "instances" / instance_id)
        except (BenchmarkError, OSError) as exc:
            log.warning("panel curves: no recorded failed checks for %s: %s", instance_id, exc)
            continue
        recorded = {c.id: c.failed_checks for c in instance.candidates if c.failed_checks is not None}
        if all(cid in recorded for cid in ids):
            sides[instance_id] = invalid_side({cid: recorded[cid] for cid in ids})
    return sides


def panel_distances(store: Store, benchmark: Path | str | None = None) -> dict[str, InstanceDistances]:
    """Per instance, what diversity needs: valid sides from the benchmark (None without it),
    invalid sides from the store's collected candidates, else from the failed checks the
    benchmark records."""
    pools = _pools(store)
    valid_pools = {i: ids for (i, label), ids in pools.items() if label == "valid"}
    invalid_pools = {i: ids for (i, label), ids in pools.items() if label == "invalid"}
    valid = benchmark_valid_sides(benchmark, valid_pools) if benchmark is not None else {}
    invalid = store_invalid_sides(store, invalid_pools)
    if benchmark is not None:
        missing = {i: ids for i, ids in invalid_pools.items() if i not in invalid}
        invalid |= benchmark_invalid_sides(benchmark, missing)
    return {i: InstanceDistances(valid.get(i), invalid.get(i)) for i in set(valid) | set(invalid)}


def _pools(store: Store) -> dict[tuple[str, str], tuple[str, ...]]:
    frame = (
        store.scan("panels").filter(pl.col("state") == "candidate")
        .unique(["instance_id", "candidate_id"]).select("instance_id", "label", "candidate_id").collect()
    )
    pools: dict[tuple[str, str], list[str]] = {}
    for r in frame.iter_rows(named=True):
        pools.setdefault((r["instance_id"], r["label"]), []).append(r["candidate_id"])
    return {key: tuple(sorted(ids)) for key, ids in pools.items()}


# -- curves ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    """One label over every instance: pool sizes, the cells' correctness, padded to `width`."""

    n: np.ndarray  # (instances,)
    correct: np.ndarray  # (cells, width) bool: the cell's run of that candidate was right
    ids: list[list[str]]  # per instance, sorted candidate ids (local index = position)

    @property
    def width(self) -> int:
        return self.correct.shape[1]


@dataclass(frozen=True)
class _Grid:
    configurations: list[str]
    starts: np.ndarray  # first cell of each configuration (cells sorted by configuration)
    counts: np.ndarray  # cells per configuration
    instance_of_cell: np.ndarray
    f: np.ndarray  # (cells,) bool
    instances: list[str]
    sides: tuple[_Side, _Side]  # valid, invalid
    k_max: int


def _codes(frame: pl.DataFrame, column: str, categories: list[str]) -> np.ndarray:
    """Positions of a string column's values in `categories` (-1 for others and nulls):
    an Enum cast, far cheaper than joining a million rows on strings."""
    return (frame.select(pl.col(column).cast(pl.Enum(categories), strict=False).to_physical().cast(pl.Int64)
                         .fill_null(-1)).to_series().to_numpy())


def _grid(store: Store, scores: pl.DataFrame, runs: pl.DataFrame) -> _Grid:
    cells = scores.select("configuration", "instance_id", "f").sort("configuration", "instance_id")
    instances = sorted(cells["instance_id"].unique().to_list())
    configurations = sorted(cells["configuration"].unique().to_list())
    conf_of_cell, inst_of_cell = _codes(cells, "configuration", configurations), _codes(cells, "instance_id", instances)
    cell_at = np.full((len(configurations), len(instances)), -1, dtype=np.int64)
    cell_at[conf_of_cell, inst_of_cell] = np.arange(cells.height)
    candidates = (
        store.scan("panels").filter(pl.col("state") == "candidate")
        .unique(["instance_id", "candidate_id"]).select("instance_id", "candidate_id", "label").collect()
        .filter(pl.col("instance_id").is_in(instances))
        .sort("instance_id", "label", "candidate_id")
    )
    names = sorted(candidates["candidate_id"].unique().to_list())
    key = _codes(candidates, "instance_id", instances) * max(len(names), 1) + _codes(candidates, "candidate_id", names)
    side = (candidates["label"] == "invalid").to_numpy().astype(np.int64)
    local = candidates.select(pl.int_range(pl.len()).over("instance_id", "label")).to_series().to_numpy()
    order = np.argsort(key, kind="stable")
    key, side, local = key[order], side[order], local[order]
    # the stored runs as integer codes; a run of a candidate outside the panels finds no key
    run_conf, run_inst = _codes(runs, "configuration", configurations), _codes(runs, "instance_id", instances)
    run_cand, outcome = _codes(runs, "candidate_id", names), _codes(runs, "outcome", ["P", "F"])
    keep = (run_conf >= 0) & (run_inst >= 0) & (run_cand >= 0) & (outcome >= 0)
    run_key = run_inst[keep] * max(len(names), 1) + run_cand[keep]
    at = np.clip(np.searchsorted(key, run_key), 0, max(len(key) - 1, 0))
    found = (key[at] == run_key) if len(key) else np.zeros(len(run_key), dtype=bool)
    run_cell = cell_at[run_conf[keep], run_inst[keep]]
    right = found & (run_cell >= 0) & (outcome[keep] == side[at])  # valid: P (0), invalid: F (1)
    pool = {(r[0], r[1]): r[2] for r in candidates.group_by("instance_id", "label").agg(pl.col("candidate_id").sort()).iter_rows()}
    sides = []
    for label in (0, 1):
        mine = side == label
        n = np.bincount(key[mine] // max(len(names), 1), minlength=len(instances)).astype(np.int64)
        ids = [pool.get((i, "invalid" if label else "valid"), []) for i in instances]
        correct = np.zeros((cells.height, max(int(n.max(initial=0)), 1)), dtype=bool)
        hit = right & (side[at] == label)
        correct[run_cell[hit], local[at][hit]] = True
        sides.append(_Side(n, correct, ids))
    k_max = int(max(sides[0].n.max(initial=0), sides[1].n.max(initial=0)))
    _, starts, counts = np.unique(conf_of_cell, return_index=True, return_counts=True)
    return _Grid(configurations, starts, counts, inst_of_cell, cells["f"].to_numpy() > 0, instances,
                 (sides[0], sides[1]), k_max)


def _padded(keys: np.ndarray, n: np.ndarray) -> np.ndarray:
    """An order per instance: positions sorted by key (stably), padding positions last."""
    keys = keys.copy()
    keys[np.arange(keys.shape[1])[None, :] >= n[:, None]] = _LAST
    return np.argsort(keys, axis=1, kind="stable")


def _hardest_order(grid: _Grid, side: _Side) -> np.ndarray:
    cell, local = np.nonzero(side.correct)
    right = np.bincount(grid.instance_of_cell[cell] * side.width + local,
                        minlength=len(grid.instances) * side.width).reshape(-1, side.width)
    return _padded(right, side.n)  # fewest configurations right = most get it wrong


def _diversity_order(grid: _Grid, side: _Side, known: list[SideDistances | None]) -> np.ndarray | None:
    order = np.tile(np.arange(side.width), (len(grid.instances), 1))
    for inst, dist in enumerate(known):
        n = int(side.n[inst])
        if n < 2:
            continue
        if dist is None:
            return None
        chosen = [dist.start]
        while len(chosen) < n:
            rest = np.array([c for c in range(n) if c not in chosen])
            chosen.append(int(rest[np.argmax(dist.distance[np.ix_(rest, chosen)].sum(axis=1))]))
        order[inst, :n] = chosen
    return order


def _ok_up_to(grid: _Grid, side: _Side, order: np.ndarray) -> np.ndarray:
    """(cells,): the largest k at which the cell's first min(k, n) candidates in `order` are
    all right (k_max + 1: every k). That is the cumulative minimum of the correctness in
    that order read at min(k, n), computed as the position of the first wrong candidate
    (padding sorts after the pool and is never right, so it is at most n)."""
    position = np.argsort(order, axis=1).astype(np.int16 if side.width < 2**15 else np.int64)  # inverse permutation
    first_wrong = np.where(side.correct, side.width, position[grid.instance_of_cell]).min(axis=1)
    return np.where(first_wrong >= side.n[grid.instance_of_cell], grid.k_max + 1, first_wrong)


def _jvr(grid: _Grid, orders: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """(configurations, K): the share of the configuration's cells with S_i(k) = 1."""
    up_to = np.where(grid.f, np.minimum(_ok_up_to(grid, grid.sides[0], orders[0]),
                                        _ok_up_to(grid, grid.sides[1], orders[1])), 0)
    width = grid.k_max + 2
    configuration = np.repeat(np.arange(len(grid.configurations)), grid.counts)
    hist = np.bincount(configuration * width + up_to, minlength=len(grid.configurations) * width)
    at_least = np.cumsum(hist.reshape(-1, width)[:, ::-1], axis=1)[:, ::-1]  # cells with up_to >= k
    return at_least[:, 1:grid.k_max + 1] / grid.counts[:, None]


def _instance_diversity(grid: _Grid, side: _Side, order: np.ndarray,
                        known: list[SideDistances | None]) -> np.ndarray:
    """(instances, K): the mean pairwise measure of the first min(k, n); NaN where fewer than
    two are chosen or the instance's side is unknown."""
    out = np.full((len(grid.instances), grid.k_max), np.nan)
    ks = np.arange(1, grid.k_max + 1)
    for inst, dist in enumerate(known):
        n = int(side.n[inst])
        if n < 2 or dist is None:
            continue
        o = order[inst, :n]
        pair_sums = np.cumsum(np.tril(dist.shown[np.ix_(o, o)], -1).sum(axis=1))
        chosen = np.minimum(ks, n)
        out[inst] = pair_sums[chosen - 1] / (chosen * (chosen - 1) / 2).clip(min=1)
        out[inst, chosen < 2] = np.nan
    return out


def _diversity(grid: _Grid, side: _Side, per_instance: np.ndarray | None,
               known: list[SideDistances | None]) -> np.ndarray:
    """(configurations, K): the mean over the configuration's instances with two or more
    chosen; NaN (null) where one of those instances is unknown, or none has two."""
    if per_instance is None:  # nothing known: null wherever two or more are chosen, and below
        return np.full((len(grid.configurations), grid.k_max), np.nan)
    n = side.n[grid.instance_of_cell]
    counted = (np.minimum(np.arange(1, grid.k_max + 1)[None, :], n[:, None]) >= 2)
    unknown = np.array([d is None for d in known])[grid.instance_of_cell][:, None] & counted
    values = np.nan_to_num(per_instance[grid.instance_of_cell])
    total = np.add.reduceat(np.where(counted, values, 0.0), grid.starts, axis=0)
    count = np.add.reduceat(counted.astype(np.int64), grid.starts, axis=0)
    bad = np.add.reduceat(unknown.astype(np.int64), grid.starts, axis=0) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
    mean[bad | (count == 0)] = np.nan
    return mean


def panel_curves(store: Store, scores: pl.DataFrame | None = None, runs: pl.DataFrame | None = None,
                 distances: Mapping[str, InstanceDistances] | None = None, seeds: int = SEEDS,
                 seed: int = SEED) -> pl.DataFrame:
    """The `panel_curves` table: configuration, schedule, k, jvr, valid_diversity,
    invalid_diversity, n_instances (module docstring). `scores` and `runs` default to
    `instance_scores(store)` and `latest_runs(store)` (pass them when already computed);
    `distances` to none known (diversity null, no `diversity` schedule)."""
    scores = instance_scores(store) if scores is None else scores
    runs = latest_runs(store) if runs is None else runs
    grid = _grid(store, scores, runs)
    if grid.k_max == 0:
        return pl.DataFrame(schema={"configuration": pl.String, "schedule": pl.String, "k": pl.Int32,
                                    "jvr": pl.Float64, "valid_diversity": pl.Float64,
                                    "invalid_diversity": pl.Float64, "n_instances": pl.Int32})
    distances = distances or {}
    known = [[_aligned(getattr(distances.get(i, InstanceDistances()), label), side.ids[inst])
              for inst, i in enumerate(grid.instances)]
             for label, side in zip(("valid", "invalid"), grid.sides, strict=True)]

    def evaluate(orders: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        diversity = [_diversity(grid, side, _instance_diversity(grid, side, order, kn) if any(kn) else None, kn)
                     for side, order, kn in zip(grid.sides, orders, known, strict=True)]
        return _jvr(grid, orders), diversity[0], diversity[1]

    results: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    rng = np.random.default_rng(seed)
    draws = [evaluate(tuple(_padded(rng.random((len(grid.instances), s.width)), s.n) for s in grid.sides))
             for _ in range(seeds)]
    results["random"] = tuple(np.mean(np.stack(parts), axis=0) for parts in zip(*draws, strict=True))
    diversity_orders = [_diversity_order(grid, side, kn) for side, kn in zip(grid.sides, known, strict=True)]
    if all(o is not None for o in diversity_orders):
        results["diversity"] = evaluate((diversity_orders[0], diversity_orders[1]))
    else:
        log.info("panel curves: no diversity-first schedule: the distances of some pools are unknown "
                 "(valid: the benchmark's patches; invalid: collect's failed checks)")
    results["hardest"] = evaluate((_hardest_order(grid, grid.sides[0]), _hardest_order(grid, grid.sides[1])))
    frames = []
    n_conf, k_max = len(grid.configurations), grid.k_max
    for schedule in SCHEDULES:
        if schedule not in results:
            continue
        jvr, valid, invalid = results[schedule]
        frames.append(pl.DataFrame({
            "configuration": np.repeat(grid.configurations, k_max),
            "schedule": [schedule] * (n_conf * k_max),
            "k": np.tile(np.arange(1, k_max + 1), n_conf).astype(np.int32),
            "jvr": jvr.ravel(),
            "valid_diversity": valid.ravel(),
            "invalid_diversity": invalid.ravel(),
            "n_instances": np.repeat(grid.counts, k_max).astype(np.int32),
        }, nan_to_null=True))
    return pl.concat(frames)


def _aligned(side: SideDistances | None, ids: list[str]) -> SideDistances | None:
    """The side if it describes exactly the pool's candidates (ids sorted), else unknown."""
    return side if side is not None and list(side.ids) == ids else None
