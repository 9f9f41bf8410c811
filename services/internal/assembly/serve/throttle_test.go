package serve_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
)

// countingStore counts the API token lookups that reach the store.
type countingStore struct {
	store.Store
	lookups atomic.Int64
}

func (c *countingStore) GetAPITokenByHash(ctx context.Context, h store.TokenHash) (store.APIToken, error) {
	c.lookups.Add(1)
	return c.Store.GetAPITokenByHash(ctx, h)
}

// stepClock is a clock that moves only when told.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// writerFrom is a writer client whose connections come from the loopback
// address ip (127.0.0.x: an address of its own, as a remote client's).
func writerFrom(t *testing.T, h *harness, ip string) servicepb.TensorBoardWriterServiceClient {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	conn, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, s string) (net.Conn, error) { return d.DialContext(ctx, "tcp", s) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return servicepb.NewTensorBoardWriterServiceClient(conn)
}

// badTokens sends n unknown tokens and counts the answers by code.
func badTokens(ctx context.Context, w servicepb.TensorBoardWriterServiceClient, n int, tag string) map[codes.Code]int {
	got := map[codes.Code]int{}
	for i := range n {
		_, err := w.CreateExperiment(as(ctx, bearer(fmt.Sprintf("tbh_%s%d", tag, i))), &servicepb.CreateExperimentRequest{})
		got[status.Code(err)]++
	}
	return got
}

// Invalid credentials are throttled per client address (issue 14 #9):
// after the burst, one address's unknown tokens are answered
// RESOURCE_EXHAUSTED (with when to retry) without a store lookup, until
// the budget refills; a token verified before keeps working from that
// address, and another address is unaffected.
func TestBadCredentialsAreThrottledPerAddress(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	cs := &countingStore{Store: st}
	clock := &stepClock{now: time.Now()}
	h := newHarness(t, cs, blobs, func(c *serve.Config) { c.Now = clock.Now })
	burst := limits.BadCredentialBurst

	attacker, other := writerFrom(t, h, "127.0.0.2"), writerFrom(t, h, "127.0.0.3")
	victim := h.UserContext(t, "victim")
	// The victim signs in from the attacker's address (a shared NAT) before the attack.
	if _, err := attacker.CreateExperiment(victim, &servicepb.CreateExperimentRequest{Name: "before"}); err != nil {
		t.Fatal(err)
	}
	before := cs.lookups.Load()
	const n = 3000
	got := badTokens(t.Context(), attacker, n, "bad")
	if got[codes.Unauthenticated] != burst || got[codes.ResourceExhausted] != n-burst {
		t.Errorf("%d bad tokens from one address: %v, want %d UNAUTHENTICATED then RESOURCE_EXHAUSTED", n, got, burst)
	}
	if looked := cs.lookups.Load() - before; looked != int64(burst) {
		t.Errorf("%d bad tokens made %d store lookups, want the burst's %d", n, looked, burst)
	}
	_, err := attacker.CreateExperiment(as(t.Context(), bearer("tbh_onemore")), &servicepb.CreateExperimentRequest{})
	st2 := status.Convert(err)
	var retry *errdetails.RetryInfo
	for _, d := range st2.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	if st2.Code() != codes.ResourceExhausted || retry == nil || retry.GetRetryDelay().AsDuration() <= 0 {
		t.Errorf("throttled answer %v (retry info %v), want RESOURCE_EXHAUSTED saying when to retry", err, retry)
	}

	// The victim's verified token still works from the attacker's address;
	// a token never verified does not get through until the budget refills.
	if _, err := attacker.CreateExperiment(victim, &servicepb.CreateExperimentRequest{Name: "during"}); err != nil {
		t.Errorf("victim during the attack: %v", err)
	}
	fresh := h.UserContext(t, "newcomer")
	if _, err := attacker.CreateExperiment(fresh, &servicepb.CreateExperimentRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("an unverified token from the throttled address: %v, want RESOURCE_EXHAUSTED", err)
	}
	// Another address: its bad tokens are checked, its new token works.
	if got := badTokens(t.Context(), other, 3, "other"); got[codes.Unauthenticated] != 3 {
		t.Errorf("bad tokens from another address: %v, want UNAUTHENTICATED", got)
	}
	if _, err := other.CreateExperiment(h.UserContext(t, "bystander"), &servicepb.CreateExperimentRequest{Name: "other"}); err != nil {
		t.Errorf("another address during the attack: %v", err)
	}

	// A second refills BadCredentialsPerSecond checks, and a valid token
	// checked with one gives it back.
	clock.Add(time.Second)
	if _, err := attacker.CreateExperiment(fresh, &servicepb.CreateExperimentRequest{Name: "refilled"}); err != nil {
		t.Errorf("a new token after the budget refilled: %v", err)
	}
	if got := badTokens(t.Context(), attacker, 2*limits.BadCredentialsPerSecond, "again"); got[codes.Unauthenticated] != limits.BadCredentialsPerSecond {
		t.Errorf("bad tokens after a second: %v, want %d UNAUTHENTICATED", got, limits.BadCredentialsPerSecond)
	}
}

// X-Forwarded-For names the client only with --trusted-proxy-hops: without
// it, an attacker cannot escape its budget by writing the header, and
// with it, clients behind one proxy address are throttled apart.
func TestForwardedForNeedsTrustedHops(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	for _, hops := range []int{0, 1} {
		clock := &stepClock{now: time.Now()}
		h := newHarness(t, st, blobs, func(c *serve.Config) { c.Now, c.TrustedProxyHops = clock.Now, clientaddr.Hops(hops) })
		proxy := writerFrom(t, h, "127.0.0.4")
		spent := badTokens(metadata.AppendToOutgoingContext(t.Context(), "x-forwarded-for", "198.51.100.1"), proxy, limits.BadCredentialBurst+1, "spend")
		other := badTokens(metadata.AppendToOutgoingContext(t.Context(), "x-forwarded-for", "198.51.100.2"), proxy, 1, "other")
		if spent[codes.ResourceExhausted] != 1 {
			t.Fatalf("hops %d: burst+1 bad tokens: %v, want the last one RESOURCE_EXHAUSTED", hops, spent)
		}
		want := codes.ResourceExhausted // the header ignored: the same address
		if hops == 1 {
			want = codes.Unauthenticated // another client behind the proxy
		}
		if other[want] != 1 {
			t.Errorf("hops %d: a bad token forwarded for another address: %v, want %v", hops, other, want)
		}
	}
}
