# Environment of catchorg/Catch2 (examples/recipes/catch2.toml): Debian bookworm's CMake
# (3.25, which writes JUnit from ctest) and GCC 12, plus Python 3, which Catch2's approval
# tests run (tests/TestScripts/approvalTests.py).
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends cmake g++ make python3 \
    && rm -rf /var/lib/apt/lists/*
