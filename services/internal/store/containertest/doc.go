// Package containertest runs the storage conformance suite (storetest)
// against the Cloud Spanner emulator's container image, the image
// docker-compose.yml runs, started through testcontainers-go. It needs a
// Docker engine, so its test is behind the testcontainers build tag:
//
//	go test -tags testcontainers ./services/internal/store/containertest/
//
// CI has no engine; scripts/check-deploy.sh compiles the test with the tag
// (go vet) so it keeps building. The everyday Spanner tests use the
// emulator binary of the Google Cloud CLI instead (testenv/spanneremu).
package containertest
