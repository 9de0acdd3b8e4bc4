# Environment of vuejs/core (examples/recipes/vue-core.toml): Debian bookworm's Node.js and npm,
# and what the unit tests load, installed at image build time (the one networked step; runs and
# build steps have no network, so `pnpm install` cannot run there). The build context is this
# Dockerfile alone, so the workspace's pnpm-lock.yaml cannot be read: the versions follow the
# specifiers of the workspace at 67d6596 (the base of #11870): its catalog (pnpm-workspace.yaml),
# the packages' own dependencies (compiler-core, compiler-sfc, runtime-dom) and the root's test
# tools (vitest, jsdom for the DOM packages' tests, typescript). Installed flat with npm: vitest.config.ts
# aliases every @vue/* package to its packages/<name>/src, so a package's imports resolve up the
# tree to the program's node_modules, which the recipe's build step links to this folder. Optional
# dependencies are kept: rollup's and esbuild's native binaries are optional ones.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
# The CA certificates this machine added to its trust (testprism passes them: a TLS-inspecting
# proxy's root, say) are trusted by npm's install alone.
ARG EXTRA_CA=""
RUN printf '%s\n' "$EXTRA_CA" > /tmp/extra-ca.pem \
    && NODE_EXTRA_CA_CERTS=/tmp/extra-ca.pem npm install --prefix /opt/vue-core-deps --no-audit --no-fund \
        vitest@2.0.5 vite@5.4 jsdom@25 typescript@5.5.4 \
        @babel/parser@7.25 @babel/types@7.25 estree-walker@2.0.2 magic-string@0.30.11 source-map-js@1.2.0 \
        entities@4.5.0 postcss@8.4.44 @vue/consolidate@1.0.0 hash-sum@2.0.0 lru-cache@10.1.0 \
        merge-source-map@1.1.0 minimatch@9.0.5 postcss-modules@6.0.0 postcss-selector-parser@6.1.2 \
        pug@3.0.3 sass@1.78 csstype@3.1.3 \
    && rm /tmp/extra-ca.pem && chmod -R a+rX /opt/vue-core-deps
