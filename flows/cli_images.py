"""`testprism images`: the docker backend's images (one per environment, on a local base image)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from testprism.flows.cli_shared import images_app, log
from testprism.flows.errors import ExitStatus
from testprism.tasks.model.workdir import WorkPaths, default_work_root


BaseOpt = Annotated[Optional[str], typer.Option(
    help="base image (default: $TESTPRISM_DOCKER_BASE, else testprism-base:bookworm, bootstrapped when missing)",
)]


@images_app.command("build")
def build(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/, suites/)")],
    base: BaseOpt = None,
    work: Annotated[Optional[Path], typer.Option(help="working area (holds the build locks)")] = None,
) -> None:
    """Build the image of every environment the benchmark's instances use (once each)."""
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.sandbox.environment import EnvironmentBuildError
    from testprism.tasks.sandbox.base import SandboxError
    from testprism.tasks.sandbox.docker.backend import DockerBackend
    from testprism.tasks.sandbox.docker.environment_image import environment_tag

    bench = load_benchmark(benchmark)
    backend = DockerBackend(WorkPaths(work or default_work_root()), base_image=base)
    specs = {i.spec.environment.key: i.spec.environment for i in bench.instances.values()}
    failed = 0
    try:
        for spec in specs.values():
            try:
                handle = backend.prepare(spec)
            except (EnvironmentBuildError, SandboxError) as exc:
                failed += 1
                log.error("environment %s (%s): %s", spec.key, spec.summary, exc)
                continue
            log.info("%s ready (%s)", environment_tag(handle.name), spec.summary)
    finally:
        backend.close()
    if failed:
        raise typer.Exit(ExitStatus.FAILED)


@images_app.command("list")
def list_(all_: Annotated[bool, typer.Option("--all", help="also show each image's packages")] = False) -> None:
    """testprism's images: the base and one per environment."""
    from testprism.tasks.sandbox.docker.engine import api_client
    from testprism.tasks.sandbox.docker.images import list_images

    images = list_images(api_client())
    table = Table(title="testprism images")
    for column in ("image", "kind", "python", "packages", "MB", "created"):
        table.add_column(column, justify="right" if column == "MB" else "left", no_wrap=column in ("image", "created"))
    for info in images:
        packages = ", ".join(info.packages) if all_ or len(info.packages) <= 3 else f"{len(info.packages)} packages"
        if info.kind == "environment" and not info.packages:
            packages = "(none)"
        table.add_row(info.tag, info.kind, info.python, packages, f"{info.size_mb:.0f}", info.created)
    Console().print(table)


@images_app.command("prune")
def prune(
    keep: Annotated[Optional[list[Path]], typer.Option(
        help="keep the images this benchmark folder needs (repeatable)")] = None,
    base: Annotated[bool, typer.Option("--base", help="remove the base image too")] = False,
) -> None:
    """Remove environment images (all, or those no `--keep` benchmark uses), and run
    containers left by crashed processes."""
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.sandbox.docker.backend import DockerBackend
    from testprism.tasks.sandbox.docker.engine import api_client
    from testprism.tasks.sandbox.docker.images import prune_images

    kept = {i.spec.environment.key for folder in keep for i in load_benchmark(folder).instances.values()} if keep else None
    swept = DockerBackend.sweep(WorkPaths(default_work_root()))
    removed = prune_images(api_client(), keep=kept, include_base=base)
    for tag in removed:
        log.info("removed %s", tag)
    log.info("%d images removed, %d leftover containers removed", len(removed), swept)
