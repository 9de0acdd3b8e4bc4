"""Which runs the warm route takes (tasks/sandbox/warm.py), read from the run alone: its
command, its entry script, and what its files run before they import the program.

Which runs are warm (`admitted`), everything else runs cold as before:
- every state of the replay alike (warming only some would tell a run which kind its state
  is), except a state whose warm process could not start, import or freeze clean, which
  depends only on its program's tree;
- the command is `[NAME=value ...] python -m pytest <arguments>`, nothing a shell would
  expand but `$TESTPRISM_JUNIT` (`pytest_command`), or an entry `bash tmp/<script>` whose
  script is that one command and `set -u`/`-e` (`script_command`: the bundled suites'
  `run_tests.sh`);
- the environment is a virtualenv (not an image), the backend has bubblewrap, run cgroups
  and layered programs, and the run has no model channel, extra mounts or tree export;
- the state's warm process started and imported its packages (`WarmProcess.start`), and no
  pytest plugin is installed beside pytest (an entry-point plugin loads before the program
  in a cold run, after it in a warm one), and `-p` loads none;
- import order cannot tell (`import_order_risk`): no Python file the suite brings or the
  state has as a conftest runs, before its first import of a preloaded package, anything
  but imports and constant assignments, except setting a `sys` attribute or an environment
  variable that no file the warm process imported mentions.

"""

from __future__ import annotations

import ast
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from testprism.tasks.sandbox.base import RunRequest
from testprism.tasks.sandbox.nofollow import read_file

#: the most of one suite or conftest file the import-order check reads
_READ_LIMIT = 4 * 1024 * 1024
_PYTEST = re.compile(r"(?:\S*/)?python(?:3(?:\.\d+)?)?")
_JUNIT = ("$TESTPRISM_JUNIT", "${TESTPRISM_JUNIT}")
_SHELL = set("$`*?[]{}~;&|<>()!\\\"'#")


@dataclass(frozen=True)
class PytestCommand:
    """A command the warm route can run in-process: its variables, and pytest's arguments."""

    assignments: tuple[tuple[str, str], ...]
    arguments: tuple[str, ...]
    #: the entry script it came from (`script_command`), None for a command given as it is
    script: str | None = None


def pytest_command(command: str) -> PytestCommand | None:
    """`command` as `[NAME=value ...] python -m pytest <args>`, or None when it is anything
    else a shell would treat otherwise (operators, expansions, globs, quotes left after
    splitting): those run cold."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    assignments = []
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        if set(value) & _SHELL - {","}:
            return None
        assignments.append((name, value))
    if len(words) < 3 or not _PYTEST.fullmatch(words[0]) or words[1:3] != ["-m", "pytest"]:
        return None
    arguments = []
    for word in words[3:]:
        for junit in _JUNIT:
            word = word.replace(junit, "\0")
        if set(word) & _SHELL:
            return None
        arguments.append(word)
    if any(a == "-p" and not b.startswith("no:") for a, b in zip(arguments, arguments[1:] + [""])):
        return None
    return PytestCommand(tuple(assignments), tuple(arguments))


#: the lines a suite's entry script may hold beside its one pytest command
_SCRIPT_SETTINGS = {"set -u", "set -e", "set -eu", "set -ue"}


def script_command(request: RunRequest) -> PytestCommand | None:
    """The pytest command of an entry `bash tmp/<script>` whose script (the suite's own file,
    as the harness has it) holds nothing but comments, `set -u`/`-e` and that one command
    after `exec` (variables set before `exec` or after it, before `python`): the bundled
    suites' `run_tests.sh`. None for any other entry."""
    words = request.command.split()
    if len(words) != 2 or words[0] != "bash" or not words[1].startswith("tmp/") or request.suite_folder is None:
        return None
    script = script_text(request)
    if script is None:
        return None
    body = [line.strip() for line in script.splitlines()]
    body = [line for line in body if line and not line.startswith("#") and line not in _SCRIPT_SETTINGS]
    # bash execs it (`[NAME=value ...] exec python -m pytest ...`): its variables are then a
    # command line's; `exec NAME=value ...` is not that (bash finds no command of that name: 127)
    found = re.fullmatch(r"((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)exec\s+(.*)", body[0]) if len(body) == 1 else None
    if found is None or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", found.group(2)):
        return None
    command = pytest_command(found.group(1) + found.group(2))
    return None if command is None else PytestCommand(command.assignments, command.arguments, script=words[1])


def script_text(request: RunRequest, program: Path | None = None) -> str | None:
    """The entry script's text: the suite's file, or (`program`) the filled workspace's."""
    rel = request.command.split()[1].removeprefix("tmp/")
    if rel not in request.suite_files or request.suite_folder is None:
        return None
    return _read(program / "tmp" if program is not None else request.suite_folder, rel)


def packages_of(tree: Path) -> tuple[str, ...]:
    """The program's top-level packages, from the state's tree alone: folders at its root
    with an `__init__.py` whose name is an identifier and not a test folder's."""
    return tuple(sorted(entry.name for entry in tree.iterdir()
                        if entry.is_dir() and not entry.is_symlink() and entry.name.isidentifier()
                        and not entry.name.startswith("test") and (entry / "__init__.py").is_file()))


def import_order_risk(sources: dict[str, str], packages: tuple[str, ...], preloaded: list[str]) -> str | None:
    """Why running these files after the program was imported could differ from a cold run,
    or None. `sources`: each Python file the suite brings or pytest loads before the tests
    (conftests), by name; `preloaded`: the text of every program file the warm process
    imported. Before a file's first import of a preloaded package (all of its top level when
    it has none), only imports, docstrings and constant assignments are neutral; setting a
    `sys` attribute or an environment variable is neutral when no preloaded file mentions
    its name; anything else is a risk."""
    for name, source in sources.items():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # pytest reports it the same way either route
        for statement in tree.body:
            if _imports_preloaded(statement, packages):
                break
            risk = _risk(statement, preloaded)
            if risk:
                return f"{name}:{statement.lineno}: {risk} before the program's import"
    return None


def _imports_preloaded(statement: ast.stmt, packages: tuple[str, ...]) -> bool:
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] in packages for alias in statement.names)
    return isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] in packages


def _risk(statement: ast.stmt, preloaded: list[str]) -> str | None:
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return None
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not statement.decorator_list:
        return None  # a definition runs nothing of its body at import; a decorator is a call
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return None
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        value = statement.value
        if all(isinstance(t, ast.Name) for t in targets) and (value is None or _literal(value)):
            return None
        names = [_global_name(t) for t in targets]
        if all(names) and (value is None or _literal(value)):
            mentioned = [n for n in names if any(n in text for text in preloaded)]
            return f"sets {', '.join(mentioned)}, which the program reads," if mentioned else None
    return f"line runs code ({type(statement).__name__})"


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _global_name(target: ast.expr) -> str | None:
    """`X` of `sys.X = …` or of `os.environ["X"] = …`, else None."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "sys":
        return target.attr
    if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
            and target.value.attr == "environ" and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)):
        return target.slice.value
    return None


def suite_sources(request: RunRequest, program: Path) -> dict[str, str]:
    """The Python files a run's pytest may load before its tests import the program, as the
    harness filled them (never after the run), read without following a link: the suite's
    files, what its test patch touched, and every conftest.py of the program."""
    names = {f"tmp/{rel}" for rel in request.suite_files if rel.endswith(".py")}
    if request.suite_patch is not None:
        touched = re.findall(rb"^\+\+\+ b/(\S+\.py)\s*$", request.suite_patch, re.MULTILINE)
        names |= {name.decode(errors="replace") for name in touched}
    for folder, dirnames, filenames in os.walk(program):  # never into a linked folder
        if "conftest.py" in filenames:
            names.add(os.path.relpath(os.path.join(folder, "conftest.py"), program))
    found = {}
    for name in names:
        text = _read(program, name)
        if text is not None:
            found[name] = text
    return found


def _read(root: Path, name: str) -> str | None:
    """The text of `root/name`, never through a link (a tree or a suite may hold links
    out of it) and never above `root`; None when it is not such a file."""
    parts = Path(name).parts
    if ".." in parts or Path(name).is_absolute():
        return None
    data = read_file(root, parts, _READ_LIMIT)
    return None if data is None else data.decode(errors="replace")
