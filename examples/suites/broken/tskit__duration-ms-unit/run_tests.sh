#!/usr/bin/env bash
set -u
exec vitest run --reporter=default --reporter=junit --outputFile.junit="$TESTPRISM_JUNIT" tmp/
