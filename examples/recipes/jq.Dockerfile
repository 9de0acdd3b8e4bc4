# Environment of jqlang/jq (examples/recipes/jq.toml): what SWE-bench Multilingual's build lines
# for jq need (autoreconf, ./configure, bison and flex for `touch src/parser.y src/lexer.l`, make),
# from Debian bookworm, with Debian's oniguruma (libonig-dev) in place of the modules/oniguruma
# submodule the spec builds (`--with-oniguruma=builtin`), which cannot be fetched from GitHub here.
# No valgrind: jq's tests/setup runs every case under it when it is found, as the spec's image
# (which installs none) does not.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends autoconf automake libtool make gcc \
        bison flex libonig-dev && rm -rf /var/lib/apt/lists/*
