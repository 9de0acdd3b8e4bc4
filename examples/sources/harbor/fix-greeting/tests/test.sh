#!/bin/bash
# Harbor's verifier entry. testprism does not run it: its checks run test_outputs.py with pytest.
cd /app && python -m pytest -q /tests/test_outputs.py && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
