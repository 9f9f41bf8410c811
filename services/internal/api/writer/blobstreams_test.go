package writer_test

import (
	"context"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// One user cannot hold more than MaxBlobStreamsPerUser WriteBlob streams
// (each an open file on the embedded store) by starting blobs and never
// finishing them; the next stream gets RESOURCE_EXHAUSTED, and a stalled
// stream is closed after the idle timeout with its byte kept.
func TestStalledBlobStreamsAreBounded(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	const maxStreams = 4
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) {
		c.Limits.MaxBlobStreamsPerUser = maxStreams
		c.Limits.MaxBlobStreamsPerConn = maxStreams
	})
	ctx, eid := h.AdaExperiment(t, "streams")
	seqID := h.ImageSequence(t, ctx, eid, 100)
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range int64(maxStreams) {
		if _, err := h.OpenStalledStream(streamCtx, t, seqID, i); err != nil {
			t.Fatalf("stream %d within the limit: %v", i, err)
		}
	}
	_, err := h.OpenStalledStream(streamCtx, t, seqID, maxStreams)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("stream %d beyond the limit of %d: %v, want RESOURCE_EXHAUSTED", maxStreams, maxStreams, err)
	}
	cancel()
	// The slots come back when the streams end.
	for attempt := 0; ; attempt++ {
		s, err := h.OpenStalledStream(ctx, t, seqID, 50)
		if err == nil {
			s.CloseSend()
			break
		}
		if status.Code(err) != codes.ResourceExhausted || attempt == 1000 {
			t.Fatalf("after the streams ended: %v", err)
		}
	}
}

// A stream that stops sending is ended by the server after the idle
// timeout, keeping what arrived for a resume.
func TestIdleBlobStreamIsClosed(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) {
		c.Limits.BlobStreamIdleTimeout = 50 * time.Millisecond
	})
	ctx, eid := h.AdaExperiment(t, "idle")
	seqID := h.ImageSequence(t, ctx, eid, 1)
	// The test's own bound: far longer than the idle timeout.
	bounded, cancel := context.WithTimeout(ctx, safetyTimeout)
	defer cancel()
	s, err := h.OpenStalledStream(bounded, t, seqID, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv()
	if status.Code(err) != codes.DeadlineExceeded || bounded.Err() != nil {
		t.Fatalf("stalled stream: %v (test bound: %v), want the server's DEADLINE_EXCEEDED", err, bounded.Err())
	}
	md, err := h.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seqID})
	if err != nil {
		t.Fatal(err)
	}
	if md.GetBlobState() != servicepb.BlobState_BLOB_STATE_UNFINALIZED || md.GetSize() != 1 {
		t.Errorf("after the idle close: %v %d bytes, want UNFINALIZED 1", md.GetBlobState(), md.GetSize())
	}
}

// safetyTimeout bounds a test's wait for the server to act; the limits
// under test are far shorter, so reaching it means a limit did nothing.
const safetyTimeout = time.Minute

// A token made with an expiring token expires with it at the latest
// (issue 14 #7): asking for no expiry, or a later one, gets the
// credential's.
func TestTokenCannotOutliveItsCredential(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	ctx := h.UserContext(t, "ada")
	expire := time.Now().Add(time.Hour).Truncate(time.Second)
	short, err := h.Account.CreateToken(ctx, &authv1.CreateTokenRequest{Name: "short", Scopes: []authv1.Scope{authv1.Scope_SCOPE_UPLOAD, authv1.Scope_SCOPE_READ, authv1.Scope_SCOPE_TOKENS},
		ExpireTime: timestamppb.New(expire)})
	if err != nil {
		t.Fatal(err)
	}
	withShort := inprocess.As(t.Context(), inprocess.Bearer(short.GetSecret()))
	for _, asked := range []*timestamppb.Timestamp{nil, timestamppb.New(expire.Add(30 * 24 * time.Hour))} {
		minted, err := h.Account.CreateToken(withShort, &authv1.CreateTokenRequest{Name: "minted", Scopes: []authv1.Scope{authv1.Scope_SCOPE_UPLOAD}, ExpireTime: asked})
		if err != nil {
			t.Fatal(err)
		}
		if got := minted.GetToken().GetExpireTime(); got == nil || !got.AsTime().Equal(expire) {
			t.Errorf("asked for expiry %v with a token expiring %v: got %v", asked.AsTime(), expire, got.AsTime())
		}
	}
	// An earlier expiry than the credential's is kept.
	earlier := expire.Add(-30 * time.Minute)
	minted, err := h.Account.CreateToken(withShort, &authv1.CreateTokenRequest{Name: "minted", Scopes: []authv1.Scope{authv1.Scope_SCOPE_READ}, ExpireTime: timestamppb.New(earlier)})
	if err != nil || !minted.GetToken().GetExpireTime().AsTime().Equal(earlier) {
		t.Errorf("earlier expiry: %v, %v; want %v", minted.GetToken().GetExpireTime().AsTime(), err, earlier)
	}
}
