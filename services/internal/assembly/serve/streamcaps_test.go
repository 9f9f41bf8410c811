package serve_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
)

// userExperiment makes user an API token and an experiment with one
// image sequence of n slots, and returns the user's context and the
// sequence.
func userExperiment(t *testing.T, h *harness, user string, n int64) (context.Context, string) {
	t.Helper()
	token, err := serve.IssueUserToken(t.Context(), h.st, h.srv.Authenticator(), user, "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(t.Context(), bearer(token))
	ce, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "streams"})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, h.ImageSequence(t, ctx, ce.GetExperimentId(), n)
}

// Behind Cloud Run's front end every user arrives over the proxy's
// connections: the per-connection stream cap must not let one user's
// streams use up another's. Here all users share the test's one
// connection; each gets a full allowance, and one past it is refused.
func TestBlobStreamCapsPerUserOverOneConnection(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	const perUser = 3
	h := newHarness(t, st, blobs, func(c *serve.Config) {
		c.Limits.MaxBlobStreamsPerUser = perUser
		c.Limits.MaxBlobStreamsPerConn = perUser
	})
	streamCtx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type user struct {
		ctx context.Context
		seq string
	}
	var users []user
	for i := range 3 {
		ctx, seq := userExperiment(t, h, fmt.Sprintf("user%d", i), 10)
		users = append(users, user{ctx, seq})
	}
	for i, u := range users {
		for j := range int64(perUser) {
			if _, err := h.OpenStalledStream(metadataOf(streamCtx, u.ctx), t, u.seq, j); err != nil {
				t.Fatalf("user %d, stream %d of %d over the shared connection: %v", i, j+1, perUser, err)
			}
		}
	}
	_, err := h.OpenStalledStream(metadataOf(streamCtx, users[0].ctx), t, users[0].seq, perUser)
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("user 0's stream past its allowance: %v; want RESOURCE_EXHAUSTED", err)
	}
}

// Behind a trusted proxy (--trusted-proxy-hops 1) the per-client cap
// counts one user's streams per forwarded client address: the same user
// from another machine gets its own.
func TestBlobStreamCapPerForwardedClient(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, func(c *serve.Config) {
		c.Limits.MaxBlobStreamsPerUser = 4
		c.Limits.MaxBlobStreamsPerConn = 2
		c.TrustedProxyHops = 1
	})
	ctx, seq := userExperiment(t, h, "ada", 10)
	streamCtx, cancel := context.WithCancel(t.Context())
	defer cancel()
	from := func(addr string) context.Context {
		return metadata.AppendToOutgoingContext(metadataOf(streamCtx, ctx), "x-forwarded-for", addr)
	}
	index := int64(0)
	open := func(addr string) error {
		index++
		_, err := h.OpenStalledStream(from(addr), t, seq, index)
		return err
	}
	for range 2 {
		if err := open("203.0.113.1"); err != nil {
			t.Fatalf("a stream from the first client: %v", err)
		}
	}
	if err := open("203.0.113.1"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a third stream from the first client: %v; want RESOURCE_EXHAUSTED", err)
	}
	for range 2 {
		if err := open("203.0.113.2"); err != nil {
			t.Fatalf("a stream from the second client: %v", err)
		}
	}
}

// metadataOf is base (for its cancellation) with the outgoing metadata
// of md.
func metadataOf(base, md context.Context) context.Context {
	out, _ := metadata.FromOutgoingContext(md)
	return metadata.NewOutgoingContext(base, out)
}
