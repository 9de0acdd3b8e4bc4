"""A Harbor task's `task.toml`, every field of Harbor's schema read, none dropped silently.

Harbor's schema (harbor src/harbor/models/task/config.py: TaskConfig, VerifierConfig,
AgentConfig, EnvironmentConfig, SolutionConfig) is mirrored field by field, with Harbor's
defaults. Each field is honoured, or refuses the task, or is a caveat of the import's
report naming it (`config_notes`); a field Harbor does not define is a caveat too:

- honoured: `[verifier] timeout_sec` and `env` (set for test.sh), `[agent] timeout_sec`,
  `[environment] cpus`, `memory_mb`/`memory`, `storage_mb`/`storage` (`[limits]`) and `env`
  (the instance's `[environment] variables`), `[solution] env` (set for solve.sh);
  informational, kept as they are: `schema_version`/`version`, `[task]`, `[metadata]`
  (its language read), `source`; `allow_internet = false` and `network_mode = "no-network"`
  (no run has the network);
- refusing the task: checks that need the network at check time (`[verifier]
  network_mode` public or an allowlist), a value Harbor resolves from the host's
  environment at run time (`${VAR}` in any `env`: a secret no run is given), GPUs;
- caveats: the environment's and the agent's network (`allow_internet = true`,
  `network_mode`, `allowed_hosts`: runs here have none), `build_timeout_sec` (builds are
  bounded by testprism's own), `docker_image` (the Dockerfile is built instead),
  `healthcheck`, `mcp_servers`, `skills_dir` (nothing is started for the agent), a
  verifier's or agent's `user` (tasks/sandbox/local.py `_image_user`: the image's USER).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from testprism.tasks.importing.rows import RowError
from testprism.tasks.sandbox.docker.environment_image import BUILD_TIMEOUT_S

#: Harbor's template of a value resolved from the host's environment (`${VAR}`, `${VAR:-d}`)
HOST_VALUE = re.compile(r"\$\{[^}]*\}")
#: a variable's name as a shell takes it
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: network modes (Harbor's NetworkMode) under which a phase reaches the network
REACHING = ("public", "allowlist")


class _Section(BaseModel):
    #: a field Harbor does not define is kept to be named (`model_extra`), not dropped
    model_config = ConfigDict(extra="allow")


class _Verifier(_Section):
    timeout_sec: float = Field(600.0, gt=0)
    env: dict[str, str] = {}
    user: str | int | None = None
    network_mode: str | None = None
    allowed_hosts: list[str] = []


class _Agent(_Section):
    timeout_sec: float | None = Field(None, gt=0)
    user: str | int | None = None
    network_mode: str | None = None
    allowed_hosts: list[str] = []


class _Environment(_Section):
    build_timeout_sec: float = Field(600.0, gt=0)
    docker_image: str | None = None
    cpus: int | None = Field(None, gt=0)
    memory_mb: int = Field(2048, gt=0)
    storage_mb: int = Field(10240, gt=0)
    #: Harbor's older size strings ("2G", "512M"), which its loader maps onto the _mb fields
    memory: str | None = Field(None, pattern=r"^\s*\d+(\.\d+)?\s*[GgMmKk]\s*$")
    storage: str | None = Field(None, pattern=r"^\s*\d+(\.\d+)?\s*[GgMmKk]\s*$")
    gpus: int = Field(0, ge=0)
    gpu_types: list[str] | None = None
    allow_internet: bool = True
    network_mode: str | None = None
    allowed_hosts: list[str] = []
    mcp_servers: list[dict[str, Any]] = []
    env: dict[str, str] = {}
    skills_dir: str | None = None
    healthcheck: dict[str, Any] | None = None


class _Solution(_Section):
    env: dict[str, str] = {}


class TaskConfig(_Section):
    """task.toml as Harbor's schema has it, with its defaults (module docstring)."""

    schema_version: str = "1.1"
    version: str | None = None  #: the schema version's older name
    task: dict[str, Any] | None = None  #: the registry's package information
    source: str | None = None
    verifier: _Verifier = _Verifier()
    agent: _Agent = _Agent()
    environment: _Environment = _Environment()
    solution: _Solution = _Solution()
    #: free-form (Harbor's `metadata: dict[str, Any]`): a `language` or language `tags` are read
    metadata: dict[str, Any] = {}

    def limits(self) -> dict[str, object]:
        """`[limits]` of the instance."""
        env = self.environment
        table: dict[str, object] = {
            "timeout_s": self.verifier.timeout_sec,
            "memory_mb": _megabytes(env.memory) if env.memory else env.memory_mb,
            "disk_mb": _megabytes(env.storage) if env.storage else env.storage_mb,
        }
        if self.agent.timeout_sec is not None:
            table["agent_timeout_s"] = self.agent.timeout_sec
        if env.cpus is not None:
            table["cpus"] = env.cpus
        return table


def _megabytes(size: str) -> int:
    """Harbor's `_parse_size_to_mb`: "2G" → 2048, "512M" → 512, "2048K" → 2."""
    text = size.strip().upper()
    scale = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}[text[-1]]
    return max(1, int(float(text[:-1]) * scale))


def literal_env(values: dict[str, str], field: str) -> dict[str, str]:
    """An `env` table as a run gets it; RowError naming the variable when its name is no
    shell variable's, or its value is resolved from the host (`${VAR}`: Harbor reads the
    harness's own environment, where a secret or an API key lives; no run is given one)."""
    for name, value in values.items():
        if not VARIABLE_NAME.match(name):
            raise RowError(f"task.toml: {field}.{name}", "not a variable name")
        if HOST_VALUE.search(value):
            raise RowError(f"task.toml: {field}.{name}", f"{value!r} is resolved from the host's environment at run "
                                                         "time (a secret, an API key): no run is given the harness's "
                                                         "environment, so the task cannot run here")
    return dict(values)


def check_config(config: TaskConfig) -> None:
    """RowError naming the field when the task cannot run here (module docstring)."""
    verifier = config.verifier
    if verifier.network_mode in REACHING or verifier.allowed_hosts:
        raise RowError("task.toml: verifier.network_mode", f"{verifier.network_mode or 'allowlist'}: the checks need "
                                                           "the network at check time, and no run has it")
    if config.environment.gpus:
        raise RowError("task.toml: environment.gpus", f"{config.environment.gpus}: no run has a GPU")
    literal_env(verifier.env, "verifier.env")
    literal_env(config.environment.env, "environment.env")
    literal_env(config.solution.env, "solution.env")


def _unknown(section: BaseModel, prefix: str) -> list[tuple[str, str]]:
    return [(f"{prefix}{name}", "not a field of Harbor's task.toml (harbor src/harbor/models/task/config.py): not read")
            for name in sorted(section.model_extra or {})]


def config_notes(config: TaskConfig) -> list[tuple[str, str]]:
    """(field, why) for each field set that is not honoured as Harbor honours it (module
    docstring), for the import's report."""
    env, agent, verifier = config.environment, config.agent, config.verifier
    set_env = env.model_fields_set
    notes = _unknown(config, "") + _unknown(verifier, "verifier.") + _unknown(agent, "agent.")
    notes += _unknown(env, "environment.") + _unknown(config.solution, "solution.")
    no_network = "runs here have no network: what reaches it fails (the gate shows a check that does)"
    if "allow_internet" in set_env and env.allow_internet:
        notes.append(("environment.allow_internet", f"true: {no_network}"))
    if env.network_mode in REACHING or env.allowed_hosts:
        notes.append(("environment.network_mode", f"{env.network_mode or 'allowlist'}: {no_network}"))
    if agent.network_mode in REACHING or agent.allowed_hosts:
        notes.append(("agent.network_mode", f"{agent.network_mode or 'allowlist'}: a generation run reaches only "
                                            "its model channel"))
    if "build_timeout_sec" in set_env:
        notes.append(("environment.build_timeout_sec", f"{env.build_timeout_sec:g} s: not honoured; an environment's "
                                                       f"build is bounded by testprism's {BUILD_TIMEOUT_S} s"))
    if env.docker_image:
        notes.append(("environment.docker_image", f"{env.docker_image}: not used; the task's Dockerfile is built"))
    for name in ("healthcheck", "mcp_servers", "skills_dir"):
        if name in set_env and getattr(env, name):
            notes.append((f"environment.{name}", "not provided: testprism starts nothing beside a run"))
    for phase, user in (("verifier", verifier.user), ("agent", agent.user)):
        if user is not None:
            notes.append((f"{phase}.user", f"{user!r}: not honoured; a run is the image's USER under local, an "
                                           "unprivileged uid of its own under docker (docs/benchmark-format.md)"))
    return notes
