#!/usr/bin/env bash
set -u
PYTHONPATH=. exec python tmp/check.py
