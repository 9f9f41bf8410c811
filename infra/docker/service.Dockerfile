# syntax=docker/dockerfile:1
#
# One parametrised image per tbhub server binary, built from the repository
# root so that go.work joins the modules:
#
#   docker build -f infra/docker/service.Dockerfile --build-arg SERVICE=write-service -t IMAGE .
#
# SERVICE: tbhub (serve, migrate, token create), write-service,
# read-service or frontend. The binary is /server; Cloud Run's $PORT is
# honoured by every serving command. The build step is
# infra/docker/gobuild.sh, which CI also runs for every SERVICE
# (scripts/check-deploy.sh).

ARG GO_VERSION=1.26
ARG NODE_VERSION=22

# The web UI bundle (not committed): scripts/build-ui.sh, as CI runs it,
# writes it into frontend-api/webui/dist, which the Go binaries embed.
FROM --platform=$BUILDPLATFORM node:${NODE_VERSION}-bookworm-slim AS ui
WORKDIR /src
COPY scripts/build-ui.sh scripts/
COPY frontend-api/web/package.json frontend-api/web/package-lock.json frontend-api/web/
RUN --mount=type=cache,target=/root/.npm cd frontend-api/web && npm ci --no-audit --no-fund --loglevel=error
COPY frontend-api/web/ frontend-api/web/
COPY frontend-api/webui/dist/ frontend-api/webui/dist/
RUN scripts/build-ui.sh

# The build stage runs on the build machine's platform and cross-compiles
# for the target (Cloud Run: linux/amd64), so an arm64 laptop builds at
# native speed.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Module metadata first: the download layer survives source edits.
COPY go.work go.work.sum ./
COPY schemas/go.mod schemas/go.sum schemas/
COPY services/go.mod services/go.sum services/
COPY services/serverkit/go.mod services/serverkit/go.sum services/serverkit/
COPY services/allinone/go.mod services/allinone/go.sum services/allinone/
COPY uploader/go.mod uploader/go.sum uploader/
COPY frontend-api/go.mod frontend-api/go.sum frontend-api/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
COPY --from=ui /src/frontend-api/webui/dist/ frontend-api/webui/dist/
ARG SERVICE
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    test -n "$SERVICE" && \
    GOOS=$TARGETOS GOARCH=$TARGETARCH infra/docker/gobuild.sh "$SERVICE" /out/server

# static: CA certificates, tzdata and /etc/passwd, nothing else. The
# nonroot user is uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/server /server
USER nonroot:nonroot
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["/server"]
