#!/bin/bash
cd /app && python -m pytest -q /tests/test_outputs.py
