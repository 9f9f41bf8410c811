package writer_test

import (
	"os"
	"testing"

	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// The emulator starts only if a Spanner test runs.
func TestMain(m *testing.M) { os.Exit(spanneremu.MainOnDemand(m)) }
