"""The funnel table: how many items each stage of a flow kept and excluded, and why.

Papers report it (TestPrism's Table 5: stage, retained, excluded, rate); users need the
why as much as the counts, so each stage row also lists its exclusions (item, reason,
detail), e.g. the instances quarantined by gold validation and what failed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from testprism.tasks.model.outcome import Reason


@dataclass(frozen=True)
class Excluded:
    item: str  # instance id, candidate id or file:row
    reason: Reason  #: the one vocabulary (tasks/model/outcome.py)
    detail: str = ""


@dataclass(frozen=True)
class Stage:
    name: str
    unit: str  # instance | candidate
    retained: int
    exclusions: tuple[Excluded, ...] = ()

    @property
    def excluded(self) -> int:
        return len(self.exclusions)

    @property
    def rate(self) -> float:
        """The exclusion rate of the stage (0 when nothing reached it)."""
        total = self.retained + self.excluded
        return self.excluded / total if total else 0.0

    def summary(self) -> str:
        reasons = Counter(e.reason for e in self.exclusions)
        why = f" ({', '.join(f'{r}: {n}' for r, n in reasons.most_common())})" if reasons else ""
        return f"{self.name}: {self.retained} {self.unit}s retained, {self.excluded} excluded{why}"


@dataclass
class Funnel:
    """The stages of one flow run, in order."""

    flow: str
    flow_run: str
    stages: list[Stage] = field(default_factory=list)

    def add(self, stage: Stage) -> Stage:
        self.stages.append(stage)
        return stage

    def rows(self) -> list[dict]:
        """`funnel` rows (storage/schema.py FUNNEL)."""
        now = datetime.now(UTC)
        return [
            {"flow": self.flow, "flow_run": self.flow_run, "step": step, "stage": s.name, "unit": s.unit,
             "retained": s.retained, "excluded": s.excluded, "rate": s.rate,
             "exclusions": [e.__dict__ for e in s.exclusions], "recorded_at": now}
            for step, s in enumerate(self.stages, 1)
        ]
