#!/usr/bin/env bash
set -u
exec phpunit --log-junit "$TESTPRISM_JUNIT" tmp/FormatSuiteTest.php
