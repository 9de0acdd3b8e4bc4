# Environment of tokio-rs/tokio (examples/recipes/tokio.toml): Debian bookworm's Rust 1.85
# (rustc-web, cargo-web; SWE-bench's specifications build tokio's rows with 1.83) and every crate
# SWE-bench's Cargo.lock of each row pins (tokio-env/locks/, the harness's fixtures, named by the
# tokio release of the row's base), vendored at image build time, the one networked step. The
# build context is this Dockerfile and tokio-env/ only, so the crates are gathered through a stub
# crate per lock that pins each of them (lock_stub.py); `cargo vendor` keeps both locks' crates in
# one folder, and /opt/cargo-home/config.toml points crates.io at it, so runs and build steps (no
# network; the recipe sets CARGO_HOME, since this ENV does not reach them) resolve offline. The recipe's build step copies the lock of the base's tokio release into the tree.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends rustc-web cargo-web gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
COPY locks/ /opt/tokio-locks/
COPY lock_stub.py /opt/tokio-locks/
# The CA certificates this machine added to its trust (testprism passes them) are trusted by the
# vendoring alone.
ARG EXTRA_CA=""
ENV CARGO_HOME=/opt/cargo-home
RUN cat /etc/ssl/certs/ca-certificates.crt > /tmp/ca.pem && printf '%s\n' "$EXTRA_CA" >> /tmp/ca.pem \
    && set -- && for lock in /opt/tokio-locks/*.Cargo.lock; do \
         stub=/tmp/stubs/$(basename "$lock" .Cargo.lock) && mkdir -p "$stub/src" && : > "$stub/src/lib.rs" \
         && python3 /opt/tokio-locks/lock_stub.py "$lock" > "$stub/Cargo.toml" && cp "$lock" "$stub/Cargo.lock" \
         && if [ $# -eq 0 ]; then set -- --manifest-path "$stub/Cargo.toml"; else set -- "$@" --sync "$stub/Cargo.toml"; fi; \
       done \
    && CARGO_HTTP_CAINFO=/tmp/ca.pem cargo vendor --versioned-dirs "$@" /opt/tokio-vendor > /tmp/vendor.toml \
    && mkdir -p "$CARGO_HOME" && sed -n '/^\[source/,$p' /tmp/vendor.toml > "$CARGO_HOME/config.toml" \
    && printf '\n[net]\noffline = true\n' >> "$CARGO_HOME/config.toml" \
    && rm -rf /tmp/stubs /tmp/ca.pem /tmp/vendor.toml "$CARGO_HOME/registry" && chmod -R a+rX /opt
