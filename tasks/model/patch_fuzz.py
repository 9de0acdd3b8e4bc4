"""How far a patch may be fuzzed when it does not apply as published, apart from state.py
(the states' materialisation, the benchmark model behind it): the CLI shows it as a
default in its `--help`, which must not load those (issue 32)."""

#: SWE-bench's fallback fuzz (`patch --batch --fuzz=5 -p1`); a policy field, so configurable.
DEFAULT_FUZZ = 5
