"""Coverage of the reference's change by each suite (README.md, Metrics): ΔC and EC.

- **ΔC_i** (change coverage): the lines the reference adds or changes that the suite
  executes, over those lines.
- **EC_i** (entry coverage): the functions the reference changes that the suite enters,
  over those functions.

Both are measured on the reference state, by a coverage pass separate from the replay: each
suite runs once more on the reference, with coverage.py started in *every* Python process of
the run (the suite's runner, its subprocesses, pytest-xdist workers). How, without touching
the sandbox backends:

- the environment is the instance's plus `coverage` (`coverage_environment`: another
  environment key, built once like any other);
- a small helper folder (`coverage_helpers`), mounted read-only at `/testprism-coverage`
  outside the workspace (`placement`): `site/sitecustomize.py`, put on `PYTHONPATH`, calls
  `coverage.process_startup()`, which starts measuring in any interpreter that sees
  `COVERAGE_PROCESS_START` (the folder's `coveragerc`); only the files the reference changes
  are traced;
- `run.sh` runs the suite's own entry that way, ends every process the suite left, then
  `collect.py` combines the data files and writes a small JSON report (statements and
  missed lines per file), which `run.sh` hands back at `$TESTPRISM_JUNIT` (the one file
  every backend already brings back from the sandbox) under the run's nonce (`unseal`):
  the suite can neither replace the helper nor put a report of its own there. The suite's
  own JUnit report is redirected next to the data; this pass needs no verdict.

Go, JavaScript, TypeScript, Java, C, C++, Rust, PHP and Ruby are measured the same way with
their own instrumentation (`toolchains`: cover profiles through GOFLAGS, V8 coverage through
NODE_V8_COVERAGE (for TypeScript, mapped through the source maps of the code Vitest
compiles), JaCoCo's agent through JAVA_TOOL_OPTIONS, gcc's --coverage and rustc's
-C instrument-coverage in builds of their own read by gcov and llvm-cov, PCOV through a
prepended file, Ruby's Coverage through RUBYOPT); other languages (tsx) are `not_measured`.

The pass in six parts: `changes` (which lines and functions of the reference count, and
how a run's report scores them), `instrument` (the environment and helper files that put
coverage.py in every process), `toolchains/` (each language's instrumentation and report, one module per language),
`probe` (plan, run through the one executor, store), `candidates` (the same pass on each
invalid candidate a suite accepted, of the lines where it differs from the reference: the
failure taxonomy's coverage-gap rule) and `summary` (per configuration, against S_i).
"""
