# Environment of micropython/micropython (examples/recipes/micropython.toml): what SWE-bench
# Multilingual's build and test lines for micropython need, from Debian bookworm: gcc and make for
# mpy-cross and the unix port, pkg-config and libffi-dev (the port's ffi module links the system's
# libffi unless MICROPY_STANDALONE), and Python 3 for the build's scripts and tests/run-tests.py
# (MICROPY_CPYTHON3=python3 makes the expected output of tests that ship no .exp file).
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends gcc make libc6-dev pkg-config libffi-dev python3 \
    && rm -rf /var/lib/apt/lists/*
