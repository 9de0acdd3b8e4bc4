# Environment of immutable-js/immutable-js (examples/recipes/immutable-js.toml): Debian bookworm's
# Node.js and npm, and what the repository's Jest suite loads, installed at image build time (the
# one networked step; runs and build steps have no network, so `npm ci` cannot run there). The
# build context is this Dockerfile alone, so the repository's package-lock.json cannot be read:
# the versions are those its lock file pins at 493afba (the base of #2006) for Jest 27, its
# jestPreprocessor.js (typescript, make-synchronous, rollup and the rollup plugins it names) and the
# tests' own imports (jasmine-check, transducers-js), plus jest-junit, which writes the JUnit
# report. The recipe's build step links the program's node_modules to this folder.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
# The CA certificates this machine added to its trust (testprism passes them: a TLS-inspecting
# proxy's root, say) are trusted by npm's install alone.
ARG EXTRA_CA=""
RUN printf '%s\n' "$EXTRA_CA" > /tmp/extra-ca.pem \
    && NODE_EXTRA_CA_CERTS=/tmp/extra-ca.pem npm install --prefix /opt/immutable-js-deps --no-audit --no-fund --omit=optional \
        jest@27.2.0 @types/jest@27.0.1 typescript@5.1.6 make-synchronous@0.1.1 rollup@2.52.3 \
        rollup-plugin-buble@0.19.8 rollup-plugin-commonjs@9.1.3 rollup-plugin-json@3.0.0 \
        rollup-plugin-strip-banner@2.0.0 jasmine-check@1.0.0-rc.0 transducers-js@0.4.174 jest-junit@16 \
    && rm /tmp/extra-ca.pem && chmod -R a+rX /opt/immutable-js-deps
