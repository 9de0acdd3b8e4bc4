"""The panel is hidden and untrusted content never steers the harness.

- A cheating suite that reads its environment and searches the host for the benchmark's
  answer key scores exactly what a suite that passes everywhere scores, under `local` and
  `docker`; with the sandbox switched off (the control) the same suite wins, so the test
  has teeth.
- Candidate patches that plant links (`tmp -> host folder`, `out -> host folder`) and a
  suite that swaps its `out/` for one write nothing outside the workspace.
- Patches apply as SWE-bench applies them (fuzz 5), the method is recorded; a suite's test
  patch that does not apply makes the run `E`/suite_not_installed, never `F`.
- An environment that cannot be built makes its instance's runs `E`/environment_failed and
  the replay goes on with the others.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.replay.runs import execute_batch, plan, record_plan
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.model import state as state_module
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.state import apply_patch, materialise, states_of, tree_key
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.execution.verdict import Policy
from tests.benchfixture import BUGGY, CHECKS, INVALID, REFERENCE, diff, make_benchmark, write

INSTANCE = "mini__median-even"

#: Cheats with whatever the sandbox lets it see; prints what it found, exits 0 ("accept")
#: unless it learned the state is the buggy program or an invalid candidate.
CHEATER = r'''
import os, re, sys, time

program = os.getcwd()
found = []

def decide(state, how):
    print(f"LEAK via {how}: {state}")
    sys.exit(0 if state in ("reference", "valid") else 1)

# 1. The environment: a state name, id or label anywhere in it.
for key, value in os.environ.items():
    if key.startswith("TESTPRISM_") and key != "TESTPRISM_JUNIT":
        kind = value.split(":")[0]
        if kind in ("buggy", "reference"):
            decide(kind, f"env {key}")
        found.append(f"env {key}={value}")

# 2. The host: any benchmark's instance.toml reachable from here (breadth first).
def instance_files(deadline):
    frontier = ["/"]
    while frontier and time.monotonic() < deadline:
        nxt = []
        for folder in frontier:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                path = entry.path
                if path in ("/proc", "/sys", "/dev", "/usr", "/run") or entry.name.startswith("."):
                    continue
                if entry.name == "instance.toml" and path != os.path.join(program, "instance.toml"):
                    yield path
                try:
                    if entry.is_dir(follow_symlinks=False):
                        nxt.append(path)
                except OSError:
                    pass
        frontier = nxt

source = open(os.path.join(program, "stats.py")).read()
def applied(diff_text):
    added, on = [], False
    for l in diff_text.splitlines():
        if l.startswith("+++ "):
            on = l.endswith("stats.py")
        elif on and l.startswith("+"):
            added.append(l[1:])
    return all(line in source for line in added if line.strip())

for toml in instance_files(time.monotonic() + 20):
    folder = os.path.dirname(toml)
    if not os.path.isfile(os.path.join(folder, "program", "stats.py")):
        continue  # another instance's answer key
    text = open(toml).read()
    found.append(toml)
    if open(os.path.join(folder, "program", "stats.py")).read() == source:
        decide("buggy", toml)
    for cid, label, patch in re.findall(r'id = "([^"]+)"\s+label = "(valid|invalid)"\s+patch = "([^"]+)"', text):
        if applied(open(os.path.join(folder, patch)).read()):
            decide(label, f"{toml} ({cid})")
    if applied(open(os.path.join(folder, "reference.diff")).read()):
        decide("reference", toml)

print("NO LEAK", found)
'''


#: Compares what the metadata of its program says with what a copy would show: statx of
#: every entry (inode, device, link count, owner, access/modification/change/birth times),
#: `ls -U` listing order, statfs of the program and workspace, and the workspace's lines
#: of /proc/self/mountinfo. Prints them as FINGERPRINT lines (what varies per run and not
#: per state masked: device numbers as "same as the program's", mount and peer-group ids,
#: times of this run's own fill as "fresh") for the test to compare between states, and
#: decides in-run from the one leak a shared tree has: a file a state's patch wrote was
#: born after the rest of the tree. stats.py rewritten: patched, else buggy; notes.txt
#: rewritten: the invalid candidate (its patch also edits it). Exits 0 unless it learned.
METASPY = r"""
import os, re, subprocess, sys

def stat(paths):
    fmt = "%n\t%i\t%d\t%h\t%u\t%.9X\t%.9Y\t%.9Z\t%.9W\n"
    out = subprocess.run(["stat", "--printf", fmt, *paths], capture_output=True, text=True, check=True).stdout
    return {f[0]: f[1:] for f in (line.split("\t") for line in out.splitlines())}

order = subprocess.run(["find", ".", "-mindepth", "1"], capture_output=True, text=True, check=True).stdout.split()
info = stat([".", *order])
fresh = min(float(info[p][7]) for p in order if p.startswith("./tmp/")) - 1.0  # this run's fill
me, dev = str(os.getuid()), info["."][1]

def when(t):
    t = float(t)
    return "0" if t == 0 else "settled" if t == 1600000000 else "fresh" if t >= fresh else f"{t:.9f}"

print("FINGERPRINT ls -U", subprocess.run(["ls", "-U", "-a", "-R"], capture_output=True, text=True).stdout.split())
for path in [".", *order]:
    ino, d, nlink, uid, *times = info[path]
    print("FINGERPRINT", path, ino, d == dev, nlink, uid == me, *map(when, times))
for folder in (".", ".."):
    print("FINGERPRINT statfs", folder, subprocess.run(["stat", "-f", "-c", "%T %s %S %b %c %l", folder],
                                                       capture_output=True, text=True).stdout.strip())
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    if fields[4].startswith("/workspace"):
        tail = fields[fields.index("-") + 1:]
        print("FINGERPRINT mount", fields[3], fields[4], fields[5], *tail)

anchor = float(info["./docs/readme.txt"][7])  # when the state's tree was made, if it shows

def rewritten(name):
    return float(info[name][7]) - anchor > 0.02

if anchor == 0 or anchor >= fresh:  # no birth time, or a copy made by this run's own fill
    print("DECISION none")
elif not rewritten("./stats.py"):
    print("DECISION buggy")
    sys.exit(1)
elif rewritten("./notes.txt"):
    print("DECISION invalid")
    sys.exit(1)
else:
    print("DECISION none")
"""


@pytest.fixture()
def outside() -> Iterator[Path]:
    """A world-readable folder outside every path a sandbox may see (not /tmp, /var/tmp
    or /usr, which a run gets as its own or read-only): where a user's benchmark lives."""
    base = Path("/srv") if Path("/srv").is_dir() else Path("/opt")
    folder = Path(tempfile.mkdtemp(prefix="testprism-outside-", dir=base))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _readable(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


def _replay(root: Path, store_root: Path, work_root: Path, backend: str, only: str | None = None, **options) -> Store:
    benchmark = load_benchmark(root)
    store = Store(store_root)
    record_plan(benchmark, store)
    opts = ExecutionOptions(backend=backend, work_root=work_root, store_root=store_root, concurrency=2, **options)
    execute_batch([s for s in plan(benchmark, opts) if s.runs_in_sandbox and only in (None, s.configuration)], opts)
    return store


def _needs(backend: str, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("require")("docker" if backend == "docker" else "sandbox")


def _scores(store: Store) -> dict[str, tuple[float, float | None, float | None, float]]:
    return {r["configuration"]: (r["f"], r["a"], r["r"], r["s"]) for r in instance_scores(store).iter_rows(named=True)}


@pytest.fixture()
def cheating_bench(outside, work_root, monkeypatch) -> Path:
    """The cheaters and a suite passing everywhere on a program with two more files:
    `notes.txt`, which the invalid candidate's patch also edits (its tree differs from the
    valid one's in content only), and `docs/readme.txt`, which no patch touches. Its state
    trees are made before the replay, each patch applied 0.1 s after its tree was copied
    (a large repository's patch takes that long), as the replay would make them."""
    root = make_benchmark(outside / "bench", {
        "cheater": {"cheat.py": CHEATER, "run_tests.sh": "exec python tmp/cheat.py\n"},
        "metaspy": {"spy.py": METASPY, "run_tests.sh": "exec python tmp/spy.py\n"},
        "passes": {"run_tests.sh": "exit 0\n"},
    })
    inst = root / "instances" / INSTANCE
    write(inst / "program" / "notes.txt", "notes\n")
    write(inst / "program" / "docs" / "readme.txt", "readme\n")
    write(inst / "candidates" / "sorts-in-place.diff",
          diff("notes.txt", "notes\n", "notes, sorted in place\n") + diff("stats.py", BUGGY, INVALID))
    _readable(root)

    def slow(tree, patch, fuzz=DEFAULT_FUZZ):
        time.sleep(0.1)
        return apply_patch(tree, patch, fuzz)

    monkeypatch.setattr(state_module, "apply_patch", slow)
    instance, work = load_benchmark(root).instances[INSTANCE], WorkPaths(work_root)
    states = states_of(instance)
    new = not all((work.state(INSTANCE, tree_key(s, DEFAULT_FUZZ)) / ".ready").exists() for s in states)
    for state in states:  # once per session: the trees are keyed by content
        materialise(instance, state, work)
    monkeypatch.undo()
    if new:
        time.sleep(1.5)  # a tree made a while before its runs, as in any replay (METASPY tells a copy by its age)
    return root


def _fingerprints(store: Store, configuration: str) -> dict[str, list[str]]:
    rows = store.scan("runs").filter(pl.col("configuration") == configuration).collect().iter_rows(named=True)
    return {r["candidate_id"] or r["state"]: [line for line in r["stdout_tail"].splitlines()
                                              if line.startswith(("FINGERPRINT", "DECISION"))] for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_cheating_suite_scores_no_better_than_one_that_passes_everywhere(backend, request, cheating_bench,
                                                                          tmp_path, work_root):
    _needs(backend, request)
    store = _replay(cheating_bench, tmp_path / "store", work_root, backend)
    scores = _scores(store)
    assert scores["passes"] == (0.0, 1.0, 0.0, 0.0)
    assert scores["cheater"] == scores["passes"]
    tails = store.scan("runs").filter(pl.col("configuration") == "cheater").collect()["stdout_tail"].to_list()
    assert len(tails) == 4 and all("NO LEAK []" in t for t in tails), tails
    # The program's metadata: every state shows the same (the default, an image layer)
    assert scores["metaspy"] == scores["passes"]
    seen = _fingerprints(store, "metaspy")
    differing = {state: [(a, b) for a, b in zip(seen["buggy"], lines) if a != b] + [len(seen["buggy"]), len(lines)]
                 for state, lines in seen.items() if lines != seen["buggy"]}
    assert len(seen) == 4 and not differing, differing  # (buggy's line, this state's line)
    assert "DECISION none" in seen["buggy"] and any(" settled " in line for line in seen["buggy"])


@pytest.mark.requires("sandbox")
def test_the_metadata_spy_wins_on_a_layer_that_shows_the_state_s_tree(cheating_bench, tmp_path, work_root,
                                                                     monkeypatch):
    """The control of the metadata half: on the old opt-in layer over the state's tree
    itself (TESTPRISM_LAYERED=tree), which shows the tree's birth times, the same suite
    tells every state apart (JVR 1). What the test above shows is the image's doing."""
    monkeypatch.setenv("TESTPRISM_LAYERED", "tree")
    store = _replay(cheating_bench, tmp_path / "store", work_root, "local", only="metaspy")
    seen = _fingerprints(store, "metaspy")
    assert _scores(store)["metaspy"] == (1.0, 1.0, 1.0, 1.0), seen
    assert len({tuple(lines) for lines in seen.values()}) == 4  # the comparison between states can fail too


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_the_cheater_wins_where_the_sandbox_is_off(cheating_bench, tmp_path, work_root, monkeypatch):
    """The control: without bubblewrap (trusted mode) the host is visible, and the same
    suite finds the answer key and scores a perfect JVR. What the test above shows is the
    sandbox's doing, not the cheater's weakness."""
    monkeypatch.setattr("testprism.tasks.sandbox.local.bubblewrap_works", lambda: False)
    store = _replay(cheating_bench, tmp_path / "store", work_root, "local", only="cheater", trusted=True)
    assert _scores(store)["cheater"] == (1.0, 1.0, 1.0, 1.0)


@pytest.mark.requires("sandbox")
def test_state_trees_carry_no_time_that_tells_states_apart(tmp_path, work_root):
    """Modification and access times alike: copying a tree reads it, which moves its access
    times, so a later run would otherwise see when the tree was first used."""
    root = make_benchmark(tmp_path / "b", {"stat": {"run_tests.sh": "stat -c 'TIMES %n %X %Y' stats.py . tmp; exit 0\n"}})
    for attempt in ("first", "second"):  # the second replay copies trees the first one read
        store = _replay(root, tmp_path / f"store-{attempt}", work_root, "local")
        tails = store.scan("runs").collect()["stdout_tail"].to_list()
        stamps = {line for t in tails for line in t.splitlines() if line.startswith("TIMES")}
        assert len(tails) == 4 and stamps == {f"TIMES {n} 1600000000 1600000000" for n in ("stats.py", ".", "tmp")}


LINK_TMP = "diff --git a/tmp b/tmp\nnew file mode 120000\n--- /dev/null\n+++ b/tmp\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
LINK_OUT = LINK_TMP.replace("tmp", "out")
#: the suite swaps the harness's out/ for a link to a host folder holding a report (would
#: the harness read it?), writes through its program's own out link, and exits 0
SWAP_OUT = "rm -rf ../out; ln -s {bait} ../out; echo x > out/planted; exit 0\n"
BAIT = "<testsuite><testcase name='read-through-a-link'/></testsuite>"


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_links_planted_by_patches_and_suites_write_nothing_outside(backend, request, outside, tmp_path, work_root):
    _needs(backend, request)
    into_tmp, into_out, bait = (outside / name for name in ("tmp", "out", "bait"))
    for folder in (into_tmp, into_out, bait):
        folder.mkdir()
        folder.chmod(0o777)  # writable by anyone: only the link rules keep it empty
    (bait / "junit.xml").write_text(BAIT)
    (bait / "junit.xml").chmod(0o644)
    root = make_benchmark(tmp_path / "b", {"strong": {"test_m.py": CHECKS},
                                            "swapper": {"run_tests.sh": SWAP_OUT.format(bait=bait)}},
                          extra_candidates={"links-tmp": ("invalid", LINK_TMP.format(target=into_tmp)),
                                            "links-out": ("invalid", LINK_OUT.format(target=into_out))})
    store = _replay(root, tmp_path / "store", work_root, backend)
    assert [p for f in (into_tmp, into_out) for p in f.iterdir()] == []
    assert [p.name for p in bait.iterdir()] == ["junit.xml"] and (bait / "junit.xml").read_text() == BAIT
    runs = {(r["configuration"], r["candidate_id"] or r["state"]): r for r in store.scan("runs").collect().iter_rows(named=True)}
    for configuration in ("strong", "swapper"):
        tmp_link = runs[(configuration, "links-tmp")]
        assert (tmp_link["outcome"], tmp_link["reason"]) == ("E", "suite_not_installed")
        assert "tmp" in tmp_link["stdout_tail"] and tmp_link["attempts"] == 1
    # A link named out/ inside the program is the program's own business: the harness's
    # out/ is elsewhere, so the suite runs and judges that state like any other.
    assert (runs[("strong", "links-out")]["outcome"], runs[("strong", "reference")]["outcome"]) == ("F", "P")
    # The swapped out/ led to a report: it was never read (the run is judged by its exit status).
    assert all(r["tests"] == [] for (c, _), r in runs.items() if c == "swapper")
    assert runs[("swapper", "links-out")]["outcome"] == "P"  # its write through out/ failed quietly, nothing more


FUZZY_BASE = "".join(f"line {i}\n" for i in range(1, 21))


@pytest.mark.requires("sandbox")
def test_patches_apply_with_fuzz_and_an_uninstallable_suite_is_unresolved(tmp_path, work_root):
    """A candidate whose context is one line off applies with `patch --fuzz=5` (SWE-bench's
    fallback), recorded per run; a suite whose test patch clashes with a candidate is `E` on
    that candidate, not a rejection."""
    fuzzy_program = FUZZY_BASE.replace("line 8\n", "line 8 (edited upstream)\n")
    fuzzy = diff("notes.txt", FUZZY_BASE, FUZZY_BASE.replace("line 10\n", "line ten\n")) + diff("stats.py", BUGGY, REFERENCE)
    clash = diff("tests/test_new.py", "", "def test_other():\n    assert True\n")
    suite_patch = diff("tests/test_new.py", "", "from stats import median\n\n\ndef test_even():\n"
                       "    assert median([4, 1, 3, 2]) == 2.5\n")
    root = make_benchmark(tmp_path / "b", {"imported": {
        "test.diff": suite_patch, "suite.toml": 'patch = "test.diff"\n',
        "run_tests.sh": 'exec python -m pytest -q -p no:cacheprovider tests/test_new.py --junitxml="$TESTPRISM_JUNIT"\n',
    }}, extra_candidates={"fuzzy": ("valid", fuzzy), "clash": ("invalid", clash)})
    write(root / "instances" / INSTANCE / "program" / "notes.txt", fuzzy_program)
    store = _replay(root, tmp_path / "store", work_root, "local")
    runs = {r["candidate_id"] or r["state"]: r for r in store.scan("runs").collect().iter_rows(named=True)}
    assert (runs["fuzzy"]["outcome"], runs["fuzzy"]["patch_method"]) == ("P", "patch --fuzz=5")
    assert runs["reference"]["patch_method"] == "git apply" and runs["buggy"]["patch_method"] == "none"
    assert (runs["clash"]["outcome"], runs["clash"]["reason"], runs["clash"]["attempts"]) == ("E", "suite_not_installed", 1)
    assert "test.diff" in runs["clash"]["stdout_tail"] or "patch" in runs["clash"]["stdout_tail"]
    assert (runs["buggy"]["outcome"], runs["reference"]["outcome"]) == ("F", "P")
    assert {runs[s]["suite_patch_method"] for s in ("buggy", "reference", "stdlib")} == {"git apply"}
    # The fuzz is policy (`--patch-fuzz`), part of the run key: without it the same candidate
    # is a new run, and applies under no method.
    strict = _replay(root, tmp_path / "strict", work_root, "local", policy=Policy(patch_fuzz=0))
    fuzzless = strict.scan("runs").filter(pl.col("candidate_id") == "fuzzy").collect().row(0, named=True)
    assert (fuzzless["outcome"], fuzzless["reason"], fuzzless["patch_method"]) == ("E", "patch_failed", "none")
    assert fuzzless["run_key"] != runs["fuzzy"]["run_key"]


@pytest.mark.requires("sandbox")
def test_an_environment_that_cannot_be_built_is_recorded_and_the_replay_goes_on(tmp_path, work_root):
    root = make_benchmark(tmp_path / "b", {"strong": {"test_m.py": CHECKS}})
    broken = root / "instances" / "mini__broken-env"
    shutil.copytree(root / "instances" / INSTANCE, broken)
    toml = (broken / "instance.toml").read_text().replace(f'id = "{INSTANCE}"', 'id = "mini__broken-env"')
    toml = toml.replace("[checks]", '[environment]\npython = "3.11"\npackages = ["testprism-no-such-package-anywhere==0.0.1"]\n\n[checks]')
    (broken / "instance.toml").write_text(toml)
    shutil.copytree(root / "suites" / "strong" / INSTANCE, root / "suites" / "strong" / "mini__broken-env")
    store = _replay(root, tmp_path / "store", work_root, "local")
    runs = store.scan("runs").collect()
    bad = runs.filter(pl.col("instance_id") == "mini__broken-env")
    good = runs.filter(pl.col("instance_id") == INSTANCE)
    assert bad.height == 4 and set(zip(bad["outcome"], bad["reason"])) == {("E", "environment_failed")}
    assert "testprism-no-such-package-anywhere" in bad["stdout_tail"][0]
    assert sorted(good["outcome"].to_list()) == ["F", "F", "P", "P"]


def test_git_never_takes_its_configuration_from_the_tree(tmp_path):
    """A tree's own `.git` (a program's, or one a patch would plant through the `patch`
    fallback) could name a filter that git runs, as root, for every file it writes. The
    harness's `git apply` uses an empty repository of its own; a patch naming `.git` applies
    under no method."""
    pwned = tmp_path / "PWNED"
    tree = tmp_path / "tree"
    (tree / ".git").mkdir(parents=True)
    (tree / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tree / ".git" / "config").write_text(f'[filter "x"]\n\tsmudge = "id > {pwned}; cat"\n\tclean = cat\n'
                                          f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n')
    for folder in ("objects", "refs"):
        (tree / ".git" / folder).mkdir()
    (tree / ".gitattributes").write_text("* filter=x\n")
    (tree / "a.txt").write_text("hi\n")
    result = apply_patch(tree, diff("a.txt", "hi\n", "ho\n").encode())
    assert (result.applied, result.method) == (True, "git apply") and (tree / "a.txt").read_text() == "ho\n"
    assert not pwned.exists()
    planted = ("diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,2 @@\n"
               " [core]\n+\thooksPath = /tmp\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".git").mkdir()
    (plain / ".git" / "config").write_text("[core]\n")
    refused = apply_patch(plain, planted.encode())
    assert not refused.applied and ".git" in refused.message
    assert (plain / ".git" / "config").read_text() == "[core]\n"
