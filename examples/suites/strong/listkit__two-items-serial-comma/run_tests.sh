#!/usr/bin/env bash
set -u
exec rspec --format progress --format RspecJunitFormatter --out "$TESTPRISM_JUNIT" tmp/sentence_suite_spec.rb
