#!/usr/bin/env bash
set -u
exec gotestsum --junitfile "$TESTPRISM_JUNIT" -- -count=1 ./tmp/
