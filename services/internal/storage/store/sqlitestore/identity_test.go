package sqlitestore

import (
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store/storetest"
)

func TestIdentityConformance(t *testing.T) {
	storetest.RunIdentity(t, func(t *testing.T) storetest.IdentityBackend { return newTestStore(t) })
}
