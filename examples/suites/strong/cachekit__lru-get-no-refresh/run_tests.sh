#!/usr/bin/env bash
set -u
# The library is built (the build step's build/): configure and build the suite against it, then run it.
cmake -S tmp -B tmp/build >/dev/null || exit 1
cmake --build tmp/build || exit 1
exec tmp/build/lru_suite --gtest_output="xml:$TESTPRISM_JUNIT"
