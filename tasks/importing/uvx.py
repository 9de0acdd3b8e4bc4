"""`uvx` in a Harbor verifier, installed ahead (tasks/importing/harbor.py, run-time fetches).

terminal-bench-2's test.sh installs uv at run time (`curl -LsSf https://astral.sh/uv/…/install.sh
| sh`) and runs its checks as `uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest
…`: uvx resolves the tool and its `--with` packages over the network on every call, and `-p`
fetches a Python build (python-build-standalone, from GitHub). A run has no network, and the
build here reaches PyPI but not GitHub. So the import installs the tools ahead, at the
environment's build: a virtualenv at UVX_ROOT made with the image's own `python3`, the tools'
packages pip-installed in it from PyPI, and a `uvx` stand-in on PATH (/usr/local/bin) that
drops uvx's options and runs the tool from that virtualenv. test.sh stays as it is. Caveats,
in the import report: `-p` is not honoured (the tools run on the image's python3), and uv's own
installer line is not run at the build (it downloads from GitHub).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

#: the virtualenv the tools are installed in, inside the image
UVX_ROOT = "/opt/testprism/uvx"
#: uv's installer, which downloads uv from GitHub (unreachable here)
UV_INSTALLER = re.compile(r"astral\.sh/uv\b|github\.com/astral-sh/uv\b")
#: uvx options that take a value (the rest are flags)
_VALUED = frozenset({"-p", "--python", "-w", "--with", "--from", "--index-url", "--extra-index-url", "--index",
                     "--default-index", "--with-requirements", "--with-editable", "-c", "--constraints"})
_SHELL_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1"})
#: the stand-in, line by line: uvx's options dropped, `tool[@version]` run from UVX_ROOT
SHIM = (
    "#!/bin/sh",
    "# uvx stand-in written by `testprism import harbor`: the tools were installed at the image's build",
    'while [ $# -gt 0 ]; do case "$1" in ' + "|".join(sorted(_VALUED)) + ") shift 2;; -*) shift;; *) break;; "
    "esac; done",
    'tool="${1%%@*}"; shift',
    f'exec {UVX_ROOT}/bin/"$tool" "$@"',
)


@dataclass(frozen=True)
class UvxCall:
    """One `uvx` call of test.sh: the tool it runs and the packages it needs."""

    tool: str
    packages: tuple[str, ...]  #: the tool's own package (`--from`, else the tool) and `--with`'s
    python: str | None  #: `-p`/`--python`, not honoured


def parse_uvx(command: str) -> UvxCall | None:
    """The uvx call in `command` (one logical line of test.sh), None when it has none;
    ValueError when the line cannot be read as one (no tool named)."""
    try:
        tokens = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"not a shell line: {exc}") from None
    if "uvx" not in tokens:
        return None
    rest = tokens[tokens.index("uvx") + 1:]
    options: dict[str, list[str]] = {}
    while rest and rest[0].startswith("-"):
        name, _, inline = rest.pop(0).partition("=")
        if name in _VALUED and not inline:
            if not rest:
                raise ValueError(f"uvx option {name} has no value")
            inline = rest.pop(0)
        options.setdefault(name, []).append(inline)
    if not rest or rest[0] in _SHELL_OPERATORS:
        raise ValueError("uvx names no tool to run")
    tool = rest[0]
    name, _, version = tool.partition("@")
    origin = options.get("--from", [f"{name}=={version}" if version else name])
    withs = options.get("-w", []) + options.get("--with", [])
    python = (options.get("-p") or options.get("--python") or [None])[-1]
    return UvxCall(tool=name, packages=tuple(origin + withs), python=python)


def install_step(calls: Iterable[UvxCall]) -> str:
    """The Dockerfile `RUN` step that installs every call's packages into UVX_ROOT and puts
    the uvx stand-in on PATH."""
    packages = sorted({p for call in calls for p in call.packages})
    shim = " ".join(shlex.quote(line) for line in SHIM)
    return (f"RUN python3 -m venv {UVX_ROOT} "
            f"&& {UVX_ROOT}/bin/pip install --no-cache-dir --disable-pip-version-check "
            f"{' '.join(shlex.quote(p) for p in packages)} "
            f"&& printf '%s\\n' {shim} > /usr/local/bin/uvx && chmod 755 /usr/local/bin/uvx")
