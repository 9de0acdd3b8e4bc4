"""Benchmark: what a sandbox costs per run, next to the bare command and to SWE-bench.

One suite on one state, run many times: in each round every mode runs a block of runs back
to back (as a replay worker does), modes one after another, so drift in the machine's load
hits every mode alike; overheads are paired by round. Each run is timed as its caller sees
it:

- `bare`: the suite's command with `bash -c` in a prepared copy of the state, same venv as
  `local`, no sandbox, no copy: the floor.
- `local`: LocalBackend.run (fresh workspace copy, bubblewrap, rlimits, JUnit read back).
- `docker`: DockerBackend.run, the default: a fresh container per run, started ahead of
  its run while the previous one executes (bind mode).
- `docker-cold`: the same without starting ahead (`prewarm=False`): create, start, wait,
  remove all on the run's path.
- `docker-reused`: DockerBackend fast mode (one container kept, workspace reset).
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

Run: `python bench/replay_overhead.py [--rounds 10 --block 5] [--benchmark examples --instance ID
--configuration strong] [--concurrency-sweep] [--against REV]` as root with a Docker engine
(.ci/start-dockerd) and bubblewrap. Default suite: the bundled benchmark's
`calkit__merge-touching` / `strong` on the reference (a small pytest suite), else a
built-in one-file program.
"""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
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

from testprism.tasks.model.benchmark import EnvironmentSpec, load_benchmark
from testprism.tasks.sandbox.base import Limits, RunRequest
from testprism.tasks.sandbox.docker.backend import DockerBackend
from testprism.tasks.sandbox.docker.engine import api_client
from testprism.tasks.sandbox.docker.environment_image import environment_tag
from testprism.tasks.sandbox.local import LocalBackend
from testprism.tasks.model.state import materialise, states_of
from testprism.tasks.model.workdir import WorkPaths

log = logging.getLogger("bench.replay_overhead")
console = Console(width=max(100, Console().width))

ROOT = Path(__file__).resolve().parents[1]
LOCAL_TARGET_RATIO, LOCAL_TARGET_MS = 0.10, 5.0
DOCKER_TARGET_S = 0.3

TINY_PROGRAM = "def add(a, b):\n    return a + b\n"
TINY_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TINY_RUN = 'exec python -m pytest -q -p no:cacheprovider tmp --junitxml="$TESTPRISM_JUNIT"\n'


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


def subject(args: argparse.Namespace, work: WorkPaths, scratch: Path) -> Subject:
    bench_root = Path(args.benchmark)
    try:
        bench = load_benchmark(bench_root, (args.configuration,))
        instance = bench.instances[args.instance]
        suite = bench.suites[(args.configuration, args.instance)]
    except Exception as exc:  # noqa: BLE001 - any problem with the bundled one: use the tiny one
        log.warning("cannot use %s/%s (%s): using the built-in one-file program", args.benchmark, args.instance, exc)
        program, suite_dir = scratch / "tiny-program", scratch / "tiny-suite"
        program.mkdir()
        suite_dir.mkdir()
        (program / "calc.py").write_text(TINY_PROGRAM)
        (suite_dir / "test_calc.py").write_text(TINY_TEST)
        (suite_dir / "run_tests.sh").write_text(TINY_RUN)
        return Subject(program, suite_dir, ("run_tests.sh", "test_calc.py"), "bash tmp/run_tests.sh", b"", program,
                       EnvironmentSpec(), "built-in tiny program")
    state = next(s for s in states_of(instance) if s.kind == "reference")
    tree = materialise(instance, state, work)
    return Subject(tree.tree, suite.folder, suite.files, suite.entry, instance.reference, instance.program,
                   instance.spec.environment, f"{instance.id} / {args.configuration} / reference")


# -- the modes ---------------------------------------------------------------------------------


def bare_runner(subj: Subject, venv: Path, scratch: Path) -> Callable[[], int]:
    ws = scratch / "bare"
    shutil.copytree(subj.tree, ws / "program", symlinks=True)
    for rel in subj.suite_files:
        dest = ws / "program" / "tmp" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(subj.suite_folder / rel, dest)
    (ws / "out").mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(ws), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "TESTPRISM_JUNIT": str(ws / "out" / "junit.xml")}

    def run() -> int:
        return subprocess.run(["bash", "-c", subj.command], cwd=ws / "program", env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

    return run


def backend_runner(backend, subj: Subject, environment: Path, request_type: type = RunRequest,
                   limits_type: type = Limits) -> Callable[[], int]:
    """`backend.run` on the subject; the request and limits types are those of the
    backend's own code (another revision's, for `--against`)."""
    request = request_type(tree=subj.tree, suite_folder=subj.suite_folder, suite_files=subj.suite_files,
                           command=subj.command, environment=environment, limits=limits_type(timeout_s=300.0))

    def run() -> int:
        result = backend.run(request)
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
        code = run()
        log.info("warm-up %-16s exit %s", name, code)
    for k in range(rounds):
        for name, run in runners.items():
            if name in only_some and k >= only_some[name]:
                continue
            these = []
            for _ in range(1 if name in only_some else block):
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


def report(times: dict[str, list[float]], per_round: dict[str, list[float]]) -> None:
    bare = statistics.median(times["bare"])
    peer = paired_overhead(per_round, "swebench-lean") if "swebench-lean" in times else None
    table = Table(title="per-run wall time (s), as the caller sees it")
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
    if "local" in times:
        local = paired_overhead(per_round, "local")
        budget = LOCAL_TARGET_RATIO * bare + LOCAL_TARGET_MS / 1000
        verdict = "met" if local <= budget else f"MISSED by {1000 * (local - budget):.0f} ms"
        log.info("local overhead %.0f ms vs target %.0f ms (10%% of bare + 5 ms): %s", 1000 * local, 1000 * budget, verdict)
    for name in [n for n in times if "@" in n]:
        now = name.split("@", 1)[0]
        if now in times:
            change = paired_overhead(per_round, now) - paired_overhead(per_round, name)
            change_ratio = statistics.median(t / o for t, o in zip(per_round[now], per_round[name], strict=False))
            log.info("%s against %s: overhead %+.1f ms per run; run time × %.3f (median of per-round ratios)",
                     now, name, 1000 * change, change_ratio)
    for name in ("docker", "docker-cold", "docker-reused"):
        if name in times:
            over = paired_overhead(per_round, name)
            verdict = "met" if over <= DOCKER_TARGET_S else f"MISSED by {1000 * (over - DOCKER_TARGET_S):.0f} ms"
            log.info("%s overhead %.0f ms vs target 300 ms: %s", name, 1000 * over, verdict)


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
    parser.add_argument("--instance", default="calkit__merge-touching")
    parser.add_argument("--configuration", default="strong")
    parser.add_argument("--modes", default="bare,local,docker,docker-cold,docker-reused,swebench-lean,swebench-shipped")
    parser.add_argument("--concurrency-sweep", action="store_true")
    parser.add_argument("--work", default=None, help="work area (default: a temporary one)")
    parser.add_argument("--against", default=None, metavar="REV",
                        help="also run the local and docker modes of git revision REV (as local@REV, docker@REV)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)])

    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())
    scratch = Path(tempfile.mkdtemp(prefix="testprism-bench-", dir=base))
    scratch.chmod(0o755)
    work = WorkPaths(Path(args.work) if args.work else scratch / "work")
    work.ensure()
    modes = args.modes.split(",")
    backends = []
    try:
        subj = subject(args, work, scratch)
        local = LocalBackend(work)
        backends.append(local)
        local_env = local.prepare(subj.environment)
        runners: dict[str, Callable[[], int]] = {}
        if "bare" in modes:
            runners["bare"] = bare_runner(subj, local_env, scratch)
        if "local" in modes:
            runners["local"] = backend_runner(local, subj, local_env)
        docker = DockerBackend(work, reuse=False)
        backends.append(docker)
        docker_env = docker.prepare(subj.environment)
        if "docker" in modes:
            runners["docker"] = backend_runner(docker, subj, docker_env)
        if args.against:
            revision_package(args.against, scratch)
            at_rev = revision_classes(args.against, scratch)
            for name in ("local", "docker"):
                if name in modes:
                    made = at_rev[name](at_rev["WorkPaths"](work.root))
                    backends.append(made)
                    runners[f"{name}@{args.against}"] = backend_runner(
                        made, subj, made.prepare(at_rev["EnvironmentSpec"](**subj.environment.model_dump())),
                        at_rev["RunRequest"], at_rev["Limits"])
        if "docker-cold" in modes:
            cold = DockerBackend(work, reuse=False, prewarm=False)
            backends.append(cold)
            runners["docker-cold"] = backend_runner(cold, subj, cold.prepare(subj.environment))
        if "docker-reused" in modes:
            reused = DockerBackend(work, reuse=True)
            backends.append(reused)
            runners["docker-reused"] = backend_runner(reused, subj, reused.prepare(subj.environment))
        if any(m.startswith("swebench") for m in modes):
            image = instance_image(subj, environment_tag(docker_env.name))
            for name in ("swebench-lean", "swebench-shipped"):
                if name in modes:
                    runners[name] = swebench_runner(subj, image, str(docker_env), scratch, shipped=name.endswith("shipped"))
        load = os.getloadavg()
        log.info("suite: %s; %d cores; load average %.1f %.1f %.1f; docker copy mode: %s",
                 subj.label, os.cpu_count(), *load, docker.copy)
        times, per_round = measure(runners, args.rounds, args.block, {"swebench-shipped": args.shipped_rounds})
        log.info("load average after: %.1f %.1f %.1f", *os.getloadavg())
        report(times, per_round)
        if args.concurrency_sweep:
            for name in ("docker", "docker-cold"):
                if name in runners:
                    log.info("throughput of %s", name)
                    concurrency_sweep(runners[name], [1, 2, 3, 4], runs=24)
    finally:
        for backend in backends:
            backend.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
