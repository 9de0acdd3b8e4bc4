#!/usr/bin/env bash
# An integration test of the crate: cargo finds it in tests/; the crate itself was compiled by
# the build step, so only this file is. libtest writes its own JUnit report (docs/languages.md).
set -eu
mkdir -p tests
cp tmp/cell_suite.rs tests/
exec cargo test -q --offline --test cell_suite -- -Z unstable-options --format junit >"$TESTPRISM_JUNIT"
