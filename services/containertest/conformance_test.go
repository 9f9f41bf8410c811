package containertest_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// optIn skips the test unless TBHUB_CONTAINER_TESTS=1: these tests need a
// Docker engine, which CI does not have.
func optIn(t *testing.T) {
	t.Helper()
	if os.Getenv("TBHUB_CONTAINER_TESTS") != "1" {
		t.Skip("needs a Docker engine; run with TBHUB_CONTAINER_TESTS=1 (see doc.go)")
	}
}

// repoRoot is the directory holding docker-compose.yml above the test.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "docker-compose.yml")); err == nil {
			return d
		}
	}
	t.Fatal("no docker-compose.yml above the test")
	return ""
}

// composeImage returns the image docker-compose.yml names that matches
// pattern (a regexp of the image name, without the tag), so the tests and
// the local stack always run the same one.
func composeImage(t *testing.T, pattern string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*image:\s*(` + pattern + `:\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("docker-compose.yml names no %s image", pattern)
	}
	return string(m[1])
}

const emulatorImagePattern = `gcr\.io/cloud-spanner-emulator/emulator`

func TestStoreConformanceOnEmulatorImage(t *testing.T) {
	optIn(t)
	ctx := context.Background()
	ctr, err := testcontainers.Run(ctx, composeImage(t, emulatorImagePattern),
		testcontainers.WithExposedPorts("9010/tcp"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("9010/tcp")))
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatal(err)
	}
	host, err := ctr.PortEndpoint(ctx, "9010/tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	// The client libraries and spanneremu both follow this variable.
	t.Setenv("SPANNER_EMULATOR_HOST", host)
	emu, err := spanneremu.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Stop)
	newDatabase := func(t *testing.T) *spanneremu.Database {
		db, err := emu.NewDatabase(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Drop(context.Background()) })
		return db
	}
	t.Run("store", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return newDatabase(t).Store(t) })
	})
	t.Run("identity", func(t *testing.T) {
		storetest.RunIdentity(t, func(t *testing.T) storetest.IdentityBackend { return newDatabase(t).Store(t) })
	})
}
