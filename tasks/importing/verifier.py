"""The check an instance passes before it is accepted when its program only stands in for
the row's commit (a source release): its checks must reproduce the row's transition.

A release is not the commit the row was made at, so the row's FAIL_TO_PASS and PASS_TO_PASS
lists may not hold for it; the checks are run on buggy and reference in the sandbox, as a
replay would run them, and an instance on which they do not reproduce is refused at import.
"""

from __future__ import annotations

from dataclasses import dataclass

from testprism.tasks.execution.batch import Environments
from testprism.tasks.execution.build import state_tree
from testprism.tasks.execution.junit import select
from testprism.tasks.execution.verdict import logged_limits, test_results
from testprism.tasks.model.benchmark import Instance
from testprism.tasks.model.outcome import Verdict
from testprism.tasks.model.state import states_of
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend, SuiteNotInstalled


@dataclass(frozen=True)
class Verifier:
    """Runs an instance's checks on buggy and reference before it is accepted: the rule for
    a program that only stands in for base_commit (a source release) — every FAIL_TO_PASS
    test fails before the reference and passes after it, every PASS_TO_PASS test exists and
    passes after it."""

    backend: SandboxBackend
    work: WorkPaths
    limits: Limits = Limits(timeout_s=900.0)

    def problems(self, instance: Instance) -> list[str]:
        spec = instance.spec.checks
        environments = Environments(self.backend)
        environment = self.backend.prepare(instance.spec.environment)
        found: list[str] = []
        for state in (s for s in states_of(instance) if s.kind in ("buggy", "reference")):
            tree = state_tree(instance, state, environments, self.work, self.limits)
            if isinstance(tree, Verdict):
                found.append(f"{state.name}: {tree.reason}: {tree.output_tail[-300:]}")
                continue
            if not tree.patch.applied:
                found.append(f"{state.name}: the patch does not apply: {tree.patch.message[-300:]}")
                continue
            try:  # the checks patch applied as every patch is (tasks/sandbox/workspace.py)
                limits = logged_limits(self.limits) if spec.parser else self.limits
                result = environments.run(instance.spec.environment, RunRequest(
                    tree=tree.tree, suite_folder=None, suite_files=(), command=spec.command,
                    environment=environment, limits=limits, suite_patch=instance.checks_patch,
                ))
            except SuiteNotInstalled as exc:
                found.append(f"{state.name}: the checks patch does not apply: {str(exc)[-300:]}")
                continue
            cases = test_results(result, spec.parser)
            if state.kind == "buggy" and cases is None and not result.timed_out and result.exit_code != 0:
                # Checks that do not compile before the fix (a test of a new accessor) fail there:
                # the benchmarks count them fail-to-pass, so the buggy side holds.
                continue
            if result.timed_out or cases is None:
                unread = f"wrote a log its {spec.parser} parser cannot read" if spec.parser else \
                    "wrote no readable JUnit report"
                why = "timed out" if result.timed_out else unread
                found.append(f"{state.name}: the checks {why}: {result.output_tail[-600:]}")
                continue
            if state.kind == "buggy":
                passing = [t for t, o in select(cases, spec.fail_to_pass).items() if o == "passed"]
                found += [f"buggy: FAIL_TO_PASS {t} passes before the reference" for t in passing]
            else:
                outcomes = select(cases, spec.fail_to_pass + spec.pass_to_pass)
                found += [f"reference: {t} is {o}" for t, o in outcomes.items() if o != "passed"]
        return found
