# Environment of redis/redis (examples/recipes/redis.toml): what SWE-bench Multilingual's build and
# test lines for redis need, from Debian bookworm: gcc and make for `make` (redis vendors its
# dependencies under deps/: jemalloc, lua, hiredis, linenoise, hdr_histogram), pkg-config, and Tcl
# for ./runtest, which starts redis-server on loopback ports.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends gcc make pkg-config libc6-dev tcl procps \
    && rm -rf /var/lib/apt/lists/*
