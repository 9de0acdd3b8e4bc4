#!/usr/bin/env bash
set -u
exec python -m pytest -q -p no:cacheprovider tmp
