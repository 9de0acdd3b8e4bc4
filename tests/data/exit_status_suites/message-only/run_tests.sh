#!/usr/bin/env bash
set -u
got=$(python -c "from algokit.search import insertion_point; print(insertion_point([1, 2, 3], 4, hi=2))")
[ "$got" = 3 ] || { echo "insertion point: got $got"; exit 1; }
