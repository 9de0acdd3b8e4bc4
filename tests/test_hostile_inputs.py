"""Hostile inputs are bounded before the harness touches them (issue 26, item 4; removal of
item 6): the harness runs as root outside every limit, so what a suite or a patch hands it
must not stall, bloat or crash it.

Each attack has its test, named after it, and a CONTROL that shows the attack working
where the defence is off (the old code path reproduced, or the check monkeypatched away):

- an entity-amplified JUnit report (8 MiB of `&e;` once became a 560 MiB test name);
- a FIFO, a device node or an oversized file in a suite package, a FIFO as a candidate's
  patch (opening a FIFO blocks: it hung a whole replay);
- a git binary patch inflating to hundreds of MiB in the work area;
- 6,000 nested folders and odd modes left in a workspace (shutil.rmtree's recursion);
- a `.git` path planted through a C-quoted name (`b/\\056git/config`) that only GNU patch decodes.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import zlib
from pathlib import Path

import pytest
from junitparser import JUnitXml, TestCase

from testprism.storage import Store
from testprism.tasks.execution import junit
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.junit import parse_junit
from testprism.tasks.model import benchmark as loader
from testprism.tasks.model import patches
from testprism.tasks.model import state as state_module
from testprism.tasks.model.benchmark import BenchmarkError, load_benchmark
from testprism.tasks.model.state import materialise, states_of
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.replay.runs import execute_batch, plan, record_plan, unrunnable_rows
from testprism.tasks.model import removal
from testprism.tasks.model.removal import RemovalError, remove_tree
from tests.benchfixture import CHECKS, make_benchmark, write

INSTANCE = "mini__median-even"


# -- the report -----------------------------------------------------------------------------

def amplified_report(size: int, entity_chars: int = 200) -> bytes:
    """A JUnit report of `size` bytes whose one test name is `&e;` references to a
    200-character entity: a factor of 67, under expat's own amplification bound (100)."""
    head = (f'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY e "{"A" * entity_chars}">]>'
            '<testsuite><testcase classname="c" name="').encode()
    tail = b'"/></testsuite>'
    return head + b"&e;" * ((size - len(head) - len(tail)) // 3) + tail


def _old_parse_name_lengths(xml: bytes) -> list[int]:
    """The parsing path before the fix (junitparser over xml.etree, entities expanded)."""
    report = JUnitXml.fromstring(xml)
    return [len(str(TestCase.fromelem(e).name)) for e in report._elem.iter("testcase")]


PEAK_RSS = """
import sys
def hwm():  # this process's own peak: ru_maxrss keeps the forking process's across exec
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
from testprism.tasks.execution.junit import parse_junit
sys.path.insert(0, {tests!r})
from test_hostile_inputs import amplified_report, _old_parse_name_lengths, _unreadable
xml = amplified_report({size})
base = hwm()
{call}
print(hwm() - base)
"""


def _peak_rss_kib(size: int, call: str) -> int:
    """The growth of a fresh harness process's peak RSS (KiB) while `call` parses the
    hostile report of `size` bytes, beyond what building the report took."""
    code = PEAK_RSS.format(tests=str(Path(__file__).parent), size=size, call=call)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def _unreadable(xml: bytes) -> bool:
    try:
        parse_junit(xml)
    except junit.ReportUnreadable:
        return True
    return False


def test_an_entity_amplified_report_is_refused_without_expanding():
    xml = amplified_report(256 * 1024)
    assert _unreadable(xml)  # the run is E/report_unreadable
    # the CONTROL: the old path expands it, a 17 MiB test name from a 256 KiB report
    assert _old_parse_name_lengths(xml)[0] > 16 * 1024 * 1024


def test_the_harness_stays_small_parsing_an_8_mib_amplified_report():
    """The Must-show figure: the growth of the harness's peak RSS while it parses the
    full-size report (8 MiB, ~560 MiB once expanded), against the old path's on the same
    report (the CONTROL; about 1 GiB on this machine)."""
    size = junit.REPORT_MAX_BYTES - 1
    grown = _peak_rss_kib(size, "assert _unreadable(xml)")
    control = _peak_rss_kib(size, "assert _old_parse_name_lengths(xml)[0] > 500 * 1024 * 1024")
    assert grown < 32 * 1024 < 512 * 1024 < control, f"peak RSS growth {grown} KiB, old path {control} KiB"


def test_report_bounds_depth_elements_and_truncation():
    deep = b"<testsuite>" + b"<x>" * (junit.MAX_DEPTH + 1) + b"</x>" * (junit.MAX_DEPTH + 1) + b"</testsuite>"
    assert _unreadable(deep)
    wide = b"<testsuite>" + b"<testcase name='t'/>" * (junit.MAX_ELEMENTS + 1) + b"</testsuite>"
    assert _unreadable(wide)
    long = f"<testsuite><testcase name='{'n' * 5000}'><failure message='{'m' * 5000}'/></testcase></testsuite>"
    (case,) = parse_junit(long.encode())
    assert (len(case.name), len(case.message), case.outcome) == (junit.NAME_CHARS, junit.MESSAGE_CHARS, "failed")
    # a plain report still reads, character references and all
    (ok,) = parse_junit(b"<testsuites><testsuite><testcase classname='a' name='t&amp;&#49;'/></testsuite></testsuites>")
    assert ok.name == "a::t&1"


def test_a_report_is_read_as_far_as_it_is_parsed(tmp_path):
    """One bound for a report's size: what the report pipe keeps of what a run writes
    (tasks/sandbox/report_pipe.py) is what the parser takes. A report of exactly the bound
    is kept whole and parsed; one byte longer is kept one byte past the bound and
    unreadable (E/report_unreadable), never kept further."""
    from testprism.tasks.sandbox.report_pipe import ReportPipe

    head, tail = b"<testsuite><testcase name='t'/>", b"</testsuite>"
    for padding, cases in ((0, 1), (1, None)):
        ws = tmp_path / f"ws{padding}"
        (ws / "out").mkdir(parents=True)
        body = head + b" " * (junit.REPORT_MAX_BYTES - len(head) - len(tail) + padding) + tail
        with ReportPipe(ws) as pipe:
            (ws / "out" / "junit.xml").write_bytes(body)
            read = pipe.collected()
        assert read == body[:junit.REPORT_MAX_BYTES + 1]
        assert (len(parse_junit(read)) if cases else _unreadable(read)) == (cases or True)


BOMB_SUITE = f"""
python - <<'EOF'
import os
head = '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY e "{'A' * 200}">]><testsuite><testcase name="'
tail = '"/></testsuite>'
size = {8 * 1024 * 1024 - 1}
with open(os.environ["TESTPRISM_JUNIT"], "w") as fh:
    fh.write(head + "&e;" * ((size - len(head) - len(tail)) // 3) + tail)
EOF
exit 0
"""


def _readable(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_an_amplified_report_from_a_real_run_is_unresolved(backend, request, tmp_path, work_root):
    """The hostile report written by a real run, read and judged by the harness: the runs
    are E/report_unreadable (not the exit status's pass), no test name is stored."""
    request.getfixturevalue("require")("docker" if backend == "docker" else "sandbox")
    root = make_benchmark(tmp_path / "b", {"bomb": {"run_tests.sh": BOMB_SUITE}})
    _readable(root)
    bench = load_benchmark(root)
    store = Store(tmp_path / "store")
    record_plan(bench, store)
    options = ExecutionOptions(backend=backend, work_root=work_root, store_root=tmp_path / "store", concurrency=2)
    execute_batch([s for s in plan(bench, options) if s.runs_in_sandbox], options)
    rows = store.scan("runs").collect()
    assert rows.height == 4 and set(rows["outcome"]) == {"E"}, rows.select("state", "outcome", "reason")
    assert set(rows["reason"]) == {"report_unreadable"}
    assert rows["tests"].list.len().sum() == 0


# -- the loader -----------------------------------------------------------------------------

def _suite_bench(tmp_path: Path) -> tuple[Path, Path]:
    root = make_benchmark(tmp_path / "b", {"hostile": {"test_m.py": CHECKS}})
    return root, root / "suites" / "hostile" / INSTANCE


def _rejected(root: Path) -> tuple[str, set]:
    """The suite's rejection and the rows its runs get (without any sandbox)."""
    bench = load_benchmark(root)
    options = ExecutionOptions(backend="local", work_root=root.parent / "work", store_root=root.parent / "store")
    rows = unrunnable_rows(plan(bench, options), options)
    return bench.suite_errors.get(("hostile", INSTANCE), ""), {(r["outcome"], r["reason"]) for r in rows}


def _blocks(action, unblock: Path) -> bool:
    """Whether `action` is still blocked after 2 s; then the FIFO `unblock` is opened for
    writing and closed, so the blocked open returns (no thread is left behind)."""
    def attempt() -> None:
        try:
            action()
        except BenchmarkError:  # once unblocked, the empty read is refused: not what is measured
            pass

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(2)
    blocked = worker.is_alive()
    if blocked:
        os.close(os.open(unblock, os.O_WRONLY))
        worker.join(10)
    return blocked


def test_a_fifo_in_a_suite_package_is_refused_without_opening_it(tmp_path, monkeypatch):
    root, folder = _suite_bench(tmp_path)
    fifo = folder / "helpers" / "pipe.py"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    error, rows = _rejected(root)
    assert str(fifo) in error and "FIFO" in error
    assert rows == {("E", "invalid_suite")}
    # the CONTROL: without the check the package loads, and reading it (its hash) blocks
    monkeypatch.setattr(loader, "_check_package", lambda folder: None)
    suite = load_benchmark(root).suites[("hostile", INSTANCE)]
    assert _blocks(lambda: suite.hash, fifo)


def test_a_device_node_in_a_suite_package_is_refused(tmp_path, monkeypatch):
    root, folder = _suite_bench(tmp_path)
    device = folder / "zero"
    os.mknod(device, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # /dev/zero: a read never ends
    error, rows = _rejected(root)
    assert str(device) in error and "character device" in error and rows == {("E", "invalid_suite")}
    monkeypatch.setattr(loader, "_check_package", lambda folder: None)  # the CONTROL: accepted
    assert "zero" in load_benchmark(root).suites[("hostile", INSTANCE)].files


def test_an_oversized_file_in_a_suite_package_is_refused(tmp_path, monkeypatch):
    root, folder = _suite_bench(tmp_path)
    big = folder / "data.bin"
    with open(big, "wb") as fh:  # sparse: its size is what counts, not its blocks
        fh.truncate(loader.SUITE_FILE_MAX_BYTES + 1)
    error, rows = _rejected(root)
    assert str(big) in error and "bound" in error and rows == {("E", "invalid_suite")}
    monkeypatch.setattr(loader, "_check_package", lambda folder: None)  # the CONTROL: accepted
    assert "data.bin" in load_benchmark(root).suites[("hostile", INSTANCE)].files


def test_a_fifo_as_a_candidates_patch_is_refused_naming_it(tmp_path, monkeypatch):
    root = make_benchmark(tmp_path / "b", {}, extra_candidates={"pipe": ("invalid", "placeholder")})
    patch = root / "instances" / INSTANCE / "candidates" / "pipe.diff"
    patch.unlink()
    os.mkfifo(patch)
    with pytest.raises(BenchmarkError, match=r"pipe\.diff: field candidates\.2\.patch: .*FIFO"):
        load_benchmark(root)
    # the CONTROL: reading it as before (read_bytes) blocks the loader
    monkeypatch.setattr(loader, "read_plain_file", lambda path, limit: path.read_bytes())
    assert _blocks(lambda: load_benchmark(root), patch)


# -- removal --------------------------------------------------------------------------------

def _nested(root: Path, depth: int) -> None:
    """`depth` nested folders under `root`, made through descriptors (the path is past
    PATH_MAX), with a file and a link to /etc every 1,000 levels."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
        if level % 1000 == 0:
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
            os.symlink("/etc", "etc", dir_fd=fd)
    os.close(fd)


def test_6000_nested_folders_are_removed_without_recursion(tmp_path):
    tree = tmp_path / "ws"
    tree.mkdir()
    _nested(tree, 6000)
    with pytest.raises(RecursionError):  # the CONTROL: the old removal
        shutil.rmtree(tree)
    remove_tree(tree)
    assert not os.path.lexists(tree) and Path("/etc/passwd").exists()


def test_6000_nested_folders_left_by_a_generation_run_are_read_without_recursion(tmp_path, monkeypatch):
    """A generation run's outputs (tasks/sandbox/outputs.py) are walked through
    nofollow.walk_tree: the deep tree is one skipped entry, not a crash of the harness."""
    from testprism.tasks.sandbox import nofollow
    from testprism.tasks.sandbox.outputs import outputs_from_folder

    original, program = tmp_path / "original", tmp_path / "program"
    for tree in (original, program):
        write(tree / "calc.py", "x = 1\n")
    write(program / "tmp" / "test_it.py", "def test_it():\n    pass\n")
    _nested(program, 6000)
    read = outputs_from_folder(program, original)
    assert "test_it.py" in read.suite_files and any(s.startswith("d/d/d") for s in read.skipped)
    monkeypatch.setattr(nofollow, "MAX_WALK_DEPTH", 10**6)  # the CONTROL: no depth bound
    with pytest.raises(RecursionError):
        outputs_from_folder(program, original)
    remove_tree(program)


UNPRIVILEGED_REMOVAL = """
import importlib.util, shutil, sys
spec = importlib.util.spec_from_file_location("removal", sys.argv[2])
removal = importlib.util.module_from_spec(spec)
sys.modules["removal"] = removal
spec.loader.exec_module(removal)
try:
    shutil.rmtree(sys.argv[1])
except OSError as exc:
    print("CONTROL", exc.errno)
removal.remove_tree(sys.argv[1])
"""


def test_odd_modes_left_by_a_run_are_removed_even_without_root(work_root):
    """Folders without read, write or search permission, a sticky read-only folder: removed
    by an unprivileged user (as root they stop nothing), the harness chmods its way through.
    The system interpreter runs removal.py itself (the venv's may not be reachable)."""
    scratch = Path(tempfile.mkdtemp(prefix="odd-modes-", dir=work_root))
    os.chmod(scratch, 0o777)
    tree = scratch / "ws"
    for sub in ("closed/inner", "sticky", "unreadable"):
        (tree / sub).mkdir(parents=True)
        (tree / sub / "file").write_text("x")
    (tree / "link").symlink_to("/etc")
    if os.geteuid() == 0:
        for path in [tree, *tree.rglob("*")]:
            os.chown(path, 65534, 65534, follow_symlinks=False)
    (tree / "closed" / "inner").chmod(0o000)
    (tree / "closed").chmod(0o500)
    (tree / "sticky").chmod(0o1555)
    (tree / "unreadable").chmod(0o100)
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    done = subprocess.run([*drop, "/usr/bin/python3", "-I", "-c", UNPRIVILEGED_REMOVAL, str(tree), removal.__file__],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "CONTROL 13" in done.stdout  # shutil.rmtree stopped at a folder it may not enter
    assert not os.path.lexists(tree)
    scratch.rmdir()


def test_removal_never_leaves_its_tree_and_fails_with_one_error(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("host file\n")
    tree = tmp_path / "ws"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "out").symlink_to(outside)
    (tree / "loose").symlink_to(outside / "keep")
    remove_tree(tree)
    assert (outside / "keep").read_text() == "host file\n" and not tree.exists()
    # a bound reached is one clear error naming the tree
    (tree / "b").mkdir(parents=True)
    for i in range(5):
        (tree / "b" / f"f{i}").write_text("x")
    monkeypatch.setattr(removal, "MAX_ENTRIES", 3)
    with pytest.raises(RemovalError, match=str(tree)):
        remove_tree(tree)


# -- patches --------------------------------------------------------------------------------

def _base85(data: bytes) -> str:
    """Data as a git binary hunk's lines: a length letter, then base85 of up to 52 bytes."""
    lines = []
    for start in range(0, len(data), 52):
        chunk = data[start:start + 52]
        letter = chr(ord("A") + len(chunk) - 1) if len(chunk) <= 26 else chr(ord("a") + len(chunk) - 27)
        lines.append(letter + base64.b85encode(chunk, pad=True).decode())
    return "\n".join(lines) + "\n"


def binary_bomb(name: str, size: int) -> bytes:
    """A git binary patch adding `name`, `size` zero bytes: a few hundred KiB of patch."""
    content = b"\0" * size
    blob = hashlib.sha1(b"blob %d\0" % size + content).hexdigest()
    return (f"diff --git a/{name} b/{name}\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..{blob}\n"
            f"GIT binary patch\nliteral {size}\n{_base85(zlib.compress(content, 9))}\n"
            f"literal 0\n{_base85(zlib.compress(b''))}\n").encode()


def _state_tree(tmp_path: Path, work_root: Path, patch: bytes) -> tuple[object, Path]:
    """The candidate `hostile` (this patch) materialised in a work area of its own."""
    root = make_benchmark(tmp_path / "b", {}, extra_candidates={"hostile": ("invalid", patch.decode())})
    instance = load_benchmark(root).instances[INSTANCE]
    state = next(s for s in states_of(instance) if s.candidate_id == "hostile")
    built = materialise(instance, state, WorkPaths(Path(tempfile.mkdtemp(dir=work_root))), fuzz=5)
    return built, built.tree


def _largest_file(tree: Path) -> int:
    return max((p.lstat().st_size for p in tree.rglob("*") if p.is_file()), default=0)


BOMB_BYTES = 96 * 1024 * 1024


def test_a_binary_patch_bomb_is_refused_before_it_writes(tmp_path, work_root, monkeypatch):
    patch = binary_bomb("blob.bin", BOMB_BYTES)
    assert len(patch) < 1024 * 1024
    built, tree = _state_tree(tmp_path, work_root, patch)
    assert not built.patch.applied and "binary hunks would write" in built.patch.message
    assert not tree.exists()  # a failed state's tree goes whole
    # the second bound alone (the declared sizes not checked): git dies at RLIMIT_FSIZE
    monkeypatch.setattr(patches, "binary_output_bytes", lambda patch: 0)
    built, tree = _state_tree(tmp_path / "fsize", work_root, patch)
    assert not built.patch.applied and not tree.exists()
    # the CONTROL: neither bound, and the 96 MiB file lands in the state's tree
    monkeypatch.setattr(state_module, "PATCH_OUTPUT_MAX_BYTES", 1 << 40)
    built, tree = _state_tree(tmp_path / "control", work_root, patch)
    assert built.patch.applied and (tree / "blob.bin").stat().st_size == BOMB_BYTES


QUOTED_GIT = (
    'diff --git "a/\\056git/config" "b/\\056git/config"\nnew file mode 100644\n--- /dev/null\n'
    '+++ "b/\\056git/config"\n@@ -0,0 +1,2 @@\n+[core]\n+\tfsmonitor = touch /tmp/pwned\n'
)


def test_a_git_folder_planted_through_a_c_quoted_name_is_refused(tmp_path, work_root, monkeypatch):
    assert not (set(patches.touched_files(patches.parse(QUOTED_GIT))) & {".git/config", "b/.git/config"})
    built, tree = _state_tree(tmp_path, work_root, QUOTED_GIT.encode())
    assert not built.patch.applied and ".git" in built.patch.message and not tree.exists()
    # each later line of defence holds alone: GNU patch's dry run names .git/config ...
    monkeypatch.setattr(state_module, "_refusal", lambda patch: None)
    built, tree = _state_tree(tmp_path / "dry", work_root, QUOTED_GIT.encode())
    assert not built.patch.applied and "'.git/config'" in built.patch.message
    # ... and the tree is checked after applying
    monkeypatch.setattr(state_module, "_unsafe_checked", lambda output: [])
    built, tree = _state_tree(tmp_path / "after", work_root, QUOTED_GIT.encode())
    assert not built.patch.applied and "wrote under a .git folder" in built.patch.message and not tree.exists()
    # the CONTROL: every check off, GNU patch writes .git/config into the state's tree
    monkeypatch.setattr(state_module, "_git_entries", lambda tree: {})
    built, tree = _state_tree(tmp_path / "control", work_root, QUOTED_GIT.encode())
    assert built.patch.applied and "fsmonitor" in (tree / ".git" / "config").read_text()


def test_c_quoted_headers_are_read_as_the_tools_read_them():
    patch = (b'diff --git "a/x" "b/y"\nrename from "a\\056\\056/up"\nrename to \\056git\n'
             b'--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n--- ../not-a-header\n+--- /etc/not-either\n ctx\n'
             b'Index: "sub/\\056GIT/hooks/pre-commit"\n')
    names = patches.header_paths(patch)
    assert {"a../up", "sub/.GIT/hooks/pre-commit", "a/f", "b/f"} <= names
    assert not any("not-a-header" in n or "not-either" in n for n in names)
    assert patches.unsafe_path("sub/.GIT/hooks/pre-commit") and not patches.unsafe_path("a../up")


def test_a_failed_apply_leaves_no_link_behind(tmp_path, work_root, monkeypatch):
    """A patch that GNU patch applies (a link `escape -> /etc`, and `.git/config`) and that
    the check after applying then refuses: the failed tree goes whole, link and all."""
    link = ("diff --git a/escape b/escape\nnew file mode 120000\n--- /dev/null\n+++ b/escape\n@@ -0,0 +1 @@\n"
            "+/etc\n\\ No newline at end of file\n")
    monkeypatch.setattr(state_module, "_refusal", lambda patch: None)
    monkeypatch.setattr(state_module, "_unsafe_checked", lambda output: [])
    built, tree = _state_tree(tmp_path, work_root, (link + QUOTED_GIT).encode())
    assert not built.patch.applied and not os.path.lexists(tree / "escape") and not tree.exists()
    # the CONTROL: without the removal, the refused tree keeps the link
    monkeypatch.setattr(state_module, "remove_tree", lambda path: None)
    built, tree = _state_tree(tmp_path / "control", work_root, (link + QUOTED_GIT).encode())
    assert not built.patch.applied and os.readlink(tree / "escape") == "/etc"
