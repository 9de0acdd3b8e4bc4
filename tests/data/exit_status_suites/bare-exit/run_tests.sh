#!/usr/bin/env bash
set -u
python -c "
import sys
from algokit.search import insertion_point
sys.exit(insertion_point([1, 2, 3], 2) != 2)
"
