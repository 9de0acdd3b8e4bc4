"""A state's build step (`[build]` of instance.toml): run once per state, when its tree is
materialised, never once per run.

Many real repositories must be built before their tests run (compiled extensions, an
installed package that subprocesses import, `go build`). The build runs in the sandbox like
any run — the state's tree copied into a fresh workspace, the environment read-only, no
network, the build's own time limit — and the program folder it leaves is copied back
(links as links, never followed) as the state's built tree, next to the unbuilt one in the
work area. Every run of the state then starts from a copy of the built tree. Once per
state and environment as the backend prepared it: a tree built under docker (the image's
toolchain) is not the one local runs (the host's) start from, each backend builds its own.

A build that exits non-zero, times out or leaves an unsafe tree is a fact of the state:
recorded once with the build's output, and every run of the state is `E`/`build_failed`
(never a rejection). A sandbox that broke while building is infrastructure: nothing is
kept, so the next run tries again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from testprism.tasks.execution.batch import Environments
from testprism.tasks.execution.verdict import MESSAGE_TAIL, failed
from testprism.tasks.model.benchmark import Instance
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Reason, Verdict
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.state import State, StateTree, materialise
from testprism.tasks.model.workdir import WorkPaths, build_once
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxError
from testprism.tasks.sandbox.nofollow import UnsafeTarget

log = logging.getLogger(__name__)

BUILD_RECORD = "build.json"


@dataclass(frozen=True)
class BuildRecord:
    """What a state's build did: kept beside the built tree, read by every later run."""

    ok: bool
    exit_code: int | None  #: None when the build did not run to its end (timed out, output bound)
    duration_s: float
    message: str


def state_tree(instance: Instance, state: State, environments: Environments, work: WorkPaths, limits: Limits,
               fuzz: int = DEFAULT_FUZZ, environment: EnvironmentSpec | None = None) -> StateTree | Verdict:
    """The tree a run of `state` starts from: the patched tree, built once when the
    instance has a build step; or the `E` verdict of a state whose build failed or whose
    environment cannot be had. A patch that did not apply is returned as it is: the caller
    records that (`patch_failed`). `environment` builds it in another environment than the
    instance's: the coverage pass's instrumented one, where coverage is compiled in (gcc's
    `--coverage`: tasks/score/coverage/toolchains/gcc.py); a built tree of its own."""
    missing = unbound_image(instance, environments)
    if missing is not None:
        return missing
    tree = materialise(instance, state, work, fuzz)
    if instance.spec.build is None or not tree.patch.applied:
        return tree
    built = built_tree(instance, tree.tree, environments, work, limits, environment)
    return built if isinstance(built, Verdict) else StateTree(built, tree.patch)


def unbound_image(instance: Instance, environments: Environments) -> Verdict | None:
    """The `E` verdict of every run of an image instance whose image could not be bound
    (tasks/sandbox/image/binding.py: missing, not pullable): it has no program to make a
    tree of, and its environment's error says why and how to provide the image."""
    environment = instance.spec.environment
    if environment.image is None or environment.image_id:
        return None
    ready = environments.ready(environment)
    return ready if isinstance(ready, Verdict) else None


def built_tree(instance: Instance, tree: Path, environments: Environments, work: WorkPaths,
               limits: Limits, environment_spec: EnvironmentSpec | None = None) -> Path | Verdict:
    """`tree` (a materialised tree of the work area: a state's, or a state's with the
    official checks over it) after the instance's build step, built once in
    `environment_spec` (default: the instance's); or why not."""
    build = instance.spec.build
    assert build is not None
    spec = environment_spec or instance.spec.environment
    environment = environments.ready(spec)
    if isinstance(environment, Verdict):
        return environment

    # The build's own limits: the runs' but for its time limit, so passes whose runs differ
    # only in their timeout (replay, the coverage pass) share one built tree.
    build_limits = replace(limits, timeout_s=build.timeout_s)

    def run_build(target: Path) -> None:
        request = RunRequest(
            tree=tree, suite_folder=None, suite_files=(), command=build.command, environment=environment,
            limits=build_limits, export_tree=target / "tree",
        )
        try:
            result = environments.run(spec, request)
            ok = result.exit_code == 0 and not result.timed_out and not result.output_exceeded
            cut_short = result.timed_out or result.output_exceeded
            why = ("timed out" if result.timed_out else "wrote past the output bound" if result.output_exceeded
                   else f"exited {result.exit_code}")
            # the exit code is kept only where the build ran to its end: a label reads it
            # (tasks/collect/label.py) as "this tree does not build", which a timeout does not say
            record = BuildRecord(ok, None if cut_short else result.exit_code, result.duration_s,
                                 "" if ok else f"build step {why}: {result.output_tail[-MESSAGE_TAIL:]}")
        except UnsafeTarget as exc:
            record = BuildRecord(False, None, 0.0, f"build step left a tree that cannot be kept: {exc}")
        environments.count_build()
        # one line per built state would bury the progress display (a replay builds each state
        # of a compiled instance): the stage's summary counts them; a failure is worth a line
        if record.ok:
            log.debug("built a tree of %s in %.1f s", instance.id, record.duration_s)
        else:
            log.warning("the build of a state of %s failed after %.1f s: its runs are E/build_failed",
                        instance.id, record.duration_s)
        (target / BUILD_RECORD).write_text(json.dumps(record.__dict__))

    # The tree's folder name is its content key in the work area (tasks/model/state.py). The
    # environment's handle is in it: what a build leaves depends on the toolchain it ran with,
    # and each backend prepares its own (under local the host's system folders and links to
    # its toolchains, under docker the image's), so a tree is built per backend and only runs
    # that see the same toolchain start from it. One shared across backends gave runs a build
    # they could not use: a Go build cache made by the image's Go 1.19 holds nothing the host's
    # Go 1.26 can reuse, and every local run compiled the standard library again (+10 s a run).
    key = digest("built", tree.parent.name, build.command, spec.key, build_limits.key, str(environment))
    try:
        folder = build_once(work.state(instance.id, key), run_build)
    except SandboxError as exc:  # infrastructure: nothing kept, the next run builds again
        return failed(Reason.SANDBOX_ERROR, f"build step: {exc}", attempts=1)
    record = BuildRecord(**json.loads((folder / BUILD_RECORD).read_text()))
    if not record.ok:
        return replace(failed(Reason.BUILD_FAILED, record.message, attempts=0), exit_code=record.exit_code)
    return folder / "tree"
