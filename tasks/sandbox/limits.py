"""The resource limits of one run, apart from base.py (the backends' interface, the
benchmark model behind it): the stages' settings take their defaults from here, and the
CLI that shows those defaults in its `--help` must not pay for the sandbox's import."""

from __future__ import annotations

from dataclasses import dataclass, fields

from testprism.tasks.model.hashing import digest


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run. Part of the execution policy and so of the run key."""

    timeout_s: float = 300.0
    memory_mb: int = 4096
    processes: int = 256
    file_size_mb: int = 512
    #: what a run may write: its workspace's space beyond the state's tree, and its tmpfs
    #: folders (/tmp, /var/tmp, /dev/shm), each bounded to this
    disk_mb: int = 4096
    output_bytes: int = 8 * 1024 * 1024
    tail_bytes: int = 16 * 1024
    #: the CPUs the run may use at once, a quota over all its processes (Harbor's task.toml
    #: `cpus`); None: no quota of its own, runs share the CPU as equals (cgroup.py)
    cpus: float | None = None

    @property
    def key(self) -> str:
        """Each value written as its field's type, so equal limits have one key whatever
        the caller passed: `timeout_s=120` and `timeout_s=120.0` (str() told them apart).
        The declared types are what the defaults and the CLI already used, so those keys,
        and the stores keyed by them, are unchanged; only a key made with an int timeout
        (or an integral float count) changes, once. A limit that is unset (None) is left
        out, so adding one keeps every existing key."""
        return digest("limits", *(_canonical(value, f.type) for f in fields(self)
                                  if (value := getattr(self, f.name)) is not None))


def _canonical(value: float, declared: str) -> str:
    """`value` as its declared type ("float" or "int", annotations being strings here)
    would print it; a count that is not a whole number stays as given."""
    if declared.startswith("float"):
        return str(float(value))
    return str(int(value)) if float(value).is_integer() else str(value)
