"""One generation run: an agent command on an instance's buggy program, inside the sandbox,
leaving a suite under `tmp/` (and, for heterogeneous synthesis, a repair of the program).

What the agent sees is the task folder `tmp/.task/` (`task_folder.py`: the instruction, in
TestPrism mode the reference diff, its strategy, feedback in a feedback round) and the buggy
program; never a candidate, a panel or the store. Its one way out is the model channel
(tasks/sandbox/channel.py), which meters and caps what it spends: a run that exhausts its
budget, overruns its wall clock or reports more than its caps is recorded with its reason,
and its suite is not kept (a budget that can be overrun for a better suite is no budget).

A job of the one batch executor (tasks/execution/batch.py), so generation has what replay
has: batches on threads or Dask, environments built once, twins run once, rows stored as
they go and a rerun that skips stored keys. What a run left is kept in the store by key
(`outputs.py`), so the benchmark folder of generated suites can always be assembled again.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path

from testprism.storage import Store
from testprism.tasks.execution.batch import Environments, ExecutionOptions, Job
from testprism.tasks.execution.build import state_tree
from testprism.tasks.generate.outputs import KeptOutputs, generated_folder, keep_outputs
from testprism.tasks.generate.strategy import Caps, Strategy
from testprism.tasks.generate.task_folder import Mode, TaskFolder, agent_command
from testprism.tasks.model import bounded_json, syntax
from testprism.tasks.model.benchmark import Benchmark, Instance
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.metering import Budget, Usage
from testprism.tasks.model.outcome import RETRYABLE, Reason, Verdict
from testprism.tasks.model.state import states_of
from testprism.tasks.model.workdir import workspace_prefix
from testprism.tasks.sandbox.base import ExecResult, Limits, RunRequest, SandboxBackend, SandboxError
from testprism.tasks.sandbox.channel import ModelChannel
from testprism.tasks.sandbox.transcript import Transcript

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Endpoint:
    """The one OpenAI-compatible endpoint a run may reach, through the channel. The key is
    read from the harness's environment variable `api_key_env` where the run starts (a Dask
    worker's included) and never enters the sandbox."""

    base_url: str
    api_key_env: str | None = "OPENAI_API_KEY"

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


@dataclass(frozen=True, eq=False)
class GenerationSpec:
    """One agent run on one instance for one configuration (a feedback round is another)."""

    instance: Instance
    configuration: str
    command: str
    mode: Mode
    strategy: Strategy
    caps: Caps
    tools: tuple[Path, ...] = ()
    feedback: bytes | None = None
    round: int = 0

    @cached_property
    def key(self) -> str:
        """Same instance, command, tools, mode, strategy, caps and feedback: the same run."""
        reference = self.instance.reference if self.mode is Mode.TESTPRISM else b""
        tools = [part for tool in self.tools for part in (tool.name, tool.read_bytes())]
        # the instance's agent time, when it sets one, bounds the run: a key of its own (others unchanged)
        own = () if self.wall_clock_s == self.caps.wall_clock_s else (f"wall={self.wall_clock_s}",)
        return digest("generation", self.instance.program_hash, (self.instance.folder / "instruction.md").read_bytes(),
                      reference, self.command, *tools, self.mode.value, self.strategy.key, self.caps.model_dump_json(),
                      self.feedback or b"", str(self.round), *own)

    @property
    def wall_clock_s(self) -> float:
        """The run's wall clock: the caps', or the instance's agent time when shorter
        (`[limits] agent_timeout_s`, Harbor's `[agent] timeout_sec`)."""
        own = self.instance.spec.limits.agent_timeout_s if self.instance.spec.limits is not None else None
        return self.caps.wall_clock_s if own is None else min(self.caps.wall_clock_s, own)

    @property
    def budget(self) -> Budget:
        steps = self.strategy.agent_steps + (self.strategy.repair_steps if self.strategy.repair else 0)
        return Budget(max_requests=min(steps, self.caps.run_steps), max_total_tokens=self.caps.run_tokens)


@dataclass(frozen=True)
class GenerationResult:
    reason: Reason | None
    exit_code: int | None
    duration_s: float
    usage: Usage
    reported: dict
    kept: KeptOutputs | None


NO_USAGE = Usage(0, 0, 0, 0)


class GenerateJob(Job[GenerationSpec, GenerationResult]):
    """Generation runs as a job of the batch executor; rows go to `generations`."""

    dataset = "generations"

    def __init__(self, options: ExecutionOptions, endpoint: Endpoint | None = None) -> None:
        super().__init__(options)
        self.endpoint = endpoint

    def content_key(self, unit: GenerationSpec) -> str:
        return unit.key

    def attempt(self, unit: GenerationSpec, environments: Environments, options: ExecutionOptions) -> GenerationResult:
        started = datetime.now()
        environment = environments.ready(unit.instance.spec.environment)
        if isinstance(environment, Verdict):
            return GenerationResult(environment.reason, None, 0.0, NO_USAGE, {}, None)
        buggy = states_of(unit.instance)[0]
        tree = state_tree(unit.instance, buggy, environments, options.work, options.limits, options.policy.patch_fuzz)
        if isinstance(tree, Verdict):
            return GenerationResult(tree.reason, None, 0.0, NO_USAGE, {}, None)
        limits = Limits(timeout_s=unit.wall_clock_s, output_bytes=options.limits.output_bytes,
                        tail_bytes=options.limits.output_bytes, memory_mb=options.limits.memory_mb,
                        processes=options.limits.processes)
        with TaskFolder(options.work.workspaces, workspace_prefix("task"),
                        instruction=(unit.instance.folder / "instruction.md").read_bytes(),
                        language=syntax.named(unit.instance.spec.language),
                        reference=unit.instance.reference if unit.mode is Mode.TESTPRISM else None,
                        strategy=unit.strategy, command=unit.command, tools=unit.tools, feedback=unit.feedback) as task:
            transcript = _transcript_file(options) if self.endpoint else None
            try:
                channel = (ModelChannel(self.endpoint.base_url, self.endpoint.api_key, unit.budget,
                                        directory=options.work.workspaces,
                                        transcript=Transcript(transcript, self.endpoint.api_key))
                           if self.endpoint and transcript else None)
                try:
                    request = RunRequest(tree=tree.tree, suite_folder=task.root, suite_files=task.files,
                                         command=agent_command(unit.command), environment=environment, limits=limits,
                                         channel=channel.socket_path if channel else None, keep_outputs=True)
                    try:
                        done = environments.run(unit.instance.spec.environment, request)
                    except SandboxError as exc:
                        log.warning("generation %s on %s: sandbox failed: %s", unit.configuration, unit.instance.id,
                                    exc)
                        return GenerationResult(Reason.SANDBOX_ERROR, None,
                                                (datetime.now() - started).total_seconds(), NO_USAGE, {}, None)
                    usage = channel.usage if channel else NO_USAGE
                    exhausted = channel.exhausted if channel else False
                finally:
                    if channel:
                        channel.close()  # the transcript is whole once the channel is closed
                return judged_generation(unit, done, usage, exhausted, options, transcript)
            finally:
                if transcript is not None:
                    transcript.unlink(missing_ok=True)

    def row(self, unit: GenerationSpec, result: GenerationResult, started: datetime,
            backend: SandboxBackend) -> dict:
        kept = result.kept
        return {
            "generation_key": unit.key, "configuration": unit.configuration, "instance_id": unit.instance.id,
            "source": unit.instance.source, "mode": unit.mode.value, "round": unit.round, "command": unit.command,
            "strategy": unit.strategy.model_dump_json(), "strategy_hash": unit.strategy.key,
            "reason": None if result.reason is None else result.reason.value, "exit_code": result.exit_code,
            "duration_s": result.duration_s, "started_at": started,
            "requests": result.usage.requests, "prompt_tokens": result.usage.prompt_tokens,
            "completion_tokens": result.usage.completion_tokens, "total_tokens": result.usage.total_tokens,
            "reported_steps": _count(result.reported, "steps"), "reported_tokens": _count(result.reported, "total_tokens"),
            "suite_hash": kept.suite_hash if kept else None, "suite_files": kept.suite_files if kept else 0,
            "repair_hash": kept.repair_hash if kept else None, "log": kept.log if kept else None,
            "backend": backend.name, "isolation": backend.isolation,
        }

    def outcome(self, result: GenerationResult) -> str:
        return "ok" if result.reason is None else result.reason.value


def _transcript_file(options: ExecutionOptions) -> Path:
    """A fresh file of the harness's for the channel's transcript, beside the workspaces
    (never inside one: the sandbox sees its own workspace); moved into the store with the
    run's outputs, then removed."""
    fd, name = tempfile.mkstemp(prefix="testprism-transcript-", suffix=".jsonl.gz", dir=options.work.workspaces)
    os.close(fd)
    return Path(name)


def _count(reported: dict, name: str) -> int | None:
    value = reported.get(name)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def judged_generation(unit: GenerationSpec, done: ExecResult, usage: Usage, exhausted: bool,
                      options: ExecutionOptions, transcript: Path | None = None) -> GenerationResult:
    """Why a run's suite is not kept, if it is not, and what of it is kept in the store.

    The log and the channel's transcript are kept whatever happened (a failed agent is what
    a researcher reads first); the suite and repair only for a run that ended within its
    limits with a test file."""
    reported = _reported_usage(done)
    reason: Reason | None = None
    if done.timed_out:
        reason = Reason.TIMEOUT
    elif done.output_exceeded:
        reason = Reason.OUTPUT_LIMIT
    elif done.limit is not None:  # a run-wide limit (memory, processes, disk)
        reason = Reason(done.limit)
    elif exhausted or _over(reported, unit):
        reason = Reason.OVER_BUDGET
    elif done.exit_code != 0:
        reason = Reason.AGENT_FAILED
    kept = keep_outputs(Store(options.store_root), unit.key, done, suite=reason is None, transcript=transcript)
    if reason is None and kept.suite_hash is None:
        reason = Reason.NO_SUITE
    return GenerationResult(reason, done.exit_code, done.duration_s, usage, reported, kept)


def _reported_usage(done: ExecResult) -> dict:
    """The agent's own account (`tmp/.task/usage.json`), when it left a readable one
    (within the JSON bounds: the file is the run's)."""
    if done.outputs is None:
        return {}
    raw = done.outputs.suite_files.get(".task/usage.json")
    try:
        data = bounded_json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _over(reported: dict, unit: GenerationSpec) -> bool:
    """The agent says it spent more than its caps allow (the channel counts only what went
    through it; a command with a model of its own must stay within the same caps)."""
    steps, tokens = _count(reported, "steps"), _count(reported, "total_tokens")
    return (steps is not None and steps > unit.budget.max_requests) or (
        tokens is not None and tokens > unit.caps.run_tokens)



def plan_generation(benchmark: Benchmark, configuration: str, command: str, mode: Mode, strategy: Strategy,
                    caps: Caps, tools: tuple[Path, ...] = (), instances: tuple[str, ...] = ()) -> list[GenerationSpec]:
    """A run per instance (of `instances`, when given), in the benchmark's order."""
    chosen = [benchmark.instances[i] for i in instances] if instances else list(benchmark.instances.values())
    return [GenerationSpec(i, configuration, command, mode, strategy, caps, tools) for i in chosen]


def settled_generations(store: Store) -> dict[str, dict]:
    """The newest row of every generation key whose run is settled: everything but an
    infrastructure failure (RETRYABLE), which a rerun tries again."""
    if not store.parts("generations"):
        return {}
    rows = (store.scan("generations").sort("started_at").group_by("generation_key").last().collect())
    return {r["generation_key"]: r for r in rows.iter_rows(named=True)
            if r["reason"] is None or Reason(r["reason"]) not in RETRYABLE}


def kept_suites(specs: list[GenerationSpec], settled: dict[str, dict]) -> dict[str, str]:
    """`instance id → generation key` of the planned runs whose suite the store keeps."""
    return {s.instance.id: s.key for s in specs
            if s.key in settled and settled[s.key]["reason"] is None and settled[s.key]["suite_hash"]}


def suite_folders(store: Store, kept: dict[str, str]) -> dict[str, Path]:
    """`instance id → the kept suite's folder in the store`."""
    return {instance_id: generated_folder(store, key) / "suite" for instance_id, key in kept.items()}
