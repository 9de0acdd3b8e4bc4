"""An image in SWE-bench's official layout for one real SWE-bench Lite instance, built on
this machine (no registry has SWE-bench's images here).

`sympy__sympy-23191` (row `version` 1.11) with its program from the `sympy==1.10` source
release, the pairing ../shared/realdata/README.md and docs/swebench.md checked: every
FAIL_TO_PASS test fails before the reference and passes after it. What the official image
has, it has: the repository at `/testbed` as a git work tree with one commit, its
environment inside (a Python 3.11 virtualenv at `/opt/miniconda3/envs/testbed`, where
SWE-bench's conda env lives, with `mpmath==1.3.0` and pytest), `WORKDIR /testbed`, root as
its user, and the official name `swebench/sweb.eval.x86_64.<id>` with `__` written
`_1776_`. It is built `FROM` the local base image (`testprism-base:bookworm`), with PyPI as
the only network step, and kept on the engine: a second call finds it by name and builds
nothing.

Usable as a script too (`python -m tests.swebench_image`), which prints the time
the build took: CI's cost of the fixture.
"""

from __future__ import annotations

import io
import logging
import os
import ssl
import tarfile
import time

from testprism.tasks.sandbox.docker.base_image import DEFAULT_BASE, ensure_base_image
from testprism.tasks.sandbox.docker.engine import api_client

log = logging.getLogger(__name__)

INSTANCE_ID = "sympy__sympy-23191"
#: the source release standing in for the row's base_commit (last release before 1.11)
RELEASE = "sympy==1.10"
PACKAGES = ("mpmath==1.3.0", "pytest>=8,<10")
PROGRAM_IN_IMAGE = "/testbed"
ENV_PREFIX = "/opt/miniconda3/envs/testbed"


def official_name(instance_id: str) -> str:
    """SWE-bench's image name of an instance: `__` in the id becomes `_1776_` (docker
    repository names allow no double underscore), lower case."""
    return f"swebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_').lower()}:latest"


IMAGE = official_name(INSTANCE_ID)

DOCKERFILE = f"""\
ARG BASE
FROM ${{BASE}}
COPY pip-cert.pem /tmp/pip-cert.pem
RUN set -eux; \\
    export PIP_CERT=/tmp/pip-cert.pem; \\
    python3 -m venv {ENV_PREFIX}; \\
    {ENV_PREFIX}/bin/pip install --no-cache-dir --disable-pip-version-check --quiet {' '.join(f"'{p}'" for p in PACKAGES)}; \\
    {ENV_PREFIX}/bin/pip download --no-cache-dir --disable-pip-version-check --quiet --no-deps \\
        --no-binary :all: '{RELEASE}' -d /tmp/sdist; \\
    mkdir {PROGRAM_IN_IMAGE}; \\
    tar --no-same-owner --strip-components=1 -xzf /tmp/sdist/*.tar.gz -C {PROGRAM_IN_IMAGE}; \\
    rm -rf /tmp/sdist /tmp/pip-cert.pem /root/.cache; \\
    cd {PROGRAM_IN_IMAGE}; \\
    git init -q; \\
    git add -A -f; \\
    git -c user.name=swebench -c user.email=swebench@localhost commit -qm '{RELEASE}'
ENV PATH={ENV_PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR {PROGRAM_IN_IMAGE}
"""


def _certificates() -> bytes:
    """The CA bundle this machine's pip trusts (`PIP_CERT`: a TLS-inspecting proxy's root
    may be in it), which pip inside the build needs to reach PyPI the same way."""
    for path in (os.environ.get("PIP_CERT"), ssl.get_default_verify_paths().cafile, "/etc/ssl/certs/ca-certificates.crt"):
        if path and os.path.isfile(path):
            with open(path, "rb") as fh:
                return fh.read()
    return b""


def build_swebench_image(rebuild: bool = False) -> tuple[str, float]:
    """The image's id, and the seconds this call spent building it (0 when it was there).
    Built with the engine's builder from an in-memory context (the Dockerfile and the CA bundle),
    host network (PyPI), never pulling."""
    api = api_client(timeout=1800)
    try:
        if not rebuild:
            try:
                return api.inspect_image(IMAGE)["Id"], 0.0
            except Exception:  # noqa: BLE001 - docker.errors.ImageNotFound: build it below
                pass
        ensure_base_image(api, DEFAULT_BASE)
        context = io.BytesIO()
        with tarfile.open(fileobj=context, mode="w") as tar:
            for name, data in (("Dockerfile", DOCKERFILE.encode()), ("pip-cert.pem", _certificates())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        context.seek(0)
        started = time.monotonic()
        log.info("building %s (%s from PyPI, on %s)", IMAGE, RELEASE, DEFAULT_BASE)
        tail: list[str] = []
        for chunk in api.build(fileobj=context, custom_context=True, tag=IMAGE, buildargs={"BASE": DEFAULT_BASE},
                               network_mode="host", pull=False, rm=True, forcerm=True, decode=True, timeout=1800):
            if "error" in chunk:
                raise RuntimeError(f"{IMAGE} does not build: {chunk['error']}\n{''.join(tail)[-3000:]}")
            tail = (tail + [str(chunk.get("stream", ""))])[-60:]
        return api.inspect_image(IMAGE)["Id"], time.monotonic() - started
    finally:
        api.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    image_id, seconds = build_swebench_image(rebuild=True)
    log.info("%s = %s, built in %.1f s", IMAGE, image_id, seconds)
