"""The /etc/hosts a run of an image gets: Docker's loopback lines.

An image holds /etc/hosts empty: the engine writes and mounts one in each container it networks.
A run has no network, under `local` (bubblewrap on the image's exported root) or under `docker`
(its containers are made with networking disabled, so the engine mounts none), and then
`localhost` resolves to nothing: Vite's server, which Vitest starts, looks it up and stops
(`getaddrinfo EAI_AGAIN localhost`, vuejs/core's real row, issue 40). Both backends bind this
file there instead, read-only, as the engine would have."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from testprism.tasks.model.workdir import WorkPaths

#: what Docker writes into a container's /etc/hosts for the loopback interface
LOOPBACK_HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def loopback_hosts(work: WorkPaths) -> Path:
    """The work area's copy of LOOPBACK_HOSTS, written once (renamed into place, so a
    concurrent run never reads half of it)."""
    target = work.root / "hosts"
    if not target.is_file() or target.read_text() != LOOPBACK_HOSTS:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".hosts.")
        with os.fdopen(handle, "w") as stream:
            stream.write(LOOPBACK_HOSTS)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    return target
