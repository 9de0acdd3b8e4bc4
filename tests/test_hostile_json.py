"""Hostile JSON and forged rewards (issue 39, items 2 and 3).

Every JSON a run hands back is read by the one bounded reader (tasks/model/bounded_json.py):
a document nested 60,000 arrays deep once raised RecursionError out of the verifier's reward
reader and failed a whole `collect` (exit 1, the other candidates' labels lost), and a
coverage report as deep failed `score --benchmark`. Here each reader is fed its worst cases
(deep nesting, a huge count of values, a huge size), then each stage its deep input under a
real run; each with a CONTROL, the old reader (plain json.loads) restored, where the attack
wins.

A Harbor reward is read from the file the task declares its verifier writes
(`[checks.reward] format`): a candidate whose code, imported by the verifier, writes
reward.json = 1 beside the verifier's reward.txt = 0 is `E`/results_disagree, labelled
invalid (tasks/collect/label.py: such a run proved no check passed), never valid;
CONTROL: with the old reader (reward.json first, whatever the declaration) it is valid.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.execution import reward as reward_module
from testprism.tasks.execution.logs import parse_log
from testprism.tasks.execution.reward import REWARD_MAX_BYTES, VERIFIER_LOGS, read_reward
from testprism.tasks.execution.verdict import Unreadable
from testprism.tasks.generate.generation import _reported_usage
from testprism.tasks.model import bounded_json
from testprism.tasks.model.benchmark_format import RewardSpec
from testprism.tasks.sandbox.base import ExecResult
from testprism.tasks.sandbox.channel import _ask_stream_usage
from testprism.tasks.sandbox.outputs import RunOutputs
from testprism.tasks.sandbox.transcript import parsed
from testprism.tasks.score.coverage import reports
from testprism.tasks.execution.run_settings import RunSettings
from tests.benchfixture import BUGGY, CHECKS, INVALID, REFERENCE, VALID, diff, make_benchmark, write

#: 60,000 nested arrays (120 KB): json.loads recurses once a level
DEEP = b"[" * 60_000 + b"]" * 60_000
#: 2.7 million empty lists in 8 MiB, within the size bound: json.loads builds every one
WIDE = b"[" + b"[]," * ((bounded_json.MAX_BYTES - 3) // 3) + b"0]"
#: one byte past the size bound
HUGE = b'"' + b"x" * bounded_json.MAX_BYTES + b'"'
WORST = {"deep": DEEP, "wide": WIDE, "huge": HUGE}


def _framed(**files: bytes) -> bytes:
    """What the wrapped verifier hands back (tasks/execution/reward.py): each reward file,
    cut to its bound as `head -c` cuts it, after its header."""
    return b"".join(b"== %s %d\n" % (name.replace("_", ".").encode(), len(data[:REWARD_MAX_BYTES]))
                    + data[:REWARD_MAX_BYTES] for name, data in files.items())


# -- the reader --------------------------------------------------------------------------------


def test_within_its_bounds_the_reader_is_json_loads():
    text = '{"a": [1, 2.5, {"b": "[[[[{{ \\" ]] \\\\"}], "c": null, "\u00e9": true}'
    assert bounded_json.loads(text) == bounded_json.loads(text.encode()) == json.loads(text)
    # brackets inside strings are no nesting: a string of 10,000 brackets reads
    assert bounded_json.loads(json.dumps(["[" * 10_000])) == ["[" * 10_000]
    nested = "[" * bounded_json.MAX_DEPTH + "]" * bounded_json.MAX_DEPTH
    assert bounded_json.loads(nested) == json.loads(nested)


@pytest.mark.parametrize(("worst", "message"), [
    ("deep", f"arrays and objects nested over {bounded_json.MAX_DEPTH} deep"),
    ("wide", f"over {bounded_json.MAX_ELEMENTS} values"),
    ("huge", f"{bounded_json.MAX_BYTES + 2} bytes, over {bounded_json.MAX_BYTES}"),
])
def test_past_a_bound_the_reader_refuses_before_parsing(worst, message):
    with pytest.raises(bounded_json.JSONTooLarge) as caught:
        bounded_json.loads(WORST[worst])
    assert str(caught.value) == message and isinstance(caught.value, ValueError)
    nested_one_more = "[" * (bounded_json.MAX_DEPTH + 1) + "]" * (bounded_json.MAX_DEPTH + 1)
    with pytest.raises(bounded_json.JSONTooLarge):
        bounded_json.loads(nested_one_more)
    # what is not UTF-8 JSON is a plain ValueError
    for bad in (b'"\xff"', b"{", b"[1,]", b"\xef\xbb\xbf[]"):
        with pytest.raises(ValueError):
            bounded_json.loads(bad)


def test_control_json_loads_recurses_on_the_deep_document():
    with pytest.raises(RecursionError):
        json.loads(DEEP)
    # and the hand-back's cut (64 KiB of it, 32,768 levels) is as deep for it
    with pytest.raises(RecursionError):
        json.loads(DEEP[:REWARD_MAX_BYTES])


# -- each reader of a run's JSON, fed its worst cases -------------------------------------------


def _unreadable(read, data: bytes) -> bool:
    """True when `read` found `data` unreadable the way its caller records it (a ValueError,
    or None from a log parser), never by any other exception."""
    try:
        return read(data) is None
    except ValueError:
        return True


def _usage(data: bytes) -> dict | None:
    result = ExecResult(exit_code=0, duration_s=0.1, output_tail="",
                        outputs=RunOutputs({".task/usage.json": data}, b"", ()))
    return _reported_usage(result) or None


def _raw(body: object) -> object:
    return None if isinstance(body, dict) and set(body) == {"raw"} else body


#: reader name → what reads a run's bytes, as the harness calls it
READERS = {
    "reward.json": lambda d: read_reward(_framed(reward_json=d), RewardSpec(tests="tests", format="json")),
    "coverage.py": reports.parse_report,
    "v8": lambda d: reports.parse_v8_report(d, {}),
    "typescript": reports.parse_mapped_v8_report,
    "gcov": lambda d: reports.parse_gcov_report(b"# testprism gcov\n# root /p\n# gcda 1\n" + d),
    "pcov": reports.parse_pcov_report,
    "ruby": reports.parse_ruby_report,
    "script (Pro's output.json)": lambda d: parse_log("script", d),
    "rspec_json": lambda d: parse_log("rspec_json", b'{"version": "3", "examples": ' + d + b"}"),
    "go_test_json": lambda d: parse_log("go_test_json", b'{"Action": ' + d + b"}"),
    "agent usage.json": _usage,
    "channel request": lambda d: _ask_stream_usage(d)[0] or None,
    "transcript": lambda d: _raw(parsed(d)),
}


#: the channel's own bound on a request's size (413 before it is read, tests/test_channel.py)
#: is what bounds its readers' size
SIZE_BOUNDED_ELSEWHERE = {"channel request", "transcript"}


@pytest.mark.parametrize(("reader", "worst"), [(reader, worst) for reader in READERS for worst in WORST
                                               if not (worst == "huge" and reader in SIZE_BOUNDED_ELSEWHERE)])
def test_every_reader_of_a_run_s_json_finds_its_worst_case_unreadable(reader, worst):
    assert _unreadable(READERS[reader], WORST[worst])


def test_control_the_old_readers_raised_recursion_error():
    """The old paths on the deep document: coverage and the reward caught only ValueError."""
    with pytest.raises(RecursionError):
        json.loads(DEEP)  # reports.parse_report's and _collector_files' old first line
    with pytest.raises(RecursionError):
        _old_reward(reward_module._files(_framed(reward_json=DEEP)), "reward.txt")


def test_a_coverage_report_of_the_wrong_shape_is_unreadable_not_a_crash():
    for report in (b'{"files": {"a.py": 1}}', b'{"files": {"a.py": {"statements": [1]}}}',
                   b'{"files": {"a.py": {"statements": [{}], "missing": []}}}'):
        with pytest.raises(ValueError):
            reports.parse_report(report)


# VmHWM, this process's own peak (ru_maxrss keeps the peak of the process it was forked
# from across exec: under a big pytest it read 900 MB before anything ran)
PEAK_RSS = """
import json, sys
def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
sys.path.insert(0, {tests!r})
from test_hostile_json import READERS, SIZE_BOUNDED_ELSEWHERE, WORST, _unreadable
data = WORST[{worst!r}]
base = hwm()
{call}
print(hwm() - base, hwm())
"""


def peak_rss_kib(worst: str, call: str) -> tuple[int, int]:
    """(growth, peak) of a fresh harness process's peak RSS (KiB) while `call` reads the
    worst input `worst`, beyond what building it took."""
    code = PEAK_RSS.format(tests=str(Path(__file__).parent), worst=worst, call=call)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    growth, peak = done.stdout.split()[-2:]
    return int(growth), int(peak)


def test_the_harness_stays_small_reading_the_worst_json():
    """The Must-show figure: the growth of the harness's peak RSS while every reader reads
    each worst input; CONTROL: json.loads on the wide one (2.7 million lists)."""
    every = ("assert all(_unreadable(read, data) for name, read in READERS.items()\n"
             "           if not (name in SIZE_BOUNDED_ELSEWHERE and data is WORST['huge']))")
    measured = {worst: peak_rss_kib(worst, every) for worst in WORST}
    control = peak_rss_kib("wide", "json.loads(data)")
    print(f"(growth, peak) of the peak RSS in KiB, every reader: {measured}; json.loads on wide: {control}")
    assert max(growth for growth, _ in measured.values()) < 48 * 1024 < 128 * 1024 < control[0], (measured, control)


# -- the stages ------------------------------------------------------------------------------------

#: the verifier of a txt task: its exit status says whether the checks hold, test.sh writes reward.txt
VERIFY_TXT = """\
from stats import median

data = [3, 1, 2, 0]
assert median([4, 1, 3, 2]) == 2.5
median(data)
assert data == [3, 1, 2, 0]
"""
TEST_TXT = """\
#!/bin/bash
if PYTHONPATH="$PWD" python /tests/verify.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
#: the verifier of a json task writes reward.json itself (as Harbor's Reward Kit does)
VERIFY_JSON = """\
import json
from stats import median

data = [3, 1, 2, 0]
ok = median([4, 1, 3, 2]) == 2.5 and (median(data) or True) and data == [3, 1, 2, 0]
with open("/logs/verifier/reward.json", "w") as fh:
    json.dump({"reward": 1 if ok else 0}, fh)
"""
TEST_JSON = '#!/bin/bash\nPYTHONPATH="$PWD" python /tests/verify.py\n'
#: the forger: the honest twin's bug, and at import a reward.json of 1 beside the verifier's reward.txt
FORGER = INVALID + """

import os as _os

_os.makedirs("/logs/verifier", exist_ok=True)
with open("/logs/verifier/reward.json", "w") as _fh:
    _fh.write('{"reward": 1}')
"""
#: the deep writer: at the verifier's exit, its reward.json replaced by 60,000 nested arrays
DEEP_WRITER = INVALID + """

import atexit as _atexit


def _deep():
    with open("/logs/verifier/reward.json", "w") as fh:
        fh.write("[" * 60000 + "]" * 60000)


_atexit.register(_deep)
"""


def reward_instance(root: Path, iid: str, declared: str, candidates: dict[str, tuple[str, str]]) -> None:
    """A Harbor-style instance (median forgets even lengths) whose checks are a verifier
    writing reward.`declared`; `candidates` maps id → (declared label, stats.py)."""
    inst = root / "instances" / iid
    test_sh, verify = (TEST_TXT, VERIFY_TXT) if declared == "txt" else (TEST_JSON, VERIFY_JSON)
    write(inst / "program" / "stats.py", BUGGY)
    write(inst / "instruction.md", "median() returns the upper middle element for even-length input.\n")
    write(inst / "reference.diff", diff("stats.py", BUGGY, REFERENCE))
    write(inst / "checks.diff", diff("tests/test.sh", "", test_sh) + diff("tests/verify.py", "", verify))
    toml = (f'id = "{iid}"\nsource = "mini"\n\n[checks]\ncommand = "bash /tests/test.sh"\nfail_to_pass = ["reward"]\n'
            f'\n[checks.reward]\ntests = "tests"\nformat = "{declared}"\n')
    for cid, (label, code) in candidates.items():
        write(inst / "candidates" / f"{cid}.diff", diff("stats.py", BUGGY, code))
        toml += f'\n[[candidates]]\nid = "{cid}"\nlabel = "{label}"\npatch = "candidates/{cid}.diff"\n'
    write(inst / "instance.toml", toml)


def reward_bench(root: Path) -> Path:
    reward_instance(root, "mini__reward-txt", "txt", {
        "stdlib": ("valid", VALID), "sorts-in-place": ("invalid", INVALID), "forger": ("invalid", FORGER)})
    reward_instance(root, "mini__reward-json", "json", {
        "stdlib": ("valid", VALID), "sorts-in-place": ("invalid", INVALID), "deep": ("invalid", DEEP_WRITER)})
    return root


def _old_reward(files: dict[str, bytes], declared: str) -> float:
    """The reader before the declared format (harbor's order: reward.json's numeric
    `reward` if it gives one, else reward.txt), with its plain json.loads."""
    if "reward.json" in files:
        parsed = json.loads(files["reward.json"])
        value = parsed.get("reward") if isinstance(parsed, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    if "reward.txt" not in files:
        raise Unreadable(f"the verifier left no reward in {VERIFIER_LOGS}")
    return float(files["reward.txt"].strip())


def collect(bench: Path, store: Path, backend: str, work_root: Path):
    from typer.testing import CliRunner

    from testprism.flows.cli import app

    return CliRunner().invoke(app, ["collect", str(bench), "--store", str(store), "--backend", backend,
                                    "--work", str(work_root)])


def labels(store: Path) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    rows = Store(store).scan("candidates").select("instance_id", "candidate_id", "label", "reason").collect()
    return {(r["instance_id"][len("mini__reward-"):], r["candidate_id"]): (r["label"], r["reason"])
            for r in rows.iter_rows(named=True)}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_collect_labels_forged_and_deep_rewards_and_the_others(backend, request, tmp_path, work_root, monkeypatch):
    """`collect` on two Harbor-style instances: on the txt one, a candidate whose code writes
    reward.json = 1 (the verifier's reward.txt says 0) is E/results_disagree, so invalid (no
    check proved passed), its honest twin invalid, the stdlib fix valid; on the json one, a candidate whose code replaces the
    verifier's reward.json with 60,000 nested arrays is E/parse_failed, and the stage exits 0
    with every other candidate labelled. CONTROLS, the old reader monkeypatched back: the
    forger is labelled valid, and the deep reward.json fails the whole collect."""
    request.getfixturevalue("require")("docker" if backend == "docker" else "sandbox")
    bench = reward_bench(tmp_path / "bench")
    done = collect(bench, tmp_path / "store", backend, work_root)
    assert done.exit_code == 0, (done.output, done.exception)
    assert labels(tmp_path / "store") == {
        ("txt", "stdlib"): ("valid", None), ("txt", "sorts-in-place"): ("invalid", None),
        ("txt", "forger"): ("invalid", None),  # its run E/results_disagree proved no check passed
        ("json", "stdlib"): ("valid", None), ("json", "sorts-in-place"): ("invalid", None),
        ("json", "deep"): (None, "parse_failed")}
    runs = Store(tmp_path / "store").scan("verifications").filter(pl.col("candidate_id").is_in(["forger", "deep"]))
    stored = {r["candidate_id"]: r for r in runs.collect().iter_rows(named=True)}
    assert {cid: (r["outcome"], r["reason"]) for cid, r in stored.items()} == {
        "forger": ("E", "results_disagree"), "deep": ("E", "parse_failed")}
    assert stored["forger"]["stdout_tail"].startswith(
        f"{VERIFIER_LOGS}/reward.json was written beside the verifier's own reward file (reward.txt)")
    assert stored["deep"]["stdout_tail"].startswith(
        f"{VERIFIER_LOGS}/reward.json is past a bound: arrays and objects nested over {bounded_json.MAX_DEPTH} deep")

    # CONTROL: the old reader, on the same benchmark, in a fresh store
    monkeypatch.setattr(reward_module, "_reward", _old_reward)
    forged = reward_bench(tmp_path / "forged")
    (forged / "instances" / "mini__reward-json").rename(tmp_path / "set-aside")
    done = collect(forged, tmp_path / "store-forged", backend, work_root)
    assert done.exit_code == 0, (done.output, done.exception)
    assert labels(tmp_path / "store-forged")[("txt", "forger")] == ("valid", None)
    done = collect(bench, tmp_path / "store-deep", backend, work_root)
    assert done.exit_code != 0 and isinstance(done.exception, RecursionError), (done.output, done.exception)


#: the Python collector, its report replaced by 60,000 nested arrays for a suite that holds
#: `deep-report`: the helper seals whatever its collector wrote (the suite itself cannot
#: touch the helper, mounted read-only; a collector that passes a run's own data through,
#: as the JavaScript, PHP and Ruby ones do, is where such a report would come from)
DEEP_COLLECTOR_HEAD = """\
import os as _os, sys as _sys
if _os.path.exists(_os.path.join(_sys.argv[4], "tmp", "deep-report")):
    open(_sys.argv[1], "w").write("[" * 60000 + "]" * 60000)
    raise SystemExit(0)
"""


def score(store: Path, bench: Path, work_root: Path):
    from typer.testing import CliRunner

    from testprism.flows.cli import app

    return CliRunner().invoke(app, ["score", str(store), "--benchmark", str(bench), "--work", str(work_root)])


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_score_with_a_deep_coverage_report_exits_0_that_suite_s_coverage_failed(tmp_path, work_root, monkeypatch):
    """`score --benchmark`: the suite whose coverage run hands back a sealed report nested
    60,000 deep is `coverage_failed`, the other suite is measured, the stage exits 0.
    CONTROL: with the reports' reader set back to json.loads, the same score fails with
    RecursionError."""
    from testprism.flows.replay import replay_flow
    from testprism.tasks.score.coverage import instrument

    monkeypatch.setattr(instrument, "_COLLECTOR", DEEP_COLLECTOR_HEAD + instrument._COLLECTOR)
    bench = make_benchmark(tmp_path / "bench", {"deep": {"test_m.py": CHECKS, "deep-report": "x\n"},
                                                "strong": {"test_m.py": CHECKS}})
    store = tmp_path / "store"
    replay_flow(benchmark=str(bench), store=str(store), run=RunSettings(work=str(work_root)))
    control_store = tmp_path / "control-store"
    replay_flow(benchmark=str(bench), store=str(control_store), run=RunSettings(work=str(work_root)))

    done = score(store, bench, work_root)
    assert done.exit_code == 0, (done.output, done.exception)
    coverage = {r["configuration"]: r for r in pl.read_parquet(store / "scores" / "coverage.parquet").iter_rows(named=True)}
    assert coverage["deep"]["reason"] == "coverage_failed" and coverage["deep"]["delta_c"] is None
    assert coverage["strong"]["reason"] is None and coverage["strong"]["delta_c"] is not None

    monkeypatch.setattr(reports, "bounded_json", types.SimpleNamespace(loads=json.loads))
    done = score(control_store, bench, work_root)
    assert done.exit_code != 0 and isinstance(done.exception, RecursionError), (done.output, done.exception)
