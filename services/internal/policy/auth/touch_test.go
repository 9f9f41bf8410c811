package auth_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// touchCounter counts the store calls that record a token's use.
type touchCounter struct {
	store.IdentityStore
	n atomic.Int64
}

func (c *touchCounter) TouchAPIToken(ctx context.Context, tokenID string, at time.Time, every time.Duration) error {
	c.n.Add(1)
	return c.IdentityStore.TouchAPIToken(ctx, tokenID, at, every)
}

// Token last-use writes are bounded per token, not per instance: of
// several instances (Authenticators) on one store that all see a token
// within a minute, one records the use; the next minute, one again.
func TestTokenUseRecordedOncePerIntervalAcrossInstances(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if err := f.st.CreateUser(ctx, store.User{ID: "u1", Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	_, secret, err := f.auth.IssueToken(ctx, "u1", "", "ci", store.AllScopes, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	counter := &touchCounter{IdentityStore: f.st}
	var instances []*auth.Authenticator
	for range 4 {
		a, err := auth.New(counter, auth.Config{Now: func() time.Time { return f.now }})
		if err != nil {
			t.Fatal(err)
		}
		instances = append(instances, a)
	}
	start := f.now
	for minute := range 3 {
		for s := 0; s < 60; s += 10 {
			f.now = start.Add(time.Duration(minute)*time.Minute + time.Duration(s)*time.Second)
			for i, a := range instances {
				if _, err := a.Authenticate(ctx, "Bearer "+secret); err != nil {
					t.Fatalf("instance %d: %v", i, err)
				}
			}
		}
		if got, want := counter.n.Load(), int64(minute+1); got != want {
			t.Errorf("after minute %d, %d instances recorded the token's use %d times; want %d (once a minute)", minute+1, len(instances), got, want)
		}
	}
	tok, err := f.st.GetAPITokenByHash(ctx, store.HashTokenSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(2 * time.Minute); !tok.LastUseTime.Equal(want) {
		t.Errorf("LastUseTime = %v, want %v", tok.LastUseTime, want)
	}
}
