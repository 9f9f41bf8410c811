package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tbhub/tbhub/uploader/internal/upload"
)

// crashHook arms the crash point TBUP_CRASH_AT names: "POINT" or "POINT#N" makes
// tbup kill itself with SIGKILL the Nth time (the first by default) an upload
// reaches POINT (upload.CrashPoints). It exists for tests that prove an upload
// survives dying at each step of the delivery protocol (docs/delivery.md); an
// empty spec arms nothing.
func crashHook(spec string) (func(upload.CrashPoint), error) {
	if spec == "" {
		return nil, nil
	}
	name, nth, hasN := strings.Cut(spec, "#")
	n := int64(1)
	if hasN {
		var err error
		if n, err = strconv.ParseInt(nth, 10, 64); err != nil || n < 1 {
			return nil, fmt.Errorf("TBUP_CRASH_AT=%q: the count after # must be a positive integer", spec)
		}
	}
	known := false
	var names []string
	for _, p := range upload.CrashPoints {
		known = known || string(p) == name
		names = append(names, string(p))
	}
	if !known {
		return nil, fmt.Errorf("TBUP_CRASH_AT=%q: unknown crash point; known: %s", spec, strings.Join(names, ", "))
	}
	var hits atomic.Int64
	return func(p upload.CrashPoint) {
		if string(p) != name || hits.Add(1) != n {
			return
		}
		self, err := os.FindProcess(os.Getpid())
		if err == nil {
			err = self.Kill() // SIGKILL: no deferred function, no flush, as kill -9
		}
		if err != nil {
			panic(fmt.Sprintf("TBUP_CRASH_AT=%s: could not kill tbup: %v", spec, err))
		}
		select {} // nothing more happens on this goroutine while the signal lands
	}, nil
}
