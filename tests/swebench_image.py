"""Images in SWE-bench's official layout for real SWE-bench Lite instances, built on this
machine (no registry has SWE-bench's images here).

Each with its program from a PyPI source release, the pairings ../shared/realdata/README.md
and docs/swebench.md checked (every FAIL_TO_PASS test fails before the reference and passes
after it): `sympy__sympy-23191` (row `version` 1.11) on `sympy==1.10`, and
`sympy__sympy-18189` (1.6) on `sympy==1.5.1`. What the official image has, each has: the
repository at `/testbed` as a git work tree with one commit, its environment inside (a
Python 3.11 virtualenv at `/opt/miniconda3/envs/testbed`, where SWE-bench's conda env lives,
with `mpmath==1.3.0` and pytest), `bin/test` (sympy's own runner script, which a source
release leaves out: here a stand-in taking the options SWE-bench's command gives it, `-C`
and `--verbose`, and calling the same `sympy.test`), `WORKDIR /testbed`, root as its user,
and the official name `swebench/sweb.eval.x86_64.<id>` with `__` written `_1776_`. Built
`FROM` the local base image (`testprism-base:bookworm`), with PyPI as the only network
step, and kept on the engine: a second call finds it by name and builds nothing.

Usable as a script too (`python -m tests.swebench_image [INSTANCE_ID]`), which prints the
time the build took: CI's cost of the fixture.
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
#: instance id -> the source release standing in for the row's base_commit (the last
#: release before the row's version series)
RELEASES = {"sympy__sympy-23191": "sympy==1.10", "sympy__sympy-18189": "sympy==1.5.1", "sympy__sympy-18057": "sympy==1.5.1",
            "sympy__sympy-18199": "sympy==1.5.1", "sympy__sympy-18532": "sympy==1.5.1"}
PACKAGES = ("mpmath==1.3.0", "pytest>=8,<10")
PROGRAM_IN_IMAGE = "/testbed"
ENV_PREFIX = "/opt/miniconda3/envs/testbed"


def official_name(instance_id: str) -> str:
    """SWE-bench's image name of an instance: `__` in the id becomes `_1776_` (docker
    repository names allow no double underscore), lower case."""
    return f"swebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_').lower()}:latest"


IMAGE = official_name(INSTANCE_ID)

#: sympy's bin/test as SWE-bench calls it (`bin/test -C --verbose FILES`): -C turns the cache
#: off, the rest are paths; the runner and its log are sympy's own (`sympy.test`)
BIN_TEST = """#!/usr/bin/env python
import os, sys
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(__file__), "..")))  # as sympy's: its own tree
args = sys.argv[1:]
if "-C" in args or "--no-cache" in args:
    os.environ["SYMPY_USE_CACHE"] = "no"
import sympy
paths = [a for a in args if not a.startswith("-")]
sys.exit(not sympy.test(*paths, verbose="--verbose" in args or "-v" in args, colors=False))
"""


def dockerfile(release: str) -> str:
    """The image's Dockerfile: `release`'s source at /testbed, committed, its environment."""
    return f"""\
ARG BASE
FROM ${{BASE}}
COPY pip-cert.pem /tmp/pip-cert.pem
COPY bin-test /tmp/bin-test
RUN set -eux; \\
    export PIP_CERT=/tmp/pip-cert.pem; \\
    python3 -m venv {ENV_PREFIX}; \\
    {ENV_PREFIX}/bin/pip install --no-cache-dir --disable-pip-version-check --quiet {' '.join(f"'{p}'" for p in PACKAGES)}; \\
    {ENV_PREFIX}/bin/pip download --no-cache-dir --disable-pip-version-check --quiet --no-deps \\
        --no-binary :all: '{release}' -d /tmp/sdist; \\
    mkdir {PROGRAM_IN_IMAGE}; \\
    tar --no-same-owner --strip-components=1 -xzf /tmp/sdist/*.tar.gz -C {PROGRAM_IN_IMAGE}; \\
    rm -rf /tmp/sdist /tmp/pip-cert.pem /root/.cache; \\
    mkdir -p {PROGRAM_IN_IMAGE}/bin; \\
    [ -e {PROGRAM_IN_IMAGE}/bin/test ] || cp /tmp/bin-test {PROGRAM_IN_IMAGE}/bin/test; \\
    chmod 755 {PROGRAM_IN_IMAGE}/bin/test; rm /tmp/bin-test; \\
    cd {PROGRAM_IN_IMAGE}; \\
    git init -q; \\
    git add -A -f; \\
    git -c user.name=swebench -c user.email=swebench@localhost commit -qm '{release}'
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


def build_swebench_image(rebuild: bool = False, instance_id: str = INSTANCE_ID) -> tuple[str, float]:
    """The image's id, and the seconds this call spent building it (0 when it was there).
    Built with the engine's builder from an in-memory context (the Dockerfile, bin/test and
    the CA bundle), host network (PyPI), never pulling."""
    name, release = official_name(instance_id), RELEASES[instance_id]
    api = api_client(timeout=1800)
    try:
        if not rebuild:
            try:
                return api.inspect_image(name)["Id"], 0.0
            except Exception:  # noqa: BLE001 - docker.errors.ImageNotFound: build it below
                pass
        ensure_base_image(api, DEFAULT_BASE)
        context = io.BytesIO()
        with tarfile.open(fileobj=context, mode="w") as tar:
            for member, data in (("Dockerfile", dockerfile(release).encode()), ("pip-cert.pem", _certificates()),
                                 ("bin-test", BIN_TEST.encode())):
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        context.seek(0)
        started = time.monotonic()
        log.info("building %s (%s from PyPI, on %s)", name, release, DEFAULT_BASE)
        tail: list[str] = []
        for chunk in api.build(fileobj=context, custom_context=True, tag=name, buildargs={"BASE": DEFAULT_BASE},
                               network_mode="host", pull=False, rm=True, forcerm=True, decode=True, timeout=1800):
            if "error" in chunk:
                raise RuntimeError(f"{name} does not build: {chunk['error']}\n{''.join(tail)[-3000:]}")
            tail = (tail + [str(chunk.get("stream", ""))])[-60:]
        return api.inspect_image(name)["Id"], time.monotonic() - started
    finally:
        api.close()


if __name__ == "__main__":
    import sys

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    chosen = sys.argv[1] if len(sys.argv) > 1 else INSTANCE_ID
    image_id, seconds = build_swebench_image(rebuild=True, instance_id=chosen)
    log.info("%s = %s, built in %.1f s", official_name(chosen), image_id, seconds)
