"""Benchmark: what a sandbox costs per run, next to the bare command and to SWE-bench.

One suite on one state, run many times: in each round every mode runs a block of runs back
to back (as a replay worker does), modes one after another, so drift in the machine's load
hits every mode alike; overheads are paired by round. Each run is timed as its caller sees
it:

- `bare`: the suite's command with `bash -c` in a prepared copy of the state, same venv as
  `local`, no sandbox, no copy: the floor.
- `floor` (only when asked for): `bare` inside the least a per-run namespace sandbox is
  (FLOOR_ARGV: bubblewrap's namespaces over the host's root, nothing else): what any
  isolation that gives each run namespaces of its own costs at least, against which the
  `local` target (10% of bare + 5 ms; issue 29 asked for 5%) can be read.
- `local`: LocalBackend.run (fresh workspace copy, bubblewrap, rlimits, JUnit read back).
- `docker`: DockerBackend.run, the default: a fresh container per run, made for it:
  create, start, wait, remove all on the run's path.
- `docker-ahead`: the same with the opt-in start ahead (`prewarm=True`): the next run's
  container started while the previous one executes (bind mode). Until 2026-12-03 this was
  the default and `docker-cold` named the other; docs/performance.md's older entries use those names.
- `docker-reused`: DockerBackend fast mode (one container kept, workspace reset).
- `local-tmpfs`, `docker-tmpfs` (only when asked for): `local` and `docker` with their run
  workspaces in /dev/shm (WorkPaths.runs_root, `$TESTPRISM_WORKSPACES`): the per-run copy
  of the state's tree made in memory instead of on disk.
- `local-copy`, `docker-copy`, `local-tree`, `docker-tree` (only when asked for): `local` and
  `docker` with every run's program a copy of the state's tree (`TESTPRISM_LAYERED=0`, the
  default before the image layer, and its fallback) or the state's tree itself shared under
  a writable layer of the run's own (`TESTPRISM_LAYERED=tree`, the old opt-in layer), side
  by side with the default (the state's image under that layer; tasks/sandbox/layer.py).
- `local-warm` (only when asked for): `local` with every run forked from its state's warm
  process (`replay --warm`, tasks/sandbox/warm.py): the interpreter, pytest and the program
  imported once per state, not once per run. Python suites only (others run cold there).
- `local-unbounded` (only when asked for): `local` without the run's cgroup and without
  the bounded workspace (`$TESTPRISM_RUN_CGROUP=0`, `$TESTPRISM_BOUNDED_WORKSPACE=0`): what
  the per-run bounds cost, side by side (`--against` the revision before them is the other
  way to see it).
- `local-image`, `docker-image` (an image instance's, `--swebench-image`): the instance's own
  route, `local` on the image's exported root filesystem under bubblewrap and `docker` on the
  image itself (tasks/sandbox/image/), side by side with `bare`, `local` and `docker` on the
  same state's tree through the venv route (a host folder program, the tree read out of the
  image, in an environment of the image's Python and packages, VENV_ROUTE).
- `docker-1cpu` (only when asked for): `docker` with a CPU quota of 1 CPU (the default is
  every core, as `bare` and `local` have; TESTPRISM_DOCKER_CPUS sets one): what a quota
  costs a suite (a multi-threaded toolchain, Go's, is throttled by it where a one-threaded
  pytest is not).
- `swebench`: the SWE-bench harness's per-prediction steps (swebench/harness/
  run_evaluation.py run_instance): `containers.create` of an instance image (environment
  image + the program committed in /testbed) with `tail -f /dev/null`, start, copy the
  patch in (tar, `mkdir -p`, put_archive), `git apply --verbose`, the `*.orig` check,
  `git diff`, copy `eval.sh` in, run it with exec (it applies the test patch and runs the
  tests), `git diff` again, then cleanup. Cleanup as shipped is `container.stop(timeout=15)`
  then `remove(force=True)`; `tail` as PID 1 ignores SIGTERM, so stop waits the whole 15 s.
  That costs 15 s per prediction by itself, so two baselines are reported:
  `swebench-lean` (the same steps, cleanup = `remove(force=True)` only) every round, and
  `swebench-shipped` (with the stop) in `--shipped-rounds` rounds.

Prints a table (median, p10, p90 per run; overhead = median − bare median; ratios) and the
targets: local overhead ≤ 10% of bare + 5 ms, docker overhead ≤ 0.3 s.

`--against REV` adds `local@REV` and `docker@REV`: the same modes of another git revision,
imported beside this one in the same process and interleaved with them round by round, so
a change's cost is measured side by side (its table row's overhead is against the same
`bare`).

`--command CMD` runs CMD in place of the suite's entry in every mode (`true`: what the
sandbox itself costs, without a test run's spread, which on a loaded machine hides a few
milliseconds).

`--swebench-image ID` measures an image instance: the SWE-bench row ID of
tests/data/realdata imported as an image instance (`import swebench --route image`) on its image in
SWE-bench's layout (tests/swebench_image.py: built once, kept on the engine), bound as a
flow binds it (`bind_images`), with a suite of its own running a real test file of the
program (`--image-tests`). Its modes default to bare,local,docker,local-image,docker-image;
the log gives each image mode against its venv-route twin, paired by round.

`--instance` given several times measures several instances side by side, in the same
rounds (each round runs every instance's modes, one after another): each instance has its
own `bare`, and its overheads are against it. Then a last table compares the languages:
each instance's local and docker overhead and its ratio to the (first) Python instance's
(target for Go and JavaScript: docker ≤ 1.10 × Python's). With several instances the modes
default to bare,local,docker.

The state (the reference) is materialised and built through the real path
(tasks/execution/build.py `state_tree`, an `Environments` over each backend): an instance
with a `[build]` step is built once per state and backend per work area (`--work`; 0 builds
on a rerun with the same one), each backend with its own toolchain, and every local and
docker run starts from the tree its backend built (`bare` from local's); the bench prints
both counts. A run gets the environment's `variables` as `Environments.run` sets
them. For a non-Python environment `bare`'s PATH has no venv; its variables are the
instance's with the sandbox's `/workspace` read as the bare copy's folder. A built state's
`bare` copy is the built tree with the build step run again in the copy (untimed: a Go
build cache is keyed by the package's folder, and the sandbox's runs see the tree at
/workspace/program), and the copy is restored, untimed, before each of its runs, so that
every bare run, like every sandboxed one, starts from the state as built (not from a cache
that holds the suite's own package compiled by the previous run).

Run: `python bench/replay_overhead.py [--rounds 10 --block 5] [--benchmark examples --instance ID
[--instance ID ...] --configuration strong] [--concurrency-sweep] [--against REV]` as root with a
Docker engine (.ci/start-dockerd) and bubblewrap. Default suite: the bundled benchmark's
`calkit__merge-touching` / `strong` on the reference (a small pytest suite), else a
built-in one-file program.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import io
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from testprism.tasks.execution.batch import Environments
from testprism.tasks.execution.build import BUILD_RECORD, state_tree
from testprism.tasks.model.benchmark import Benchmark, load_benchmark
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.sandbox.base import Limits, RunRequest
from testprism.tasks.sandbox.docker.backend import DockerBackend
from testprism.tasks.sandbox.docker.engine import api_client
from testprism.tasks.sandbox import cgroup, layer
from testprism.tasks.sandbox.docker.environment_image import environment_tag
from testprism.tasks.sandbox.image.binding import bind_images
from testprism.tasks.sandbox.local import LocalBackend
from testprism.tasks.sandbox.workspace import BOUNDED_SETTING, fill_workspace
from testprism.tasks.model.state import apply_patch, states_of
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.importing.image_route import ImageRoute, import_image_rows
from testprism.tasks.importing.image_specs import ImageSpecs

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests/ is not installed: the image instance's pieces live there
    sys.path.insert(0, str(ROOT))
from tests.swebench_image import PACKAGES, build_swebench_image  # noqa: E402

log = logging.getLogger("bench.replay_overhead")
console = Console(width=max(220, Console().width))

LOCAL_TARGET_RATIO, LOCAL_TARGET_MS = 0.10, 5.0
DOCKER_TARGET_S = 0.3

TINY_PROGRAM = "def add(a, b):\n    return a + b\n"
TINY_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TINY_RUN = 'exec python -m pytest -q -p no:cacheprovider tmp --junitxml="$TESTPRISM_JUNIT"\n'

#: the SWE-bench rows `--swebench-image` reads, and the configuration its suite is written under
REAL_ROWS = ROOT / "tests" / "data" / "realdata" / "swebench_lite_sympy_dev.jsonl"
IMAGE_CONFIGURATION = "image-bench"
#: an image instance's program through today's route: a host venv of the image's Python and
#: packages (tests/swebench_image.py installs these in the image's /opt/miniconda3/envs/testbed)
VENV_ROUTE = EnvironmentSpec(python="3.11", packages=list(PACKAGES))
#: the modes of an image instance's own route
IMAGE_MODES = {"local-image": "local", "docker-image": "docker"}


@dataclass
class Subject:
    """What every mode runs: a state tree, a suite and its entry, the reference patch."""

    tree: Path
    suite_folder: Path
    suite_files: tuple[str, ...]
    command: str
    patch: bytes
    program: Path
    environment: EnvironmentSpec
    label: str
    id: str = "tiny"
    language: str = "python"
    build: str | None = None  #: the instance's build step, which `tree` is the output of
    suite_patch: bytes | None = None  #: the suite's test patch (an imported suite's), applied in every run
    image: EnvironmentSpec | None = None  #: an image instance's own environment; `environment` is its venv route
    #: the state's tree as each backend's runs start from it, by backend name: a built state is
    #: built per backend (tasks/execution/build.py), an unbuilt one is `tree` for all; `tree` is
    #: local's, with the host's toolchains, as `bare` has them
    trees: dict[str, Path] = dataclasses.field(default_factory=dict)


def tiny_subject(scratch: Path) -> Subject:
    program, suite_dir = scratch / "tiny-program", scratch / "tiny-suite"
    program.mkdir()
    suite_dir.mkdir()
    (program / "calc.py").write_text(TINY_PROGRAM)
    (suite_dir / "test_calc.py").write_text(TINY_TEST)
    (suite_dir / "run_tests.sh").write_text(TINY_RUN)
    return Subject(program, suite_dir, ("run_tests.sh", "test_calc.py"), "bash tmp/run_tests.sh", b"", program,
                   EnvironmentSpec(), "built-in tiny program")


def subject(bench: Benchmark, instance_id: str, configuration: str, work: WorkPaths,
            environments: list[Environments], venv_route: EnvironmentSpec | None = None) -> Subject:
    """The reference state of `instance_id`, materialised and built (when it has a build
    step) through `state_tree`, over each of `environments` in turn: each backend builds a
    tree of its own, with its own toolchain (the image's under docker, the host's under
    local), and finds it built in the work area on a rerun. An image instance (bound) keeps
    its image as `image` and runs `venv_route` as its `environment` in the other modes."""
    instance = bench.instances[instance_id]
    image = instance.spec.environment if instance.spec.environment.image is not None else None
    if image is not None and venv_route is None:
        raise RuntimeError(f"{instance_id}: an image instance needs a venv route for its other modes "
                           "(--swebench-image gives one)")
    suite = bench.suites[(configuration, instance_id)]
    state = next(s for s in states_of(instance) if s.kind == "reference")
    trees = {}
    for environments_of in environments:
        tree = state_tree(instance, state, environments_of, work, Limits())
        if not hasattr(tree, "tree") or not tree.patch.applied:
            raise RuntimeError(f"{instance_id}: the reference has no tree over {environments_of.backend.name}: {tree}")
        trees[environments_of.backend.name] = tree.tree
    build = instance.spec.build.command if instance.spec.build is not None else None
    return Subject(trees.get("local", next(iter(trees.values()))), suite.folder, suite.files, suite.entry,
                   instance.reference, instance.program, venv_route if image is not None else instance.spec.environment,
                   f"{instance.id} / {configuration} / reference", instance.id, instance.spec.language, build,
                   suite.patch, image, trees)


def swebench_image_benchmark(instance_id: str, tests: str, root: Path) -> Path:
    """A benchmark under `root` holding the SWE-bench row `instance_id` (REAL_ROWS) as an
    image instance on its image in SWE-bench's layout (built here once, then found on the
    engine), and a suite of configuration IMAGE_CONFIGURATION running `tests` (paths of the
    program's own test files) with pytest and JUnit."""
    image_id, seconds = build_swebench_image(instance_id=instance_id)
    log.info("%s: image %s (%s)", instance_id, image_id[:19], f"built in {seconds:.0f} s" if seconds else "on the engine")
    rows = [line for line in REAL_ROWS.read_text().splitlines() if f'"instance_id": "{instance_id}"' in line]
    if not rows:
        raise RuntimeError(f"{REAL_ROWS}: no row of {instance_id}")
    bench = root / "image-bench"
    picked = root / "rows.jsonl"
    picked.write_text(rows[0] + "\n")
    report = import_image_rows(picked, bench, ImageRoute(ImageSpecs.load()))  # `import swebench --route image`
    if report.issues:
        raise RuntimeError(f"{REAL_ROWS}: {instance_id} does not import: {report.issues}")
    suite = bench / "suites" / IMAGE_CONFIGURATION / instance_id
    suite.mkdir(parents=True)
    (suite / "run_tests.sh").write_text(f'exec python -m pytest -q -p no:cacheprovider {tests} '
                                        '--junitxml="$TESTPRISM_JUNIT"\n')
    return bench


# -- the modes ---------------------------------------------------------------------------------


def bare_environment(subj: Subject, venv: Path, ws: Path) -> dict[str, str]:
    """What `bare` runs with: the local backend's variables, the venv's bin first on PATH
    only for a Python environment, and the environment's variables with the sandbox's
    /workspace read as `ws`."""
    # the environment's bin/ first, as a run's PATH has it: a virtualenv's, or the links to
    # host toolchains outside the system folders (Go at /usr/local/go/bin) and Maven's wrapper
    path = f"{venv / 'bin'}:" if (venv / "bin").is_dir() else ""
    env = {"PATH": f"{path}/usr/local/bin:/usr/bin:/bin", "HOME": str(ws), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "TESTPRISM_JUNIT": str(ws / "out" / "junit.xml")}
    for name, value in subj.environment.variables:
        env[name] = str(ws) + value[len("/workspace"):] if value.startswith("/workspace") else value
    return env


#: `floor`: the bare command inside the least a per-run namespace sandbox is: bubblewrap's
#: new namespaces (user, pid, network, ipc, uts, cgroup, mount) over the host's root as it
#: is, no workspace, cgroup, layer, limits or uid of the run's own
FLOOR_ARGV = ("bwrap", "--dev-bind", "/", "/", "--unshare-all", "--die-with-parent")


def bare_runner(subj: Subject, venv: Path, scratch: Path, name: str = "bare",
                wrap: tuple[str, ...] = ()) -> Callable[[], int]:
    """The bare command in a prepared copy of the state, under `wrap` (argv before it: the
    `floor` mode's bubblewrap) when given."""
    ws = scratch / (("bare" if subj.id == "tiny" else f"bare-{subj.id}") + ("-floor" if wrap else ""))
    program = ws / "program"
    ws.mkdir()
    env = bare_environment(subj, venv, ws)
    shutil.copytree(subj.tree, program, symlinks=True)
    if subj.build is not None:  # the build step again, for this copy's own folder (module docstring)
        for cache in program.rglob("CMakeCache.txt"):  # CMake's cache names the folder it was made in
            cache.unlink()
        start = time.perf_counter()
        done = subprocess.run(["bash", "-c", subj.build], cwd=program, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{subj.id}: the build step failed in the bare copy: {done.stderr[-2000:]}")
        log.info("%s: bare copy built for its own folder in %.1f s (untimed)", subj.id, time.perf_counter() - start)
    for rel in subj.suite_files:
        dest = program / "tmp" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(subj.suite_folder / rel, dest)
    if subj.suite_patch is not None:  # once, untimed: a sandboxed run applies it in its fill
        applied = apply_patch(program, subj.suite_patch)
        if not applied.applied:
            raise RuntimeError(f"{subj.id}: the suite's test patch does not apply to the bare copy: {applied.message}")
    (ws / "out").mkdir()

    def run() -> int:
        done = subprocess.run([*wrap, "bash", "-c", subj.command], cwd=program, env=env, text=True, errors="replace",
                              stdout=subprocess.PIPE if INNER_MARK in subj.command else subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        note_inner(name, done.stdout or "")
        return done.returncode

    if subj.build is not None:
        pristine = ws / "pristine"
        shutil.copytree(program, pristine, symlinks=True)

        def restore() -> None:
            shutil.rmtree(program)
            shutil.copytree(pristine, program, symlinks=True)

        run.before = restore  # type: ignore[attr-defined]  # untimed, before each run (measure)
    return run


#: runs per runner name whose request's tree was a built tree of the work area (its build record beside it)
FROM_BUILT: dict[str, int] = {}

#: `--inner`: each runner's command timed where it runs (inside the sandbox), seconds, in
#: the order of `measure`'s timed runs: splits a mode's overhead into what the sandbox costs
#: around the command and what the command itself takes longer there (another toolchain:
#: the image's JVM or cargo, not the host's)
INNER: dict[str, list[float]] = {}
INNER_MARK = "@@testprism-bench-inner "


def timed_inside(command: str) -> str:
    """`command` wrapped to print its own wall time as measured where it runs (--inner)."""
    return (f"__t0=$(date +%s%N); (\n{command}\n); __rc=$?; "
            f'echo; echo "{INNER_MARK}$(( $(date +%s%N) - __t0 ))"; exit $__rc')  # on a line of its own


def note_inner(name: str, output: str) -> None:
    """Keep the time `timed_inside` printed in a run's output, if it did."""
    found = [line for line in output.splitlines() if line.startswith(INNER_MARK)]
    if found:
        INNER.setdefault(name, []).append(int(found[-1][len(INNER_MARK):]) / 1e9)


def report_inner(times: dict[str, list[float]]) -> None:
    """Per runner: the command's median time inside, and the median of (as the caller saw
    the run − inside) = what the mode costs around the command."""
    for name, inside in INNER.items():
        outer = times.get(name, [])
        if len(outer) != len(inside):
            log.warning("%s: %d runs timed, %d timed inside: not paired", name, len(outer), len(inside))
            continue
        log.info("inner %-34s command inside %.3f s; around it %+.0f ms (median of run − inside)", name,
                 statistics.median(inside), 1000 * statistics.median(o - i for o, i in zip(outer, inside, strict=True)))


def backend_runner(backend, subj: Subject, environment: Path, request_type: type = RunRequest,
                   limits_type: type = Limits, name: str = "", warm: bool = False) -> Callable[[], int]:
    """`backend.run` on the subject, with the environment's variables as `Environments.run`
    sets them; the request and limits types are those of the backend's own code (another
    revision's, for `--against`)."""
    variables = {"env": dict(subj.environment.variables)} if subj.environment.variables else {}
    if subj.suite_patch is not None:
        variables["suite_patch"] = subj.suite_patch
    if warm:  # cloned from the state's frozen warm process (tasks/sandbox/warm.py); absent from older revisions
        variables["warm"] = True
    # the tree this backend built (another revision's backend runs the tree of its namesake here)
    tree = subj.trees.get(backend.name, subj.tree)
    request = request_type(tree=tree, suite_folder=subj.suite_folder, suite_files=subj.suite_files,
                           command=subj.command, environment=environment, limits=limits_type(timeout_s=300.0),
                           **variables)
    built = (tree.parent / BUILD_RECORD).is_file()

    def run() -> int:
        result = backend.run(request)
        note_inner(name, result.output_tail)
        if built:
            FROM_BUILT[name] = FROM_BUILT.get(name, 0) + 1
        return result.exit_code if result.exit_code is not None else -1

    return run


def _tar(files: dict[str, bytes], mode: int = 0o644) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, time.time()
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def instance_image(subj: Subject, env_tag: str) -> str:
    """SWE-bench's instance image: the environment image plus the buggy program committed
    as a git repository in /testbed (built once)."""
    api = api_client()
    tag = f"testprism-bench-instance:{env_tag.rsplit(':', 1)[1][:12]}"
    try:
        api.inspect_image(tag)
        return tag
    except Exception:  # noqa: BLE001 - missing: build it
        pass
    container = api.create_container(env_tag, command=["sleep", "infinity"], labels={"testprism": "1"})["Id"]
    try:
        api.start(container)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(str(subj.program), arcname="testbed")
        api.put_archive(container, "/", buffer.getvalue())
        script = ("cd /testbed && git init -q && git add -A && git -c user.name=b -c user.email=b@b "
                  "commit -qm base && git config --global --add safe.directory /testbed")
        exec_id = api.exec_create(container, ["bash", "-c", script])["Id"]
        api.exec_start(exec_id)
        if api.exec_inspect(exec_id)["ExitCode"] != 0:
            raise RuntimeError("could not build the SWE-bench-style instance image")
        api.commit(container, repository=tag.split(":")[0], tag=tag.split(":")[1],
                   conf={"Labels": {"testprism": "1", "testprism.kind": "bench"}, "Cmd": ["bash"]})
    finally:
        api.remove_container(container, force=True)
    return tag


def swebench_runner(subj: Subject, image: str, venv: str, scratch: Path, shipped: bool) -> Callable[[], int]:
    """The per-prediction steps of swebench.harness.run_evaluation.run_instance."""
    import docker

    client = docker.from_env()
    test_patch = "".join(
        f"diff --git a/tmp/{rel} b/tmp/{rel}\nnew file mode 100644\n--- /dev/null\n+++ b/tmp/{rel}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)
        for rel in subj.suite_files
        for lines in [(subj.suite_folder / rel).read_text().splitlines()]
    )
    eval_script = (
        f"#!/bin/bash\nset -uxo pipefail\nexport PATH={venv}/bin:$PATH TESTPRISM_JUNIT=/tmp/junit.xml\n"
        "cd /testbed\ngit config --global --add safe.directory /testbed\ngit status\ngit show --stat\n"
        "git -c core.fileMode=false diff HEAD\n"
        f"git apply -v - <<'EOF_114329324912'\n{test_patch}EOF_114329324912\n"
        f": '>>>>> Start Test Output'\n{subj.command}\n: '>>>>> End Test Output'\n"
    )
    patch_file = scratch / "patch.diff"
    patch_file.write_bytes(subj.patch)
    eval_file = scratch / "eval.sh"
    eval_file.write_text(eval_script)

    def copy_to_container(container, src: Path, dst: str) -> None:
        data = _tar({os.path.basename(dst): src.read_bytes()})
        container.exec_run(f"mkdir -p {os.path.dirname(dst)}")
        container.put_archive(os.path.dirname(dst), data)

    def run() -> int:
        container = client.containers.create(image=image, user="root", detach=True, command="tail -f /dev/null",
                                              labels={"testprism": "1", "testprism.bench": "1"})
        try:
            container.start()
            if subj.patch:
                copy_to_container(container, patch_file, "/tmp/patch.diff")
                applied = container.exec_run("git apply --verbose /tmp/patch.diff", workdir="/testbed", user="root")
                if applied.exit_code != 0:
                    return -2
                container.exec_run("find /testbed -name '*.orig' -type f | head -1", workdir="/testbed", user="root")
            container.exec_run("git -c core.fileMode=false diff", workdir="/testbed")
            copy_to_container(container, eval_file, "/eval.sh")
            exec_id = client.api.exec_create(container.id, "/bin/bash /eval.sh")["Id"]
            for _chunk in client.api.exec_start(exec_id, stream=True):
                pass
            code = client.api.exec_inspect(exec_id)["ExitCode"]
            container.exec_run("git -c core.fileMode=false diff", workdir="/testbed")
            return code
        finally:
            if shipped:
                container.stop(timeout=15)
            container.remove(force=True)

    return run


# -- measuring ---------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def revision_package(revision: str, scratch: Path) -> ModuleType:
    """Another revision's `testprism` importable beside this one, as `testprism_at_rev`:
    its tasks/ and storage/ from `git archive`, imports rewritten. Both backends then run
    in this one process, interleaved round by round, so the machine's drifting load hits
    them alike (two processes one after the other would not compare)."""
    root = scratch / "against"
    package = root / "testprism_at_rev"
    package.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "testprism", "tasks", "storage"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root / "src")  # our own repository's archive (Python 3.11.2 has no filter=)
    for folder in ("tasks", "storage"):
        shutil.copytree(root / "src" / folder, package / folder)
    shutil.copy(root / "src" / "testprism" / "__init__.py", package / "__init__.py")
    for path in package.rglob("*.py"):
        path.write_text(path.read_text().replace("testprism.", "testprism_at_rev."))
    sys.path.insert(0, str(root))
    return importlib.import_module("testprism_at_rev")


def revision_classes(revision: str, scratch: Path) -> dict[str, type]:
    """The classes the bench needs from the revision `revision_package` imported, wherever
    that revision's layout keeps them: the backends from its own entry points, the records
    from the module that defines them."""
    root = scratch / "against" / "testprism_at_rev"
    pyproject = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:pyproject.toml"], check=True,
                               capture_output=True, text=True).stdout
    points = tomllib.loads(pyproject)["project"]["entry-points"]["testprism.sandboxes"]
    found: dict[str, type] = {}
    for name, target in points.items():
        module, _, cls = target.partition(":")
        found[name] = getattr(importlib.import_module(module.replace("testprism.", "testprism_at_rev.", 1)), cls)
    for cls in ("WorkPaths", "EnvironmentSpec", "RunRequest", "Limits"):
        path = next(p for p in sorted(root.rglob("*.py")) if f"\nclass {cls}(" in p.read_text()
                    or f"\nclass {cls}:" in p.read_text())
        module = ".".join(["testprism_at_rev", *path.relative_to(root).with_suffix("").parts])
        found[cls] = getattr(importlib.import_module(module), cls)
    return found


def measure(runners: dict[str, Callable[[], int]], rounds: int, block: int,
            only_some: dict[str, int]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Every round runs each mode `block` times back to back (as a replay worker does),
    modes one after another. Returns every run's time, and each round's median per mode."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    per_round: dict[str, list[float]] = {name: [] for name in runners}
    for name, run in runners.items():  # warm-up: caches, images, imports
        if getattr(run, "before", None) is not None:
            run.before()  # type: ignore[attr-defined]
        code = run()
        log.info("warm-up %-16s exit %s", name, code)
    INNER.clear()  # the timed runs' only, in their order
    for k in range(rounds):
        for name, run in runners.items():
            if name in only_some and k >= only_some[name]:
                continue
            these = []
            before = getattr(run, "before", None)  # untimed preparation of each run (bare_runner)
            for _ in range(1 if name in only_some else block):
                if before is not None:
                    before()
                start = time.perf_counter()
                run()
                these.append(time.perf_counter() - start)
            times[name] += these
            per_round[name].append(statistics.median(these))
        log.info("round %d/%d done", k + 1, rounds)
    return times, per_round


def paired_overhead(per_round: dict[str, list[float]], name: str) -> float:
    """Median over rounds of (this mode − bare in the same round): robust to the load
    drifting during the benchmark, which shifts both alike."""
    return statistics.median(t - b for t, b in zip(per_round[name], per_round["bare"], strict=False))


def report(times: dict[str, list[float]], per_round: dict[str, list[float]], title: str = "") -> None:
    bare = statistics.median(times["bare"])
    peer = paired_overhead(per_round, "swebench-lean") if "swebench-lean" in times else None
    table = Table(title="per-run wall time (s), as the caller sees it" + (f": {title}" if title else ""))
    for column in ("mode", "runs", "median", "p10", "p90", "min", "overhead", "min − bare min", "× bare", "÷ peer"):
        table.add_column(column, justify="left" if column == "mode" else "right", no_wrap=True)
    for name, values in times.items():
        med = statistics.median(values)
        over = paired_overhead(per_round, name)
        table.add_row(
            name, str(len(values)), f"{med:.3f}", f"{percentile(values, 0.1):.3f}", f"{percentile(values, 0.9):.3f}",
            f"{min(values):.3f}",
            "—" if name == "bare" else f"{over * 1000:+.0f} ms",
            "—" if name == "bare" else f"{(min(values) - min(times['bare'])) * 1000:+.0f} ms",
            f"{med / bare:.2f}", "—" if name == "bare" or not peer else f"{over / peer:.2f}",
        )
    console.print(table)
    console.print("overhead = median over rounds of (mode − bare, same round); ÷ peer = overhead ÷ "
                  "swebench-lean's overhead")
    for name in ("local", "local-image"):
        if name in times:
            local = paired_overhead(per_round, name)
            budget = LOCAL_TARGET_RATIO * bare + LOCAL_TARGET_MS / 1000
            verdict = "met" if local <= budget else f"MISSED by {1000 * (local - budget):.0f} ms"
            log.info("%s%s overhead %.0f ms vs target %.0f ms (10%% of bare + 5 ms): %s", f"{title}: " if title else "",
                     name, 1000 * local, 1000 * budget, verdict)
    twins = [(n.split("@", 1)[0], n) for n in times if "@" in n]
    twins += [(n, IMAGE_MODES[n]) for n in times if n in IMAGE_MODES]
    for now, name in twins:
        if now in times and name in times:
            change = paired_overhead(per_round, now) - paired_overhead(per_round, name)
            change_ratio = statistics.median(t / o for t, o in zip(per_round[now], per_round[name], strict=False))
            log.info("%s against %s: overhead %+.1f ms per run; run time × %.3f (median of per-round ratios)",
                     now, name, 1000 * change, change_ratio)
    for name in ("docker", "docker-ahead", "docker-reused", "docker-image"):
        if name in times:
            over = paired_overhead(per_round, name)
            verdict = "met" if over <= DOCKER_TARGET_S else f"MISSED by {1000 * (over - DOCKER_TARGET_S):.0f} ms"
            log.info("%s%s overhead %.0f ms vs target 300 ms: %s", f"{title}: " if title else "", name, 1000 * over, verdict)


def tree_size(tree: Path) -> tuple[int, int]:
    """Files (links included) and bytes of a tree, as a run's copy of it holds them."""
    files = size = 0
    for dirpath, _dirnames, filenames in os.walk(tree):
        for name in filenames:
            files += 1
            size += os.lstat(os.path.join(dirpath, name)).st_size
    return files, size


def fill_cost(subj: Subject, environment: Path, scratch: Path, program: str, runs: int = 15) -> float:
    """Median time of `fill_workspace` and removing the workspace again (the state's tree as
    `program` gives it, FILL_WAYS: a copy, a layer over the tree or over its image, plus the
    suite; the owner and times handed over), which local and docker (bind mode) runs both
    pay; measured after the rounds, alone (an image's one-off build before them)."""
    request = RunRequest(tree=subj.tree, suite_folder=subj.suite_folder, suite_files=subj.suite_files,
                         command=subj.command, environment=environment, limits=Limits(), suite_patch=subj.suite_patch)
    times = []
    for k in range(runs):
        ws = scratch / f"fill-{subj.id}-{k}"
        ws.mkdir()
        start = time.perf_counter()
        with_settings(functools.partial(fill_workspace, request, ws, 261_000, layered=True, bounded=True),
                      {layer.SETTING: FILL_WAYS[program]})()
        layer.discard(ws)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def with_settings(run: Callable[[], int], settings: dict[str, str]) -> Callable[[], int]:
    """`run` with environment `settings` for its duration (modes run one at a time)."""
    def switched() -> int:
        before = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            return run()
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return switched


#: how a fill gives a run the state's tree (fill_cost): the setting of each layer.mode
FILL_WAYS = {"copy": "0", "tree": "tree", "image": "image"}

#: per mode, the settings it runs under: a copy or the old layer over the tree instead of the
#: default image layer, or a run's cgroup and bounded workspace off (per-process rlimits
#: and the work area's disk, as before issue 26)
MODE_SETTINGS = {
    "-copy": {layer.SETTING: "0"},
    "-tree": {layer.SETTING: "tree"},
    "-unbounded": {cgroup.SETTING: "0", BOUNDED_SETTING: "0"},
}


#: how each toolchain a bench instance names tells its version
VERSION_COMMANDS = {"go": ["go", "version"], "java": ["java", "-version"]}


def toolchain_versions(subj: Subject, tag: str) -> dict[str, tuple[str, str]]:
    """Each of the instance's toolchains' version on the host (what `bare` and `local` run)
    and in its docker image (what `docker` runs): where they differ, the docker overhead
    mixes the sandbox's cost with the two versions' own (Node 18 starts its test runner
    slower than Node 20)."""
    api = api_client()
    found = {}
    for tool in subj.environment.toolchains:
        command = VERSION_COMMANDS.get(tool, [tool, "--version"])
        host = subprocess.run(command, capture_output=True, text=True)
        container = api.create_container(tag, command=command, network_disabled=True)
        try:
            api.start(container)
            api.wait(container)
            image = api.logs(container).decode(errors="replace")
        finally:
            api.remove_container(container, force=True)
        found[tool] = (_version(host.stdout + host.stderr), _version(image))
    return found


def _version(said: str) -> str:
    """The first version number a `--version` output names (else the first line's last word: "dev")."""
    first = said.strip().splitlines()[0] if said.strip() else "?"
    match = re.search(r"\d+\.\d+(\.\d+)?", said)
    return match.group(0) if match else first.split()[-1]


#: modes measured only when asked for, each a variant of local or docker
EXTRA_MODES = ("local-warm", "local-copy", "docker-copy", "local-tree", "docker-tree", "local-tmpfs", "docker-tmpfs", "local-unbounded", "docker-1cpu")


def compare_languages(subjects: list[Subject], per_round: dict[str, list[float]], times: dict[str, list[float]],
                      fills: dict[str, float], versions: dict[str, dict[str, tuple[str, str]]]) -> None:
    """Each instance's local and docker overhead against the first Python instance's."""
    python = next((s for s in subjects if s.language == "python"), None)

    def over(subj: Subject, mode: str) -> float | None:
        name = f"{subj.id}:{mode}"
        if name not in per_round:
            return None
        return statistics.median(t - b for t, b in zip(per_round[name], per_round[f"{subj.id}:bare"], strict=False))

    extra = [m for m in EXTRA_MODES if any(n.endswith(f":{m}") for n in per_round)]
    table = Table(title="per-run overhead by language (overhead = median over rounds of mode − the instance's bare)")
    for column in ("language", "instance", "bare", "local", "÷ py", "docker", "÷ py", "≤ 1.10", *extra,
                   "files", "MB", *(f"fill: {way}" for way in FILL_WAYS), "toolchain: host / image"):
        table.add_column(column, justify="left" if column in ("language", "instance") else "right", no_wrap=True)
    for subj in subjects:
        cells = [subj.language, subj.id, f"{statistics.median(times[f'{subj.id}:bare']):.3f} s"]
        verdict = "—"
        for mode in ("local", "docker"):
            mine = over(subj, mode)
            ref = over(python, mode) if python is not None else None
            cells.append("—" if mine is None else f"{mine * 1000:+.0f} ms")
            ratio = mine / ref if mine is not None and ref else None
            cells.append("—" if ratio is None else f"{ratio:.2f}")
            if mode == "docker" and ratio is not None and subj is not python:
                verdict = "met" if ratio <= 1.10 else "MISSED"
        cells.append(verdict)
        for mode in extra:
            mine = over(subj, mode)
            ref = over(python, mode) if python is not None else None
            ratio = f" ({mine / ref:.2f})" if mine is not None and ref and subj is not python else ""
            cells.append("—" if mine is None else f"{mine * 1000:+.0f} ms{ratio}")
        files, size = tree_size(subj.tree)
        cells += [str(files), f"{size / 1e6:.1f}"]
        cells += [f"{fills[(subj.id, way)] * 1000:.0f} ms" if (subj.id, way) in fills else "—" for way in FILL_WAYS]
        cells.append("; ".join(f"{tool} {host} / {image}" + ("" if host == image else " (DIFFER)")
                               for tool, (host, image) in versions.get(subj.id, {}).items()) or "—")
        table.add_row(*cells)
    console.print(table)
    console.print("local, docker: overhead; ÷ py = overhead ÷ the Python instance's overhead of the same mode "
                  "(target for docker ≤ 1.10); files, MB: the state's (built) tree; fill = median time of fill_workspace "
                  "and the workspace's removal, copying the tree, layering over it or over its image (TESTPRISM_LAYERED=0, tree, image), measured alone after the rounds; an extra mode's figure is its overhead (÷ py in brackets)" + ("; docker-1cpu: docker's overhead with a CPU quota of 1 CPU"
                                              if extra else ""))


def concurrency_sweep(run: Callable[[], int], levels: list[int], runs: int) -> None:
    """Throughput of fresh-container runs at several concurrencies (for default_concurrency)."""
    table = Table(title=f"throughput ({runs} runs per level)")
    for column in ("concurrency", "runs/s", "median latency (s)"):
        table.add_column(column, justify="right")
    for level in levels:
        latencies: list[float] = []

        def one(_: int) -> None:
            start = time.perf_counter()
            run()
            latencies.append(time.perf_counter() - start)

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=level) as pool:
            list(pool.map(one, range(runs)))
        elapsed = time.perf_counter() - start
        table.add_row(str(level), f"{runs / elapsed:.2f}", f"{statistics.median(latencies):.3f}")
        log.info("concurrency %d: %.2f runs/s", level, runs / elapsed)
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=5, help="runs of a mode back to back in each round")
    parser.add_argument("--shipped-rounds", type=int, default=3, help="rounds of swebench-shipped (15 s each)")
    parser.add_argument("--benchmark", default=str(ROOT / "examples"))
    parser.add_argument("--instance", action="append", default=None,
                        help="an instance to measure (repeat it to measure several side by side; default: "
                             "calkit__merge-touching)")
    parser.add_argument("--configuration", default="strong")
    parser.add_argument("--modes", default=None,
                        help="default: bare,local,docker,docker-ahead,docker-reused,swebench-lean,swebench-shipped; "
                             "with several instances bare,local,docker")
    parser.add_argument("--concurrency-sweep", action="store_true")
    parser.add_argument("--work", default=None, help="work area (default: a temporary one)")
    parser.add_argument("--command", default=None,
                        help="run this command instead of the suite's entry (every mode, bare too): `true` "
                             "measures the sandbox's own cost without the suite's run-to-run spread")
    parser.add_argument("--swebench-image", default=None, metavar="ID",
                        help="measure the SWE-bench row ID (tests/data/realdata) as an image instance: its image "
                             "in SWE-bench's layout (built once), modes local-image and docker-image beside the "
                             "venv route's bare, local and docker")
    parser.add_argument("--image-tests", default="sympy/vector/tests/test_operators.py",
                        help="the program's test files the --swebench-image suite runs (default: one that passes "
                             "on sympy 1.5.1 under pytest 8: test_printing.py's sympy-own XFAIL fails there)")
    parser.add_argument("--inner", action="store_true",
                        help="also time each run's command inside its sandbox, to split a mode's overhead into the "
                             "sandbox's own cost around the command and the command's own difference there")
    parser.add_argument("--against", default=None, metavar="REV",
                        help="also run the local and docker modes of git revision REV (as local@REV, docker@REV)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)])
    instances = [args.swebench_image] if args.swebench_image else args.instance or ["calkit__merge-touching"]
    several = len(instances) > 1
    modes = (args.modes or ("bare,local,docker" if several else "bare,local,docker,local-image,docker-image"
                            if args.swebench_image else
                            "bare,local,docker,docker-ahead,docker-reused,swebench-lean,swebench-shipped")).split(",")

    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())
    scratch = Path(tempfile.mkdtemp(prefix="testprism-bench-", dir=base))
    scratch.chmod(0o755)
    work = WorkPaths(Path(args.work) if args.work else scratch / "work", runs_root=None)
    scratch_memory: list[Path] = []
    work.ensure()
    backends = []
    try:
        local = LocalBackend(work)
        backends.append(local)
        docker = DockerBackend(work, reuse=False)
        backends.append(docker)
        # The state's tree through the real path: an Environments over each backend, each of
        # which builds a built state with its own toolchain (tasks/execution/build.py).
        over_docker, over_local = Environments(docker), Environments(local)
        subjects: list[Subject] = []
        try:
            if args.swebench_image:
                args.benchmark = str(swebench_image_benchmark(args.swebench_image, args.image_tests, scratch))
                args.configuration = IMAGE_CONFIGURATION
            bench = bind_images(load_benchmark(Path(args.benchmark), (args.configuration,)), work)
            for instance_id in instances:
                subjects.append(subject(bench, instance_id, args.configuration, work, [over_docker, over_local],
                                        VENV_ROUTE if args.swebench_image else None))
        except Exception as exc:  # noqa: BLE001 - any problem with the bundled one: use the tiny one
            if several or args.swebench_image:
                raise
            log.warning("cannot use %s/%s (%s): using the built-in one-file program", args.benchmark, instances[0], exc)
            subjects = [tiny_subject(scratch)]
        if args.command is not None:
            subjects = [dataclasses.replace(s, command=args.command) for s in subjects]
        if args.inner:
            subjects = [dataclasses.replace(s, command=timed_inside(s.command)) for s in subjects]
        builds = over_docker.builds + over_local.builds
        log.info("state builds run: %d (over docker %d, over local %d) for %d built state(s); expect one per built "
                 "state and backend per work area, 0 on a rerun with the same --work", builds, over_docker.builds,
                 over_local.builds, sum(s.build is not None for s in subjects))
        at_rev: dict[str, type] = {}
        extra: dict[str, object] = {}
        if args.against:
            revision_package(args.against, scratch)
            at_rev = revision_classes(args.against, scratch)
            for name in ("local", "docker"):
                if name in modes:
                    extra[f"{name}@{args.against}"] = at_rev[name](at_rev["WorkPaths"](work.root))
        if any(m.endswith("-tmpfs") for m in modes):  # the same backends, workspaces in memory
            in_memory = WorkPaths(work.root, runs_root=Path(tempfile.mkdtemp(prefix="testprism-bench-", dir="/dev/shm")))
            scratch_memory.append(in_memory.workspaces)
            if "local-tmpfs" in modes:
                extra["local-tmpfs"] = LocalBackend(in_memory)
            if "docker-tmpfs" in modes:
                extra["docker-tmpfs"] = DockerBackend(in_memory, reuse=False)
        if "docker-ahead" in modes:
            extra["docker-ahead"] = DockerBackend(work, reuse=False, prewarm=True)
        if "docker-reused" in modes:
            extra["docker-reused"] = DockerBackend(work, reuse=True)
        for name in ("local-copy", "local-tree", "docker-copy", "docker-tree"):  # the tree copied, or layered itself
            if name in modes:
                extra[name] = LocalBackend(work) if name.startswith("local") else DockerBackend(work, reuse=False)
        if "local-warm" in modes:  # each run forked from its state's warm process (replay --warm)
            extra["local-warm"] = LocalBackend(work)
        if "local-unbounded" in modes:  # without the run's cgroup and bounded workspace
            extra["local-unbounded"] = LocalBackend(work)
        if "docker-1cpu" in modes:  # a diagnosis: `docker` with a quota of 1 CPU
            extra["docker-1cpu"] = DockerBackend(work, reuse=False, cpus=1.0)
        backends += list(extra.values())
        runners: dict[str, Callable[[], int]] = {}
        handles: dict[str, tuple[Path, Path]] = {}
        versions: dict[str, dict[str, tuple[str, str]]] = {}
        for subj in subjects:
            prefix = f"{subj.id}:" if several else ""
            local_env = local.prepare(subj.environment)
            docker_env = docker.prepare(subj.environment)  # the image is built here, before timing
            handles[subj.id] = (local_env, docker_env)
            versions[subj.id] = toolchain_versions(subj, environment_tag(docker_env.name)) if "docker" in modes else {}
            for tool, (host, image) in versions[subj.id].items():
                if host != image:
                    log.warning("%s: %s differs between the host (%s: bare, local) and the image (%s: docker): the "
                                "docker overhead includes the two versions' own difference", subj.id, tool, host, image)
            if "bare" in modes:
                runners[prefix + "bare"] = bare_runner(subj, local_env, scratch, name=prefix + "bare")
            if "floor" in modes:
                runners[prefix + "floor"] = bare_runner(subj, local_env, scratch, name=prefix + "floor",
                                                        wrap=FLOOR_ARGV)
            if "local" in modes:
                runners[prefix + "local"] = backend_runner(local, subj, local_env, name=prefix + "local")
            if "docker" in modes:
                runners[prefix + "docker"] = backend_runner(docker, subj, docker_env, name=prefix + "docker")
            for name, made in ((n, {"local": local, "docker": docker}[b]) for n, b in IMAGE_MODES.items()
                               if n in modes):
                if subj.image is None:
                    log.warning("%s: no %s (not an image instance)", subj.id, name)
                    continue
                runners[prefix + name] = backend_runner(made, dataclasses.replace(subj, environment=subj.image),
                                                        made.prepare(subj.image), name=prefix + name)
            for name, made in extra.items():
                if "@" in name:
                    runners[prefix + name] = backend_runner(
                        made, subj, made.prepare(at_rev["EnvironmentSpec"](**{  # the fields that revision knows
                            k: v for k, v in subj.environment.model_dump().items()
                            if k in at_rev["EnvironmentSpec"].model_fields})),
                        at_rev["RunRequest"], at_rev["Limits"], name=prefix + name)
                else:
                    runner = backend_runner(made, subj, made.prepare(subj.environment), name=prefix + name,
                                            warm=name == "local-warm")
                    settings = next((v for suffix, v in MODE_SETTINGS.items() if name.endswith(suffix)), None)
                    runners[prefix + name] = with_settings(runner, settings) if settings else runner
            if any(m.startswith("swebench") for m in modes):
                if subj.environment.python is None:
                    log.warning("%s: no swebench modes (its eval script is Python's)", subj.id)
                    continue
                image = instance_image(subj, environment_tag(docker_env.name))
                for name in ("swebench-lean", "swebench-shipped"):
                    if name in modes:
                        runners[prefix + name] = swebench_runner(subj, image, str(docker_env), scratch,
                                                                 shipped=name.endswith("shipped"))
        load = os.getloadavg()
        log.info("suite%s: %s; %d cores; load average %.1f %.1f %.1f; docker copy mode: %s", "s" if several else "",
                 "; ".join(s.label for s in subjects), os.cpu_count(), *load, docker.copy)
        only_some = {name: args.shipped_rounds for name in runners if name.endswith("swebench-shipped")}
        times, per_round = measure(runners, args.rounds, args.block, only_some)
        log.info("load average after: %.1f %.1f %.1f", *os.getloadavg())
        report_inner(times)
        if several:
            fills = {(s.id, way): fill_cost(s, handles[s.id][0], scratch, way) for s in subjects for way in FILL_WAYS}
            for subj in subjects:
                prefix = f"{subj.id}:"
                mine = {n[len(prefix):]: v for n, v in times.items() if n.startswith(prefix)}
                rounds = {n[len(prefix):]: v for n, v in per_round.items() if n.startswith(prefix)}
                report(mine, rounds, title=f"{subj.id} ({subj.language})")
            compare_languages(subjects, per_round, times, fills, versions)
        else:
            report(times, per_round)
        counted = {n: c for n, c in FROM_BUILT.items() if c}
        log.info("state builds run: %d (over docker %d, over local %d); runs that started from a built tree: %d (%s)",
                 over_docker.builds + over_local.builds, over_docker.builds, over_local.builds,
                 sum(counted.values()), ", ".join(f"{n} {c}" for n, c in counted.items()) or "none")
        if args.concurrency_sweep:
            for name in ("docker", "docker-ahead"):
                for full in [n for n in runners if n == name or n.endswith(f":{name}")]:
                    log.info("throughput of %s", full)
                    concurrency_sweep(runners[full], [1, 2, 3, 4], runs=24)
    finally:
        for backend in backends:
            backend.close()
        shutil.rmtree(scratch, ignore_errors=True)
        for folder in scratch_memory:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
