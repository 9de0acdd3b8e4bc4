"""Patches fitted to the program they are imported with.

Real patches often apply to a release only with offsets or fuzz (README of the real data).
Each is tried here in a throwaway git repository over the program and, when it needs more
than a plain `git apply`, stored as the exact diff it produces, so that every consumer of
the benchmark applies it as it is; a row whose patches do not fit is refused at import
rather than turning every later run into `E`/patch_failed.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from testprism.tasks.importing.git import git, git_error
from testprism.tasks.importing.rows import RowError
from testprism.tasks.model import patches
from testprism.tasks.model.state import apply_patch

log = logging.getLogger(__name__)


class Scratch:
    """A throwaway git repository over a program tree, to try patches and rewrite those that
    apply only with offsets or fuzz into exact diffs, so that every consumer of the
    benchmark can apply them with a plain `git apply`."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        commit = ["commit", "-q", "--no-verify", "--allow-empty", "-m", "program"]
        for args in (["init", "-q"], ["add", "--all", "--force", "."], commit):
            done = git(args, tree, private=True)
            if done.returncode != 0:
                raise RowError("program", f"git {args[0]} over the program failed: {git_error(done)}")

    def apply(self, patch: str, field: str, fuzz: int) -> str:
        """Apply; returns how (`git apply` or `patch --fuzz=N`). Raises when it does not apply."""
        result = apply_patch(self.tree, patch.encode(), fuzz=fuzz)
        if not result.applied:
            raise RowError(field, f"does not apply to the program (git apply, then patch --fuzz={fuzz}): "
                                  f"{result.message.strip()[-600:]}")
        return result.method

    def diff(self) -> str:
        """The exact diff of the tree against the program, as git writes it."""
        git(["add", "--all", "--force", "."], self.tree, private=True)
        done = git(["diff", "--cached", "--binary", "--no-renames", "--no-color", "--no-ext-diff"], self.tree, private=True)
        return done.stdout.decode("utf-8", errors="surrogateescape")

    def fit(self, patch: str, field: str, fuzz: int) -> str:
        """The patch as it applies here: the published text when `git apply` takes it, else
        the exact diff it produces."""
        if self.apply(patch, field, fuzz) == "git apply":
            return patch
        log.info("%s applies only with fuzz or offsets: stored as the exact diff it produces", field)
        return self.diff()

    def reset(self) -> None:
        git(["reset", "-q", "--hard", "HEAD"], self.tree, private=True)
        git(["clean", "-q", "-fdx"], self.tree, private=True)

    def remove(self) -> None:
        shutil.rmtree(self.tree / ".git")


def _applies(tree: Path, patch: str) -> bool:
    return git(["apply", "--check", "--whitespace=nowarn", "-"], tree, input=patch.encode()).returncode == 0


def fit_patches(program: Path, reference: str, checks: str, fuzz: int) -> tuple[str, str]:
    """The reference and the checks as they apply to `program`, each on its own and the
    checks over the reference: a row whose patches do not fit its program is refused here
    rather than turning every later run into `E`/patch_failed."""
    touched = [patches.touched_files(patches.parse(p)) for p in (reference, checks)]
    if touched[0].isdisjoint(touched[1]) and _applies(program, reference) and _applies(program, checks):
        return reference, checks  # the common case, without the cost of a scratch repository
    scratch = Scratch(program)
    try:
        fitted_reference = scratch.fit(reference, "patch", fuzz)
        scratch.reset()
        fitted_checks = scratch.fit(checks, "test_patch", fuzz)
        scratch.reset()
        scratch.apply(fitted_reference, "patch", 0)
        both = apply_patch(program, fitted_checks.encode())
        if not both.applied:
            raise RowError("test_patch", f"does not apply over the reference patch: {both.message.strip()[-600:]}")
        scratch.reset()
    finally:
        scratch.remove()
    return fitted_reference, fitted_checks
