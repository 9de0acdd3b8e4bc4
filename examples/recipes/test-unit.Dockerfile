# Environment of test-unit/test-unit (examples/recipes/test-unit.toml): Debian bookworm's Ruby
# (3.1), whose bundled gems include power_assert, test-unit's one runtime dependency. The
# program's own lib/ is put first on the load path by its test/run.rb, so the bundled test-unit
# gem is not the one under test.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends ruby && rm -rf /var/lib/apt/lists/*
