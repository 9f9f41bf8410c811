package limits

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Invalid credentials (a token guessed, a revoked token retried in a
// loop) were each logged: 3,000 bad tokens in 0.6 s wrote 3,000 lines.
// BadCredentials samples them: at most BadCredentialLogsPerSecond lines a
// second (a burst of BadCredentialLogBurst), each saying how many
// rejections it stands for.
//
// The rejections themselves are not throttled per client: behind Cloud
// Run's proxy, and for the web UI's calls that tbhub serve makes over
// loopback, every call has the same peer address, so a per-address limit
// would let one client lock everyone out.
const (
	BadCredentialLogsPerSecond = 1
	BadCredentialLogBurst      = 10
)

// BadCredentials samples the log of invalid credentials. It is safe for
// concurrent use.
type BadCredentials struct {
	now        func() time.Time
	mu         sync.Mutex
	log        *rate.Limiter
	suppressed int64
}

// NewBadCredentials returns the sampler; now is the clock (time.Now if
// nil).
func NewBadCredentials(now func() time.Time) *BadCredentials {
	if now == nil {
		now = time.Now
	}
	return &BadCredentials{now: now, log: rate.NewLimiter(BadCredentialLogsPerSecond, BadCredentialLogBurst)}
}

// Failed records one rejection and says whether to log it; if so, stood
// is how many rejections the line stands for (itself and those not logged
// since the last line).
func (b *BadCredentials) Failed() (log bool, stood int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.log.AllowN(b.now(), 1) {
		b.suppressed++
		return false, 0
	}
	stood, b.suppressed = b.suppressed+1, 0
	return true, stood
}
