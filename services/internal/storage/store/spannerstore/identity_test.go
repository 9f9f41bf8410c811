package spannerstore_test

import (
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

func TestIdentityConformance(t *testing.T) {
	storetest.RunIdentity(t, func(t *testing.T) storetest.IdentityBackend {
		return spanneremu.NewDatabase(t).ConcurrentStore(t)
	})
}
