// Package containertest holds tests that need a Docker engine and run
// only when asked to (TBHUB_CONTAINER_TESTS=1), from this directory:
//
//	cd services/containertest && TBHUB_CONTAINER_TESTS=1 GOWORK=off go test -v ./...
//
// TestStoreConformanceOnEmulatorImage runs the storage conformance suite
// (storetest) against the Cloud Spanner emulator's container image, the one
// docker-compose.yml runs. TestThreeServicesInContainers builds the images
// of infra/docker/service.Dockerfile (with `docker build`, as
// scripts/deploy.sh does), boots the write service, the read service and
// the frontend from them beside the Spanner emulator and fake-gcs-server
// containers on one Docker network, uploads the shared corpus with tbup
// and reads every scalar series back through the frontend, as
// services/allinone/e2e's TestCloudRunShape does with local processes.
//
// It is a module of its own, outside go.work, so that testcontainers-go and
// its dependencies stay out of the services module. CI has no Docker
// engine: scripts/check-deploy.sh vets and compiles these tests.
package containertest
