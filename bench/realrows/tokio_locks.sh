#!/bin/sh
# Write the Cargo.lock fixtures the tokio recipe vendors (examples/recipes/tokio.toml) from a
# snapshot of SWE-bench's repository (its harness constants, 25c5235; MIT): fetched content,
# so it is written into the recipe's context here and never committed (.gitignore).
#   bench/realrows/tokio_locks.sh /work/.mirror/SWE-bench+SWE-bench/repo
# Each is named by the tokio release of its row's base, which the recipe's build step reads.
set -eu
git_dir=${1:?a git directory of SWE-bench/SWE-bench}
out=$(dirname "$0")/../../examples/recipes/tokio-env/locks
mkdir -p "$out"
fixture=swebench/harness/constants/fixtures
git --git-dir="$git_dir" show "25c5235:$fixture/tokio-rs__tokio-4384.Cargo.lock" > "$out/tokio-1.15.0.Cargo.lock"
git --git-dir="$git_dir" show "25c5235:$fixture/tokio-rs__tokio-4867.Cargo.lock" > "$out/tokio-1.20.1.Cargo.lock"
echo "wrote $(ls "$out" | wc -l) locks into $out"
