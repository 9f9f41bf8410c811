//go:build testcontainers

package containertest_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/store/storetest"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// emulatorImage is the Spanner emulator image docker-compose.yml names, so
// the suite and the local stack always run the same one.
func emulatorImage(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "docker-compose.yml"))
		if err != nil {
			continue
		}
		m := regexp.MustCompile(`(?m)^\s*image:\s*(gcr\.io/cloud-spanner-emulator/emulator:\S+)\s*$`).FindSubmatch(b)
		if m == nil {
			t.Fatal("docker-compose.yml names no gcr.io/cloud-spanner-emulator/emulator image")
		}
		return string(m[1])
	}
	t.Fatal("no docker-compose.yml above the test")
	return ""
}

func TestStoreConformanceOnEmulatorImage(t *testing.T) {
	ctx := context.Background()
	ctr, err := testcontainers.Run(ctx, emulatorImage(t),
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
	newStore := func(t *testing.T) *spannerstore.Store {
		db, err := emu.NewDatabase(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Drop(context.Background()) })
		return db.Store(t)
	}
	t.Run("store", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
	})
	t.Run("identity", func(t *testing.T) {
		storetest.RunIdentity(t, func(t *testing.T) storetest.IdentityBackend { return newStore(t) })
	})
}
