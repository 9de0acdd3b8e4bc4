"""Environment images: the base image, the environment's Dockerfile built `FROM` it when it
has one, plus a virtualenv at `/opt/testprism/envs/<key>` with the environment's packages
when it names a Python; built once (the only steps with network) and tagged
`testprism-env:<key>`, where the key hashes the base image's layers and the
EnvironmentSpec (a Dockerfile's whole build context by content)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.hashing import digest
from testprism.storage.owner import start_time
from testprism.tasks.sandbox.base import SandboxError
from testprism.tasks.sandbox.docker.dockerfile_from import MappedFroms, write_mapped
from testprism.tasks.sandbox.docker.engine import BUILD_PREFIX, LABEL, _errors
from testprism.tasks.sandbox.environment import EnvironmentBuildError

if TYPE_CHECKING:
    from docker import APIClient

log = logging.getLogger(__name__)

ENV_REPOSITORY = "testprism-env"
ENV_ROOT = PurePosixPath("/opt/testprism/envs")
#: bump when the image recipe below changes: every environment image is then rebuilt
RECIPE = "2"
BUILD_TIMEOUT_S = 1800
#: Debian's folder of the CA certificates added to this machine's trust (a TLS-inspecting
#: proxy's root, say). A Dockerfile's build gets them as the build argument `EXTRA_CA` (PEM
#: text) to trust while its own clients (Maven, cargo) reach the registries, as pip's
#: builds get PIP_CERT; the base image has only Debian's own certificates.
EXTRA_CA_FOLDER = Path("/usr/local/share/ca-certificates")


def extra_certificates(folder: Path = EXTRA_CA_FOLDER) -> str:
    """The PEM text of the machine's added CA certificates ('' when it has none)."""
    if not folder.is_dir():
        return ""
    return "".join(path.read_text() for path in sorted(folder.rglob("*.crt")) if path.is_file())


def environment_image_key(base: dict, spec: EnvironmentSpec, froms: MappedFroms | None = None) -> str:
    """Content key of an environment image: the recipe, the base image's layers (stable
    across re-imports of the same root filesystem), the EnvironmentSpec and, when
    TESTPRISM_IMAGE_MAP stands in for its Dockerfile's FROM images, their ids."""
    layers = base.get("RootFS", {}).get("Layers") or [base["Id"]]
    mapped = [f"from {name}={image_id}" for name, image_id in sorted(froms.ids.items())] if froms else []
    return digest("docker-env", RECIPE, *layers, spec.key, *mapped)


def environment_tag(key: str) -> str:
    return f"{ENV_REPOSITORY}:{key}"


def _pip_settings() -> tuple[list[str], list[str]]:
    """This machine's pip configuration as `export PIP_...` lines for the build script,
    and the local files and folders it names (mounted read-only at the same paths)."""
    settings: dict[str, str] = {}
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60,
    )
    for line in listed.stdout.splitlines():  # e.g. global.extra-index-url='file:///opt/pypi/simple'
        name, _, value = line.partition("=")
        option = name.rsplit(".", 1)[-1]
        if option and value:
            settings["PIP_" + option.upper().replace("-", "_")] = value.strip().strip("'\"")
    for name, value in os.environ.items():
        if name.startswith("PIP_") or name.upper() in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
            settings[name] = value
    for name in ("PIP_REQUIRE_VIRTUALENV", "PIP_USER", "PIP_TARGET", "PIP_PREFIX", "PIP_PYTHON"):
        settings.pop(name, None)
    mounts: set[str] = set()
    for name, value in settings.items():
        for word in value.split():
            path = word.removeprefix("file://").rstrip("/")
            if not path.startswith("/") or not os.path.exists(path):
                continue
            if name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
                path = os.path.dirname(path)  # a local index links to files beside simple/
            mounts.add(path)
    exports = [f"export {name}={shlex.quote(value)}" for name, value in sorted(settings.items())]
    return exports, sorted(mounts)


def build_dockerfile_image(api: APIClient, base_name: str, spec: EnvironmentSpec, tag: str,
                           froms: MappedFroms | None = None) -> dict:
    """Build the environment's Dockerfile with its folder as the context and `BASE` = the
    base image (the Dockerfile starts `ARG BASE` / `FROM ${BASE}`), networked like every
    environment build (host network: the package registries this machine reaches), never
    pulling: there is no registry. `froms`: its FROM images the image map stands in for
    (tasks/sandbox/docker/dockerfile_from.py), built from a rewritten copy of the
    Dockerfile. Tagged `tag`; returns the image's inspection."""
    assert spec.context is not None and spec.dockerfile is not None
    with tempfile.TemporaryDirectory(prefix="testprism-dockerfile-") as scratch:
        rewritten = write_mapped(froms, Path(scratch)) if froms else None
        return _build(api, base_name, spec, tag, str(rewritten) if rewritten else PurePosixPath(spec.dockerfile).name)


def _build(api: APIClient, base_name: str, spec: EnvironmentSpec, tag: str, dockerfile: str) -> dict:
    errors = _errors()
    assert spec.context is not None and spec.dockerfile is not None
    labels = {LABEL: "1", "testprism.kind": "environment", "testprism.environment": spec.key,
              "testprism.python": spec.python or "", "testprism.packages": json.dumps(list(spec.packages)),
              "testprism.base": base_name, "testprism.recipe": RECIPE}
    log.info("building docker image %s from %s", tag, spec.context / PurePosixPath(spec.dockerfile).name)
    tail: list[str] = []
    try:
        for chunk in api.build(path=str(spec.context), dockerfile=dockerfile, tag=tag,
                               buildargs={"BASE": base_name, "EXTRA_CA": extra_certificates()}, network_mode="host", pull=False, rm=True,
                               forcerm=True, labels=labels, decode=True, timeout=BUILD_TIMEOUT_S):
            if "error" in chunk:
                tail.append(str(chunk["error"]))
                raise EnvironmentBuildError(f"environment.dockerfile: {spec.dockerfile} does not build:\n"
                                            + "".join(tail)[-3000:])
            tail = (tail + [str(chunk.get("stream", ""))])[-80:]
        return api.inspect_image(tag)
    except errors.BuildError as exc:
        raise EnvironmentBuildError(f"environment.dockerfile: {spec.dockerfile} does not build: {exc}") from exc
    except errors.APIError as exc:
        raise SandboxError(f"docker: the build of {spec.dockerfile} broke: {exc}") from exc


def build_environment_image(api: APIClient, base_name: str, base: dict, spec: EnvironmentSpec, key: str) -> None:
    """Build `testprism-env:<key>`: a container from the base image (network: host, the
    only networked step) creates the venv and pip-installs the packages with this
    machine's pip configuration; the container is committed and removed."""
    errors = _errors()
    venv = ENV_ROOT / key
    exports, mounts = _pip_settings()
    install = ""
    if spec.packages:
        install = (
            f'"$py" -m venv /tmp/pip-tool\n'
            f"/tmp/pip-tool/bin/pip --python {venv}/bin/python install --no-cache-dir "
            f"--disable-pip-version-check --quiet {' '.join(shlex.quote(p) for p in spec.packages)}\n"
            "rm -rf /tmp/pip-tool\n"
        )
    script = "\n".join([
        "set -eu", *exports,
        f"py=$(command -v python{spec.python} || true)",
        f'[ -n "$py" ] || {{ echo "no python{spec.python} in the base image" >&2; exit 3; }}',
        f'"$py" -m venv --without-pip {venv}',
        install + f"rm -rf /root/.cache; chmod -R a+rX {ENV_ROOT}",
    ])
    labels = {LABEL: "1", "testprism.kind": "environment", "testprism.environment": spec.key,
              "testprism.python": spec.python, "testprism.packages": json.dumps(list(spec.packages)),
              "testprism.base": base_name, "testprism.recipe": RECIPE}
    log.info("building docker image %s (python %s: %s)", environment_tag(key), spec.python, ", ".join(spec.packages))
    # No labels of its own: a commit would copy them into the image and so into every
    # container made from it. The name says whose it is, for sweep().
    pid = os.getpid()
    container = api.create_container(
        base["Id"], command=["bash", "-c", script], user="0", name=f"{BUILD_PREFIX}{pid}.{start_time(pid)}-{key[:12]}",
        host_config=api.create_host_config(
            network_mode="host", binds={m: {"bind": m, "mode": "ro"} for m in mounts},
        ),
    )["Id"]
    try:
        api.start(container)
        try:
            status = api.wait(container, timeout=BUILD_TIMEOUT_S)["StatusCode"]
        except Exception as exc:  # requests' ReadTimeout or a broken connection
            raise EnvironmentBuildError(f"environment {spec.key}: image build did not finish: {exc}") from exc
        if status != 0:
            tail = api.logs(container, tail=60).decode(errors="replace")
            if status == 3:
                raise EnvironmentBuildError(
                    f"environment.python: the base image {base_name} has no python{spec.python}; set "
                    f"TESTPRISM_DOCKER_BASE to a base image that has it"
                )
            raise EnvironmentBuildError(f"environment {spec.key}: image build failed (exit {status}):\n{tail[-3000:]}")
        api.commit(
            container, repository=ENV_REPOSITORY, tag=key,
            conf={"Labels": labels, "Cmd": ["bash"], "User": "", "WorkingDir": "",
                  "Env": ["LANG=C.UTF-8", f"PATH={venv}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
        )
    except errors.APIError as exc:
        raise SandboxError(f"docker: image build of environment {spec.key} broke: {exc}") from exc
    finally:
        with contextlib.suppress(errors.APIError):
            api.remove_container(container, force=True)
