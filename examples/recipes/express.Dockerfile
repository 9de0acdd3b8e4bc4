# Environment of expressjs/express (examples/recipes/express.toml): Debian bookworm's Node.js
# and npm, and express's dependencies installed at image build time (the npm registry is
# reachable then; runs and build steps have no network, so `npm ci` cannot run there). The
# build context is this Dockerfile alone, so package.json cannot be COPY'd from the program:
# installing the published express release of the rows' series brings its runtime
# dependencies, hoisted into /opt/express-deps/node_modules, and the test tools are named
# beside it. The recipe's NODE_PATH points require() there; the program's own `require('..')`
# still resolves to the program.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
ARG EXPRESS_RELEASE=4.21.2
RUN npm install --prefix /opt/express-deps --no-audit --no-fund --omit=optional \
        express@${EXPRESS_RELEASE} mocha@10 mocha-junit-reporter@2 supertest@6 after@0.8 \
    && ln -s /opt/express-deps/node_modules/.bin/mocha /usr/local/bin/mocha \
    && chmod -R a+rX /opt/express-deps
