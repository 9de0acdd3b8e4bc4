#!/usr/bin/env bash
set -u
exec node --test --test-reporter=junit --test-reporter-destination="$TESTPRISM_JUNIT" --test-reporter=spec --test-reporter-destination=stdout tmp/parse_query.test.js
