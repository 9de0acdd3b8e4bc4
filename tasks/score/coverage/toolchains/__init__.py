"""How the coverage pass measures each language: which reference lines count, what the
run is given to report what it executed, and how that report is read back.

One module per language toolchain, as tasks/execution/logs/ has one per runner: `base`
holds the interface (`Toolchain`: analyse, environment, helpers, parse), each other module
one language's instrumentation and its helper scripts, and `TOOLCHAINS` below names which
toolchain measures which language. Adding a language is adding a module and a line here.

The probe (tasks/score/coverage/probe.py) asks `toolchain_for(instance.spec.language)`;
a language without a toolchain (tsx, any other: NOT_MEASURED_WHY
says why) is *not measured*: its rows keep ΔC and EC null with the reason `not_measured`,
never a number measured on the wrong lines.

Every language's helper folder is mounted read-only outside the workspace, and its run.sh
starts with instrument.RUNNER_HEAD: after the suite, every process it left is ended and the
collector's report handed back under the run's nonce (`instrument.unseal`). The helper
files' text is part of every measurement's key (`helpers_hash`): the comments inside them
still name `tasks/score/coverage/toolchains.py`, the one file these modules were until
2026-12, so that the split changed no stored measurement's key.

- **python** (`python`): coverage.py in every process (tasks/score/coverage/instrument.py).
- **go** (`go`): cover profiles through GOFLAGS from every `go test` of the suite.
- **javascript** (`javascript`): V8's block coverage through NODE_V8_COVERAGE.
- **typescript** (`typescript`): the same, mapped through the source maps of the code Vitest
  compiles.
- **c, cpp** (`gcc`): gcc's `--coverage`, compiled in, read by gcov.
- **java** (`java`): JaCoCo's agent through JAVA_TOOL_OPTIONS.
- **rust** (`rust`): `-C instrument-coverage`, compiled in, read by Debian's llvm-14 tools.
- **php** (`php`): PCOV, started by a file PHP prepends to each script.
- **ruby** (`ruby`): Ruby's own `Coverage` through RUBYOPT.

For the other languages, which changed lines are code is told by the lexer here (neither
blank nor only comments) and, where the run reported the file, by the report's own
statements (Go: inside a cover block; gcov's lines; JaCoCo's lines; llvm-cov's lines; PCOV's
executable lines; Ruby's counted lines). Changed functions come
from the same tree-sitter trees (tasks/model/changes.py).
"""

from __future__ import annotations

from testprism.tasks.score.coverage.toolchains.base import Toolchain
from testprism.tasks.score.coverage.toolchains.gcc import GccToolchain
from testprism.tasks.score.coverage.toolchains.go import GoToolchain
from testprism.tasks.score.coverage.toolchains.java import JavaToolchain
from testprism.tasks.score.coverage.toolchains.javascript import JavaScriptToolchain
from testprism.tasks.score.coverage.toolchains.php import PhpToolchain
from testprism.tasks.score.coverage.toolchains.python import PythonToolchain
from testprism.tasks.score.coverage.toolchains.ruby import RubyToolchain
from testprism.tasks.score.coverage.toolchains.rust import RustToolchain
from testprism.tasks.score.coverage.toolchains.typescript import TypeScriptToolchain

TOOLCHAINS: dict[str, Toolchain] = {
    "python": PythonToolchain(),
    "go": GoToolchain(),
    "javascript": JavaScriptToolchain(),
    "typescript": TypeScriptToolchain(),
    "java": JavaToolchain(),
    "c": GccToolchain(),
    "cpp": GccToolchain(),
    "ruby": RubyToolchain(),
    "rust": RustToolchain(),
    "php": PhpToolchain(),
}


#: why a language's rows say `not_measured` (logged with them; docs/languages.md)
NOT_MEASURED_WHY: dict[str, str] = {
    "tsx": "the TypeScript toolchain's source-map route is untested on .tsx (JSX): no bundled tsx instance",
}


def toolchain_for(language: str) -> Toolchain | None:
    """The toolchain measuring `language`, None when coverage is not measured for it."""
    return TOOLCHAINS.get(language)
