"""Nothing lost: a replay killed with SIGKILL at random moments resumes to the same store
as an uninterrupted one, and two replays writing one store at once leave it consistent."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.score.statistics import leaderboard_from_instance_scores
from tests.synthbench import make_synthetic

pytestmark = [pytest.mark.slow, pytest.mark.requires("sandbox")]

INSTANCES = 25  # × 2 configurations × 11 states = 550 runs


def replay_cmd(bench, store, work):
    return [sys.executable, "-m", "testprism.flows.cli", "replay", str(bench), "--store", str(store), "--work", str(work)]


def expected_board() -> dict[str, dict]:
    return {"good": {"grr": 1.0, "car": 1.0, "wdr": 1.0, "jvr": 1.0}, "lax": {"grr": 0.0, "car": 1.0, "wdr": 0.0, "jvr": 0.0}}


def check_store(store_root, planned: int) -> pl.DataFrame:
    runs = Store(store_root).scan("runs").collect()
    assert runs["run_key"].n_unique() == planned  # 0 lost
    assert not list(store_root.rglob(".tmp-*"))  # no partial file left visible
    # Any duplicate (a run both writers did) agrees on its outcome.
    assert runs.group_by("run_key").agg(pl.col("outcome").n_unique().alias("n"))["n"].max() == 1
    board = leaderboard_from_instance_scores(instance_scores(Store(store_root)))
    for row in board.iter_rows(named=True):
        for metric, value in expected_board()[row["configuration"]].items():
            assert row[metric] == value, (row["configuration"], metric)
    return runs


def test_sigkill_three_times_then_finish(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", INSTANCES)
    store = tmp_path / "store"
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    for _ in range(3):
        proc = subprocess.Popen(replay_cmd(bench, store, work_root), env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(8, 20))  # past Prefect's start, somewhere inside the replay
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = subprocess.run(replay_cmd(bench, store, work_root), env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = check_store(store, INSTANCES * 2 * 11)
    assert runs.height == runs["run_key"].n_unique()  # 0 duplicated: a killed batch's flushed rows are kept


def test_two_writers_at_once_leave_the_store_consistent(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", 8)
    store = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    procs = [subprocess.Popen(replay_cmd(bench, store, work_root), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
    check_store(store, 8 * 2 * 11)
