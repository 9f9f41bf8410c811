package limits

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

type fixedUsage struct {
	u     store.Usage
	calls int
}

func (f *fixedUsage) UserUsage(context.Context, string) (store.Usage, error) {
	f.calls++
	return f.u, nil
}

func wantExhausted(t *testing.T, err error, mention ...string) {
	t.Helper()
	s := status.Convert(err)
	if s.Code() != codes.ResourceExhausted {
		t.Fatalf("error %v: want RESOURCE_EXHAUSTED", err)
	}
	for _, m := range mention {
		if !strings.Contains(s.Message(), m) {
			t.Errorf("message %q does not mention %q", s.Message(), m)
		}
	}
}

func TestQuotas(t *testing.T) {
	l := Default()
	l.MaxExperimentsPerUser, l.MaxPointsPerUser, l.MaxBlobBytesPerUser = 3, 100, 1000
	now := time.Unix(1000, 0)
	src := &fixedUsage{u: store.Usage{Experiments: 2, Points: 90, BlobBytes: 0}}
	e, err := NewEnforcer(l, src, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := e.ReserveExperiment(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	wantExhausted(t, e.ReserveExperiment(ctx, "u"), "experiments per user", "3")
	if err := e.ReservePoints(ctx, "u", 10); err != nil {
		t.Fatal(err)
	}
	wantExhausted(t, e.ReservePoints(ctx, "u", 1), "points per user", "100")
	_, err = e.ReserveBlobBytes(ctx, "u", 1001)
	wantExhausted(t, err, "blob bytes per user", "1000")
	settle, err := e.ReserveBlobBytes(ctx, "u", 1000)
	if err != nil {
		t.Fatal(err)
	}
	settle(1000)
	// Another user has their own budget.
	if err := e.ReservePoints(ctx, "v", 10); err != nil {
		t.Fatal(err)
	}
	// After the refresh interval the store's figures count again.
	src.u.Points = 0
	now = now.Add(Default().UsageRefresh + time.Second)
	if err := e.ReservePoints(ctx, "u", 100); err != nil {
		t.Errorf("after refresh: %v", err)
	}
	if u, err := e.Usage(ctx, "u"); err != nil || u != src.u {
		t.Errorf("Usage = %+v, %v; want %+v", u, err, src.u)
	}
	// Zero quota means unlimited.
	l.MaxPointsPerUser = 0
	e2, _ := NewEnforcer(l, src, nil)
	if err := e2.ReservePoints(ctx, "u", 1<<40); err != nil {
		t.Errorf("unlimited: %v", err)
	}
}

func TestRateLimit(t *testing.T) {
	l := Default()
	l.RequestsPerSecond, l.Burst = 2, 3
	now := time.Unix(1000, 0)
	e, err := NewEnforcer(l, &fixedUsage{}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := e.Allow("u"); err != nil {
			t.Fatalf("request %d within burst: %v", i, err)
		}
	}
	wantExhausted(t, e.Allow("u"), "rate limit", "2 requests/s", "burst 3")
	if err := e.Allow("v"); err != nil {
		t.Errorf("other user limited by u: %v", err)
	}
	now = now.Add(time.Second)
	if err := e.Allow("u"); err != nil {
		t.Errorf("after a second: %v", err)
	}
}

func TestValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Default()
	bad.MaxBlobChunkBytes = bad.MaxRequestBytes
	if bad.Validate() == nil {
		t.Error("chunk as large as the request limit accepted")
	}
}

// Blob bytes reserved by a running stream count against the quota until
// it ends, across usage refreshes (the store does not hold them yet), and
// an aborted stream gives back what it did not store.
func TestBlobReservationHeldUntilSettled(t *testing.T) {
	l := Default()
	l.MaxBlobBytesPerUser = 1000
	now := time.Unix(1000, 0)
	src := &fixedUsage{}
	e, err := NewEnforcer(l, src, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	settleA, err := e.ReserveBlobBytes(ctx, "u", 600)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(Default().UsageRefresh + time.Second) // the store still says 0
	_, err = e.ReserveBlobBytes(ctx, "u", 600)
	wantExhausted(t, err, "blob bytes per user", "1000")
	settleA(1) // aborted after one byte
	settleA(1) // a second call changes nothing
	settleB, err := e.ReserveBlobBytes(ctx, "u", 999)
	if err != nil {
		t.Fatalf("after the abort gave its bytes back: %v", err)
	}
	_, err = e.ReserveBlobBytes(ctx, "u", 1)
	wantExhausted(t, err, "blob bytes per user", "1000")
	settleB(0)
}

// WriteBlob streams are bounded per user and per connection; a released
// slot is free again.
func TestBlobStreamSlots(t *testing.T) {
	l := Default()
	l.MaxBlobStreamsPerUser, l.MaxBlobStreamsPerConn = 3, 2
	e, err := NewEnforcer(l, &fixedUsage{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := e.AcquireBlobStream("u", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireBlobStream("u", "c1"); err != nil {
		t.Fatal(err)
	}
	_, err = e.AcquireBlobStream("u", "c1")
	wantExhausted(t, err, "from one client address", "2")
	// Another user from the same address (behind a proxy, all of them)
	// has an allowance of its own.
	rv, err := e.AcquireBlobStream("v", "c1")
	if err != nil {
		t.Fatalf("another user from the same address: %v", err)
	}
	rv()
	if _, err := e.AcquireBlobStream("u", "c2"); err != nil {
		t.Fatal(err)
	}
	_, err = e.AcquireBlobStream("u", "c3")
	wantExhausted(t, err, "per user", "3")
	// Another user, on a connection of its own, is not affected.
	if _, err := e.AcquireBlobStream("v", "c4"); err != nil {
		t.Fatalf("another user: %v", err)
	}
	r1()
	r1()
	if _, err := e.AcquireBlobStream("u", "c3"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	_, err = e.AcquireBlobStream("u", "c5")
	wantExhausted(t, err, "per user", "3")
}

// Series metadata and blobs share the byte quota (issue 14 #4): metadata
// the store holds, and metadata admitted since the last refresh, leave
// that much less for blobs, and the reverse.
func TestMetadataSharesTheByteQuota(t *testing.T) {
	l := Default()
	l.MaxBlobBytesPerUser = 1000
	now := time.Unix(1000, 0)
	src := &fixedUsage{u: store.Usage{BlobBytes: 300, MetadataBytes: 200}}
	e, err := NewEnforcer(l, src, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	_, err = e.ReserveBlobBytes(ctx, "u", 501)
	wantExhausted(t, err, "blob bytes per user is 1000", "metadata")
	if err := e.ReserveStoredBytes(ctx, "u", 400); err != nil {
		t.Fatal(err)
	}
	_, err = e.ReserveBlobBytes(ctx, "u", 101)
	wantExhausted(t, err, "blob bytes per user is 1000")
	settle, err := e.ReserveBlobBytes(ctx, "u", 100)
	if err != nil {
		t.Fatal(err)
	}
	wantExhausted(t, e.ReserveStoredBytes(ctx, "u", 1), "blob bytes per user is 1000")
	settle(0)
	if err := e.ReserveStoredBytes(ctx, "u", 100); err != nil {
		t.Fatal(err)
	}
	// A refresh replaces what was admitted by what the store holds.
	now = now.Add(Default().UsageRefresh + time.Second)
	if err := e.ReserveStoredBytes(ctx, "u", 500); err != nil {
		t.Errorf("after a refresh to 500 bytes stored: %v", err)
	}
	// Unlimited: nothing is refused.
	l.MaxBlobBytesPerUser = 0
	if e, err = NewEnforcer(l, src, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.ReserveStoredBytes(ctx, "u", 1<<40); err != nil {
		t.Errorf("unlimited quota: %v", err)
	}
}

// With --instances N, what a process keeps in its own memory is its share
// of the budget: N processes a user's calls spread over (a round robin,
// as Cloud Run's front end spreads them) admit at most the configured
// budget together, plus one unit per process from rounding up, where
// before each admitted the whole budget. A refusal says it is a share.
func TestBudgetsPartitionedOverInstances(t *testing.T) {
	const instances = 3
	l := Default()
	l.RequestsPerSecond, l.Burst = 30, 10
	l.MaxBlobStreamsPerUser, l.MaxBlobStreamsPerConn = 64, 16
	l.Instances = instances
	now := time.Unix(1000, 0)
	var procs []*Enforcer
	for range instances {
		e, err := NewEnforcer(l, &fixedUsage{}, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, e)
	}
	admitted := func(try func(e *Enforcer) error) (n int, last error) {
		for i := 0; i < 1000; i++ {
			if err := try(procs[i%instances]); err != nil {
				last = err
				continue
			}
			n++
		}
		return n, last
	}
	// The burst, at one instant: 10 across 3 processes is 4 each.
	n, err := admitted(func(e *Enforcer) error { return e.Allow("u") })
	if n > l.Burst+instances || n < l.Burst {
		t.Errorf("requests admitted at once by %d instances: %d, want %d to %d", instances, n, l.Burst, l.Burst+instances)
	}
	wantExhausted(t, err, "rate limit", "10 requests/s", "burst 4", "on this instance (a 1/3 share")
	// Streams from one client address, and from many.
	n, err = admitted(func(e *Enforcer) error { _, err := e.AcquireBlobStream("u", "192.0.2.1"); return err })
	if n > l.MaxBlobStreamsPerConn+instances || n < l.MaxBlobStreamsPerConn {
		t.Errorf("streams from one address admitted by %d instances: %d, want %d to %d", instances, n, l.MaxBlobStreamsPerConn, l.MaxBlobStreamsPerConn+instances)
	}
	wantExhausted(t, err, "6 WriteBlob streams per user from one client address on this instance")
	k := 0
	n, _ = admitted(func(e *Enforcer) error {
		k++
		_, err := e.AcquireBlobStream("v", fmt.Sprint("192.0.2.", k))
		return err
	})
	if n > l.MaxBlobStreamsPerUser+instances || n < l.MaxBlobStreamsPerUser {
		t.Errorf("streams of one user admitted by %d instances: %d, want %d to %d", instances, n, l.MaxBlobStreamsPerUser, l.MaxBlobStreamsPerUser+instances)
	}
	// One process (the default) enforces the whole budget.
	l.Instances = 0
	one, err := NewEnforcer(l, &fixedUsage{}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for one.Allow("u") == nil {
		n++
	}
	if n != l.Burst {
		t.Errorf("one instance admitted %d at once, want the burst %d", n, l.Burst)
	}
	if got := NewBadCredentials(CredentialLimits{PerSecond: 10, Burst: 100, Instances: 4}, nil).Limits(); got.PerSecond != 2.5 || got.Burst != 25 {
		t.Errorf("invalid-credentials budget of 1 of 4 instances: %g/s, burst %d; want 2.5/s, burst 25", got.PerSecond, got.Burst)
	}
}
