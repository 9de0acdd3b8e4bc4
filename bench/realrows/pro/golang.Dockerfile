# A local stand-in for Docker Hub's golang:1.24 (bookworm), which SWE-bench Pro's Go base
# Dockerfiles start FROM and which cannot be pulled here (no image registry): Debian bookworm
# (testprism-base:bookworm) with Go 1.24.13 from the Go module proxy's golang.org/toolchain
# module (the zip `go` itself downloads when it switches toolchains; a module zip keeps no
# file modes, so bin/ and pkg/tool/ are made executable as `go` does), and the official
# image's environment (GOPATH=/go, GOTOOLCHAIN=local, PATH). Built with
#   docker build --network host -t testprism-golang:1.24 --build-arg EXTRA_CA="$(cat /usr/local/share/ca-certificates/*.crt)" - < golang.Dockerfile
# The official image also has buildpack-deps' curl, wget and git; Pro's Dockerfiles install
# what they use with apt-get, so they are not added here.
FROM testprism-base:bookworm
ARG GO_TOOLCHAIN=v0.0.1-go1.24.13.linux-amd64
ARG EXTRA_CA=""
RUN printf '%s\n' "$EXTRA_CA" > /tmp/extra-ca.pem && cat /etc/ssl/certs/ca-certificates.crt >> /tmp/extra-ca.pem \
    && python3 -c "import ssl, sys, urllib.request, zipfile, io; \
ctx = ssl.create_default_context(cafile='/tmp/extra-ca.pem'); \
data = urllib.request.urlopen('https://proxy.golang.org/golang.org/toolchain/@v/' + sys.argv[1] + '.zip', context=ctx).read(); \
zipfile.ZipFile(io.BytesIO(data)).extractall('/tmp/tc')" "$GO_TOOLCHAIN" \
    && mv "/tmp/tc/golang.org/toolchain@$GO_TOOLCHAIN" /usr/local/go && rm -rf /tmp/tc /tmp/extra-ca.pem \
    && chmod -R a+rX /usr/local/go && chmod a+x /usr/local/go/bin/* /usr/local/go/pkg/tool/linux_amd64/* \
    && mkdir -p /go/bin /go/src && chmod -R 1777 /go
# The machine's added CA (a TLS-inspecting proxy's root: testprism passes it as EXTRA_CA) is
# trusted system-wide, so that `go mod download` in Pro's build steps reaches the Go proxy.
RUN if [ -n "$EXTRA_CA" ]; then printf '%s\n' "$EXTRA_CA" > /usr/local/share/ca-certificates/extra-ca.crt \
    && update-ca-certificates; fi
ENV GOLANG_VERSION=1.24.13 \
    GOTOOLCHAIN=local \
    GOPATH=/go \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN go version
