"""How the benchmarks that ship one image per instance test a row, kept as data.

SWE-bench keeps its per-repository test commands and log parsers in Python dictionaries;
here they are the TOML tables of `image_specs/` (their headers say which published files
and commits they were read from), validated by pydantic, so that a repository is added or
corrected by editing data (or passing `--specs FILE` over them), never code:

- `swebench.toml`: SWE-bench / SWT-bench / Verified / Multilingual, per repository and
  version: the test command, the commands before it, and SWE-bench's log parser, mapped to
  testprism's by `[parsers]`;
- `multi_swe_bench.toml`: Multi-SWE-bench's one checks command (the image's own run.sh) and
  the parser of each language's runner.
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from testprism.tasks.execution.logs import PARSERS
from testprism.tasks.importing.language import language_named, name_language
from testprism.tasks.importing.rows import RowError
from testprism.tasks.importing.setup_lines import needs_network, needs_root

SPECS = Path(__file__).parent / "image_specs"
#: SWE-bench's NON_TEST_EXTS (swebench/harness/constants): files of a test patch that are no test
NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


class SpecsError(ValueError):
    """A specs file is invalid; names the file and the field."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VersionSpec(_Spec):
    """What one version changes of its repository's spec."""

    test_command: str | None = None
    eval_commands: tuple[str, ...] | None = None
    build: tuple[str, ...] | None = None
    #: SWE-bench's parser of this version, where its repository's chooses by instance
    #: (parse_log_jekyll reads two of jekyll's versions with parse_log_cucumber)
    log_parser: str | None = None


class RepoSpec(_Spec):
    """A repository as SWE-bench evaluates it."""

    language: str
    log_parser: str
    test_command: str
    #: Python only: commands before the tests (SWE-bench's `eval_commands`)
    eval_commands: tuple[str, ...] = ()
    #: other languages: the build before the tests (SWE-bench's `build`)
    build: tuple[str, ...] = ()
    #: how the touched test files are named on the command line (Python only)
    directives: Literal["files", "django"] = "files"
    versions: dict[str, VersionSpec] = {}
    #: every version with a spec; empty: any version (a repository the user adds)
    known_versions: tuple[str, ...] = ()


class PythonSpec(_Spec):
    activate: str


class TracedSpec(_Spec):
    #: testprism parsers that read the shell's trace (`set -x`) as SWE-bench's eval script has it
    parsers: tuple[str, ...] = ()


class SweBenchSpecs(_Spec):
    """`swebench.toml`: every repository, and SWE-bench's parsers → testprism's."""

    python: PythonSpec
    parsers: dict[str, str]
    traced: TracedSpec = TracedSpec()
    repos: dict[str, RepoSpec]

    @field_validator("parsers")
    @classmethod
    def _known(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value.values()) - set(PARSERS))
        if unknown:
            raise ValueError(f"{unknown} are not testprism parsers; one of {', '.join(PARSERS)}")
        return value


class MultiRepo(_Spec):
    language: str
    parser: str | None = None


class MultiSweBenchSpecs(_Spec):
    """`multi_swe_bench.toml`: the checks command, and each language's and repository's parser."""

    command: str
    languages: dict[str, str]
    repos: dict[str, MultiRepo] = {}

    @field_validator("languages")
    @classmethod
    def _known(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value.values()) - set(PARSERS))
        if unknown:
            raise ValueError(f"{unknown} are not testprism parsers; one of {', '.join(PARSERS)}")
        return value


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SpecsError(f"{path}: field (file): missing") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecsError(f"{path}: field (syntax): {exc}") from exc


def _merge(base: dict, extra: dict) -> dict:
    """`extra`'s tables over `base`'s, key by key (a repository given again is replaced whole)."""
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
    return merged


@dataclass(frozen=True)
class ImageSpecs:
    """The bundled tables, with the user's `--specs` file over them (its `[swebench]` and
    `[multi_swe_bench]` tables, in the bundled files' layout)."""

    swebench: SweBenchSpecs
    multi: MultiSweBenchSpecs
    #: the `--specs` file, and the SWE-bench repositories it gives
    extra: Path | None = None
    extra_repos: frozenset[str] = frozenset()

    def swebench_file(self, repo: str) -> str:
        """The specs file a SWE-bench repository's table comes from, as refusals name it."""
        return str(self.extra if repo in self.extra_repos else SPECS / "swebench.toml")

    @classmethod
    def load(cls, extra: Path | None = None) -> ImageSpecs:
        given = _read(extra) if extra is not None else {}
        unknown = sorted(set(given) - {"swebench", "multi_swe_bench"})
        if unknown:
            raise SpecsError(f"{extra}: field {unknown[0]}: unknown table; give [swebench] or [multi_swe_bench]")
        found = {}
        for key, model in (("swebench", SweBenchSpecs), ("multi_swe_bench", MultiSweBenchSpecs)):
            path = SPECS / f"{key}.toml"
            try:
                found[key] = model.model_validate(_merge(_read(path), given.get(key, {})))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = extra if key in given else path
                raise SpecsError(f"{where}: field {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from exc
        return cls(found["swebench"], found["multi_swe_bench"], extra,
                   frozenset(given.get("swebench", {}).get("repos", {})))


@dataclass(frozen=True)
class SweBenchCommand:
    """A SWE-bench row's checks under its repository's spec."""

    language: str
    command: str
    parser: str
    log_parser: str  #: SWE-bench's own, for the provenance
    #: the command with `{test_files}` open, which `import suites` fills with a suite's own
    #: files (origin.toml `test_command`); None where SWE-bench's command names the
    #: instance's tests itself (the other languages) or its files as modules (django)
    template: str | None = None
    #: set-up lines left out of the command, as (the spec's field, the line): they need root
    #: (`set_up_lines`), and the image's build does them
    left_out: tuple[tuple[str, str], ...] = ()


def check_script(lines: list[str], *, traced: bool) -> str:
    """Lines run as SWE-bench's eval.sh runs them (swebench/harness/test_spec/test_spec.py
    `eval_script`: `set -uxo pipefail`, then one line per command): each its own command, the
    next run whatever the last one's status (no `-e`: a set-up line that fails does not stop
    the tests, as it does not stop SWE-bench's), the script's status that of its last line,
    the test command. The trace (`-x`) only where the parser reads it (`[traced] parsers`):
    elsewhere it is noise in the log the parser reads, and conda's activate script alone
    traces hundreds of lines."""
    return "\n".join([f"set -u{'x' if traced else ''}o pipefail", *lines])


def set_up_lines(lines: tuple[str, ...], field: str, where: str) -> tuple[list[str], list[tuple[str, str]]]:
    """A version's set-up lines (`eval_commands`, `build`) as a check run can run them: a line
    that fetches over the network refuses the row (RowError naming `where`, the field and the
    line: a run has no network, and no build step here can run it first); one that needs root
    (django 3.x's `locale-gen`) is left out, with its field, for the import's report: runs are
    unprivileged on a read-only root, and SWE-bench's images do it at their build (the
    environment's `pre_install`)."""
    kept: list[str] = []
    left_out: list[tuple[str, str]] = []
    for index, line in enumerate(lines):
        if needs_network(line):
            raise RowError("version", f"{where}: field {field}[{index}]: {line!r} fetches over the network at check "
                                      "time, which a check run cannot (it has no network); give the row an image "
                                      "whose build did it and a spec without the line (--specs)")
        if needs_root(line):
            left_out.append((f"{field}[{index}]", line))
        else:
            kept.append(line)
    return kept, left_out


def _field(repo: str, version: str, of_version: bool, name: str) -> str:
    """Where in swebench.toml a spec's field is: the repository's table, or its version's."""
    return f'repos."{repo}"' + (f'.versions."{version}"' if of_version else "") + f".{name}"


def swebench_command(specs: SweBenchSpecs, repo: str, version: str, test_files: list[str],
                     where: str = str(SPECS / "swebench.toml")) -> SweBenchCommand:
    """The row's checks command as SWE-bench's eval script runs it (swebench.toml header),
    line by line (`check_script`): RowError naming `repo` or `version` when the table has no
    entry or no parser for it, or when its lines need the network at check time (`where`:
    the specs file that gives the repository)."""
    spec = specs.repos.get(repo)
    if spec is None:
        raise RowError("repo", f"{repo} is not in the SWE-bench specs table ({SPECS / 'swebench.toml'}); add it "
                               "there or with --specs")
    if spec.known_versions and version not in spec.known_versions:
        raise RowError("version", f"{repo} has no spec for version {version!r} in the SWE-bench specs table "
                                  f"(versions {', '.join(spec.known_versions)})")
    override = spec.versions.get(version, VersionSpec())
    log_parser = override.log_parser or spec.log_parser
    parser = specs.parsers.get(log_parser)
    if parser is None:
        raise RowError("repo", f"SWE-bench reads {repo}'s log with {log_parser}, which no testprism parser "
                               "reads (swebench.toml [parsers]): its per-test results cannot be kept")
    language = name_language(spec.language, "repo", repo)
    test = override.test_command or spec.test_command
    set_up_lines((test,), _field(repo, version, override.test_command is not None, "test_command"), where)
    traced = parser in specs.traced.parsers  # its parser reads the trace, as of SWE-bench's `set -x`
    if language == "python":
        files = [f for f in test_files if not f.endswith(NON_TEST_EXTS)]
        if spec.directives == "django":
            files = [f.removesuffix(".py").removeprefix("tests/").replace("/", ".") for f in files]
        own = override.eval_commands is not None
        steps, left_out = set_up_lines(override.eval_commands if override.eval_commands is not None else
                                       spec.eval_commands, _field(repo, version, own, "eval_commands"), where)
        steps = [specs.python.activate, *steps]
        command = check_script([*steps, " ".join([test, *map(shlex.quote, files)])], traced=traced)
        template = None
        if spec.directives == "files":
            # a suite's verdict comes from JUnit (docs/benchmark-format.md, Suites): pytest writes it
            junit = ' --junitxml="$TESTPRISM_JUNIT"' if parser == "pytest" else ""
            template = check_script([*steps, f"{test} {{test_files}}{junit}"], traced=traced)
        return SweBenchCommand(language, command, parser, log_parser, template, tuple(left_out))
    build, left_out = set_up_lines(override.build if override.build is not None else spec.build,
                                   _field(repo, version, override.build is not None, "build"), where)
    return SweBenchCommand(language, check_script([*build, test], traced=traced), parser, log_parser,
                           left_out=tuple(left_out))


def multi_swe_bench_parser(specs: MultiSweBenchSpecs, org: str, repo: str, lang: str) -> tuple[str, str]:
    """The language and parser of a Multi-SWE-bench repository (the row's `lang` when it
    has one, else the table's; any spelling of languages.toml): RowError naming `lang` or
    `repo` when neither names a language testprism knows or no parser is known for it."""
    entry = specs.repos.get(f"{org}/{repo}")
    given = lang or (entry.language if entry else "")
    language = name_language(given, "lang" if lang else "repo", f"{org}/{repo}") if given else None
    parser = (entry.parser if entry else None) or specs.languages.get(given) or (
        next((p for name, p in specs.languages.items() if language_named(name) == language), None)
        if language else None)
    if parser is None:
        raise RowError("repo", f"Multi-SWE-bench row: no parser is known for {org}/{repo}"
                               f"{f' ({given})' if given else ''}: Multi-SWE-bench reads its log with the "
                               "repository's own parse_log; add it to multi_swe_bench.toml or --specs, or import "
                               "the row with --route source and a recipe (docs/real-benchmarks.md)")
    if language is None:
        raise RowError("repo", f"Multi-SWE-bench row: {org}/{repo} names no language (the row's lang, or "
                               "multi_swe_bench.toml [repos])")
    return language, parser
