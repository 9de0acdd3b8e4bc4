"""The arithmetic of bench/cost_model.py's extrapolation (no run, no timing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def cost_model():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("cost_model", BENCH / "cost_model.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["cost_model"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("cost_model", None)
        sys.path.remove(str(BENCH))


def test_attempts_confirm_every_failure_or_the_audit_share_of_candidates(cost_model):
    scale = cost_model.Scale(2, (("buggy", 1), ("reference", 1), ("valid", 4), ("invalid", 4)))
    failing = {"buggy": 1.0, "reference": 0.0, "valid": 0.5, "invalid": 1.0}
    assert scale.runs == 20
    # per instance: 10 runs; replays: buggy 1, valid 2, invalid 4
    assert cost_model.attempts(scale, failing, None) == 2 * (10 + 1 + 2 + 4)
    # the audit: buggy's replay always, a quarter of the candidates' 6
    assert cost_model.attempts(scale, failing, 0.25) == 2 * (10 + 1 + 0.25 * 6)


def test_core_hours_applies_each_saving_to_its_own_term(cost_model):
    scale = cost_model.Scale(1, (("buggy", 1), ("reference", 1), ("valid", 1), ("invalid", 1)))
    inputs = dict(first_failure={"buggy": 1.0, "invalid": 1.0}, attempt_s={"copy": 10.0, "tree": 8.0, "image": 7.0},
                  warm_saving_s=1.0, warm_start_s=2.0, state_s=0.5, image_s=0.25, duplicate_share=0.25, early_stop_share=0.5, audit_share=0.5)
    savings = {"": cost_model.Savings(), "tree": cost_model.Savings(program="tree"),
               "image": cost_model.Savings(program="image")}
    savings |= {name: cost_model.Savings(**{name: True}) for name in ("audit", "reuse", "warm", "early_stop")}
    hours = {name: 3600 * cost_model.core_hours(scale, on, **inputs) for name, on in savings.items()}
    assert hours[""] == pytest.approx(6 * 10.0 + 4 * 0.5)  # 4 runs + 2 replays, 4 state trees
    assert hours["audit"] == pytest.approx(5.5 * 10.0 + 2.0)  # the invalid candidate's replay at half
    assert hours["reuse"] == pytest.approx(0.75 * hours[""])
    assert hours["tree"] == pytest.approx(6 * 8.0 + 2.0)
    assert hours["image"] == pytest.approx(6 * 7.0 + 4 * (0.5 + 0.25))  # each state's image built once too
    # a warm first attempt saves 1 s and pays its state's warm process (2 s); confirmations are cold
    assert hours["warm"] == pytest.approx(4 * (9.0 + 2.0) + 2 * 10.0 + 2.0)
    assert 3600 * cost_model.core_hours(scale, savings["warm"], **inputs, suites_per_state=2) == pytest.approx(
        4 * (9.0 + 1.0) + 2 * 10.0 + 1.0)  # two suites on each state share its warm process and its tree
    assert hours["early_stop"] == pytest.approx(0.5 * hours[""])


def test_expected_runs_to_decide(cost_model):
    assert cost_model.expected_runs_to_decide(134, 0.0) == 134  # a joint success needs every run
    assert cost_model.expected_runs_to_decide(134, 1.0) == 1.0
    assert cost_model.expected_runs_to_decide(9, 1 / 9) == 5.0  # one bad of 9: (9 + 1) / 2


def test_duplicate_content_within_and_across_configurations(cost_model):
    import polars as pl

    runs = pl.DataFrame({"configuration": ["a", "a", "b", "b"], "suite_hash": ["s", "s", "s", "t"],
                         "state_hash": ["x", "y", "x", "x"], "environment_hash": ["e"] * 4, "policy_hash": ["p"] * 4})
    assert cost_model.duplicate_share(runs) == 0.25  # b's run of suite s on x repeats a's
    assert cost_model.duplicate_share_within(runs) == 0.0  # nothing repeats inside a configuration


def test_early_stop_share_at_the_stores_own_panel_sizes(cost_model):
    import polars as pl

    # suite a: broken on the reference (decided by its first two runs of 4); suite b: one of its
    # 2 candidates contradicts (first of 2 in random order at (2 + 1) / (1 + 1) = 1.5)
    runs = pl.DataFrame({"configuration": ["a"] * 4 + ["b"] * 4, "instance_id": ["i"] * 8,
                         "state": ["buggy", "reference", "candidate", "candidate"] * 2,
                         "label": [None, None, "valid", "invalid"] * 2,
                         "outcome": ["F", "F", "P", "F", "F", "P", "F", "F"]})
    share, by_two, joint = cost_model.early_stop_share(runs, None)
    assert (by_two, joint) == (1, 0)
    assert share == pytest.approx((2 / 4 + 3.5 / 4) / 2)
    at_scale, _, _ = cost_model.early_stop_share(runs, cost_model.Scale(1, (("buggy", 1), ("reference", 1),
                                                                            ("valid", 4), ("invalid", 4))))
    assert at_scale == pytest.approx((2 / 10 + (2 + 9 / 5) / 10) / 2)  # half of 8 contradict: (8 + 1) / (4 + 1)
