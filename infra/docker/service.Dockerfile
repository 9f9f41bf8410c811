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

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Module metadata first: the download layer survives source edits.
COPY go.work go.work.sum ./
COPY schemas/go.mod schemas/go.sum schemas/
COPY services/go.mod services/go.sum services/
COPY uploader/go.mod uploader/go.sum uploader/
COPY frontend-api/go.mod frontend-api/go.sum frontend-api/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG SERVICE
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    test -n "$SERVICE" && infra/docker/gobuild.sh "$SERVICE" /out/server

# static: CA certificates, tzdata and /etc/passwd, nothing else. The
# nonroot user is uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/server /server
USER nonroot:nonroot
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["/server"]
