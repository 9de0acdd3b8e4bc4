"""Which instances a curated benchmark keeps: per-source lower bounds on the selection
signals, deduplication, and a repository-disjoint train/test split with per-source quotas
and proportional stratified sampling (TestPrism: 1,700 train and 300 test tasks, seed 42).

Deterministic by construction: every choice is a sort by a seeded hash of content, never
an iteration order of the inputs nor a random generator's state, so the same items and
rules always give the same selection, on any machine and whatever order the sources were
read in.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from testprism.storage import Store

from testprism.tasks.curate.signals import Signals
from testprism.tasks.model.funnel import Excluded
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Reason
from testprism.storage.readers import latest_runs


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceRule(_Rule):
    """Lower bounds and the test-set quota of one source (TestPrism's source-specific bounds)."""

    min_solution_lines: int = Field(0, ge=0)
    min_tests: int = Field(0, ge=0)
    min_density: float = Field(0.0, ge=0)
    #: at most this many of the source's instances in the test split (None: its proportional share)
    test_quota: int | None = Field(None, ge=0)


class SplitRule(_Rule):
    seed: int = 42
    test_size: int = Field(300, ge=0)
    train_size: int = Field(1700, ge=0)


@dataclass(frozen=True)
class CurateItem:
    """One instance as the curate stage sees it: who it is and what the screening reads."""

    instance_id: str
    source: str
    repository: str  #: the unit of disjointness: no repository is on both sides of the split
    instruction: str
    program_hash: str
    signals: Signals


def repository_of(instance_id: str, declared: str | None = None) -> str:
    """The instance's repository: the one its provenance declares (SWE-bench's `repo`), else
    the id's part before `__` (SWE-bench ids are `owner__repo-number`, the bundled ones
    `package__bug`), else the id itself."""
    if declared:
        return declared
    owner, sep, _ = instance_id.partition("__")
    return owner if sep else instance_id


def normalised(text: str) -> str:
    """Text compared for duplicates: Unicode-normalised, case-folded, whitespace collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def dedup_key(item: CurateItem) -> str:
    return digest("dedup", normalised(item.instruction), item.program_hash)


def _order(seed: int, *parts: str) -> str:
    return digest("order", str(seed), *parts)


def screen(items: Iterable[CurateItem], rules: dict[str, SourceRule]) -> tuple[list[CurateItem], list[Excluded]]:
    """Keep the items that meet their source's lower bounds; say why of the others."""
    kept: list[CurateItem] = []
    out: list[Excluded] = []
    for item in items:
        rule = rules.get(item.source, SourceRule())
        s = item.signals
        if s.solution_lines < rule.min_solution_lines:
            out.append(Excluded(item.instance_id, Reason.SOLUTION_TOO_SMALL,
                                f"{s.solution_lines} effective lines < {rule.min_solution_lines}"))
        elif s.test_count < rule.min_tests:
            out.append(Excluded(item.instance_id, Reason.TOO_FEW_TESTS, f"{s.test_count} tests < {rule.min_tests}"))
        elif s.test_density < rule.min_density:
            out.append(Excluded(item.instance_id, Reason.TESTS_TOO_SPARSE,
                                f"density {s.test_density:.2f} < {rule.min_density}"))
        else:
            kept.append(item)
    return kept, out


def deduplicate(items: Iterable[CurateItem]) -> tuple[list[CurateItem], list[Excluded]]:
    """One item per (normalised instruction, program); the kept one is the smallest id, so
    which copy survives does not depend on the order the sources were read in."""
    groups: dict[str, list[CurateItem]] = defaultdict(list)
    for item in items:
        groups[dedup_key(item)].append(item)
    kept: list[CurateItem] = []
    out: list[Excluded] = []
    for group in groups.values():
        group.sort(key=lambda i: (i.instance_id, i.source))
        kept.append(group[0])
        out += [Excluded(i.instance_id, Reason.DUPLICATE, f"same instruction and program as {group[0].instance_id}")
                for i in group[1:]]
    kept.sort(key=lambda i: i.instance_id)
    return kept, out


def proportional(counts: dict[str, int], total: int, caps: dict[str, int | None] | None = None) -> dict[str, int]:
    """`total` shared among the keys in proportion to `counts` (largest remainder, ties by
    key), never more than a key's count or its cap; what a cap frees goes to the others."""
    caps = caps or {}
    limit = {k: min(n, caps[k]) if caps.get(k) is not None else n for k, n in counts.items()}
    share = {k: 0 for k in counts}
    left = min(total, sum(limit.values()))
    while left > 0:
        open_keys = [k for k in counts if share[k] < limit[k]]
        weight = sum(counts[k] for k in open_keys)
        exact = {k: left * counts[k] / weight for k in open_keys}
        add = {k: min(math.floor(exact[k]), limit[k] - share[k]) for k in open_keys}
        given = sum(add.values())
        for k in sorted(open_keys, key=lambda k: (-(exact[k] - math.floor(exact[k])), k)):
            if given >= left:
                break
            if share[k] + add[k] < limit[k]:
                add[k] += 1
                given += 1
        for k in open_keys:
            share[k] += add[k]
        left -= given
        if given == 0:
            break
    return share


@dataclass
class Split:
    """The two sides, each sorted by instance id."""

    test: list[CurateItem] = field(default_factory=list)
    train: list[CurateItem] = field(default_factory=list)
    unused: list[CurateItem] = field(default_factory=list)  #: eligible, beyond the sizes asked for


def split(items: Sequence[CurateItem], rule: SplitRule, rules: dict[str, SourceRule]) -> Split:
    """A repository-disjoint split. Each source's test quota is its proportional share of
    `test_size`, capped by its `test_quota`. The test side takes whole repositories, in a
    seeded order, while they fit under the quotas of the sources they hold; then, for the
    quotas still open, part of further repositories (their other items are set aside, never
    trained on). The train side samples each source in proportion from the remaining
    repositories' items, in a seeded order."""
    by_source = Counter(i.source for i in items)
    quota = proportional(dict(by_source), rule.test_size, {s: rules.get(s, SourceRule()).test_quota for s in by_source})
    repos: dict[str, list[CurateItem]] = defaultdict(list)
    for item in items:
        repos[item.repository].append(item)
    order = sorted(repos, key=lambda r: _order(rule.seed, "repo", r))
    taken = Counter[str]()
    result = Split()
    test_repos: set[str] = set()
    for repo in order:  # whole repositories first
        need = Counter(i.source for i in repos[repo])
        if all(taken[s] + n <= quota[s] for s, n in need.items()):
            test_repos.add(repo)
            taken.update(need)
            result.test += repos[repo]
    for repo in order:  # then part of one where a quota is still open
        if repo in test_repos or not any(taken[i.source] < quota[i.source] for i in repos[repo]):
            continue
        test_repos.add(repo)
        for member in sorted(repos[repo], key=lambda i: _order(rule.seed, "item", i.instance_id)):
            if taken[member.source] < quota[member.source]:
                taken[member.source] += 1
                result.test.append(member)
            else:
                result.unused.append(member)
    rest = [i for r in order if r not in test_repos for i in repos[r]]
    train_share = proportional(dict(Counter(i.source for i in rest)), rule.train_size)
    for source, share in sorted(train_share.items()):
        mine = sorted((i for i in rest if i.source == source), key=lambda i: _order(rule.seed, "item", i.instance_id))
        result.train += mine[:share]
        result.unused += mine[share:]
    for side in (result.test, result.train, result.unused):
        side.sort(key=lambda i: i.instance_id)
    return result


def reproduced_by_all(store: Store, configurations: Sequence[str]) -> set[str]:
    """Instances whose fail-to-pass transition every named configuration already reproduces
    (its suite fails on the buggy program and passes on the reference, newest runs of the
    store): SWEPatchTest's difficulty filter drops them, they separate no one. An instance
    a configuration has no run for is not reproduced by it."""
    if not configurations:
        return set()
    runs = latest_runs(store).filter(pl.col("configuration").is_in(list(configurations))
                                     & pl.col("state").is_in(["buggy", "reference"]))
    wide = runs.pivot(on="state", index=["configuration", "instance_id"], values="outcome", aggregate_function="first")
    if "buggy" not in wide.columns or "reference" not in wide.columns:
        return set()
    reproduced = (wide.filter((pl.col("buggy") == "F") & (pl.col("reference") == "P"))
                  .group_by("instance_id").agg(pl.col("configuration").n_unique().alias("n")))
    return set(reproduced.filter(pl.col("n") == len(set(configurations)))["instance_id"])


def too_easy(items: Iterable[CurateItem], store: Store, configurations: Sequence[str]
             ) -> tuple[list[CurateItem], list[Excluded]]:
    """Drop the items every configuration of the named panel already solves."""
    easy = reproduced_by_all(store, configurations)
    kept, out = [], []
    for item in items:
        if item.instance_id in easy:
            out.append(Excluded(item.instance_id, Reason.TOO_EASY,
                                f"every one of {', '.join(configurations)} reproduces its transition"))
        else:
            kept.append(item)
    return kept, out
