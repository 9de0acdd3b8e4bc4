# Environment of gin-gonic/gin (examples/recipes/gin.toml): Debian bookworm's Go (1.19) and
# gotestsum, and gin's module dependencies in a module cache baked into the image, since runs
# and build steps have no network (GOPROXY=off in the recipe). The cache is filled from the
# dependency graph of a published gin release of the rows' series: a base_commit whose go.mod
# names versions the cache lacks fails its build step with "module lookup disabled by
# GOPROXY=off"; then pin GIN_RELEASE to a release nearer that commit (a recipe per range).
# Filling the cache needs the Go module proxy at image build time.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends golang-go gotestsum ca-certificates \
    && rm -rf /var/lib/apt/lists/*
ARG GIN_RELEASE=v1.9.1
ENV GOMODCACHE=/opt/gomodcache
RUN mkdir /tmp/deps && cd /tmp/deps && go mod init deps && go mod edit -require=github.com/gin-gonic/gin@${GIN_RELEASE} \
    && go mod download all && chmod -R a+rX /opt/gomodcache && rm -rf /tmp/deps
ENV GOCACHE=/tmp/.cache/go-build \
    GOPATH=/tmp/go \
    GOPROXY=off \
    CGO_ENABLED=0
