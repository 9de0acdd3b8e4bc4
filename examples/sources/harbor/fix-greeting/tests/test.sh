#!/bin/bash
# Harbor's verifier entry: run from the working directory (the program), the task's tests at
# /tests; the reward in /logs/verifier/reward.txt decides (1: resolved).
if python3 -m pytest -q -p no:cacheprovider /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
