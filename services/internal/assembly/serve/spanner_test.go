package serve_test

import (
	"os"
	"testing"

	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// The emulator starts only if a Spanner test runs.
func TestMain(m *testing.M) { os.Exit(spanneremu.MainOnDemand(m)) }

var onSpanner = inprocess.OnSpanner

func TestStockUploaderSequenceSpanner(t *testing.T) {
	st, blobs := onSpanner(t)
	runStockUploaderSequence(t, st, blobs)
}
