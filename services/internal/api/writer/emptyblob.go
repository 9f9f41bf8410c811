package writer

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
)

// Empty WriteBlob streams.
//
// TensorBoard's uploader (tensorboard dev upload, up to 2.15) sends a blob
// as chunks of at most max_blob_request_size bytes, and a zero-byte blob as
// no chunk at all: a WriteBlob stream that ends without a message, so it
// names neither the blob sequence nor the index. It sends a sequence's
// blobs one stream after the other, in index order, right after
// GetOrCreateBlobSequence, on one connection. So the server keeps, per
// caller and connection, the slot that uploader writes next (a cursor): a
// GetOrCreateBlobSequence points it at slot 0 of the sequence, a stream for
// slot i of the same sequence moves it to i+1, and an empty stream stores
// an empty blob in the slot under the cursor, after the guard has
// authorized it as if the client had sent {blob_sequence_id, index,
// finalize_object} itself, and moves it on.
//
// Limits, documented in docs/object-layout.md: the cursor lives in the
// process's memory, so an empty stream that reaches another instance than
// the sequence's GetOrCreateBlobSequence (several Cloud Run instances)
// finds none; and the stock uploader skips a blob larger than the limit
// the server announced without telling it, so an empty blob right after a
// skipped one lands in the skipped blob's slot. An empty stream that finds
// no cursor, or one past the sequence's end, stores nothing and is logged:
// it names nothing the server could check, and failing it would stop the
// stock uploader.

// maxBlobCursors bounds the cursors kept; beyond it the least recently
// used go first. cursorIdle is how long an unused cursor is kept at all.
const (
	maxBlobCursors = 10000
	cursorIdle     = 10 * time.Minute
)

// blobCursors maps a caller's connection to the blob slot it writes next.
type blobCursors struct {
	mu sync.Mutex
	m  map[string]*blobCursor
}

type blobCursor struct {
	seqID  string
	index  int64 // the slot written next
	length int64 // the sequence's final_sequence_length
	used   time.Time
}

// cursorKey identifies a caller's connection: the principal and the
// connection's remote address.
func cursorKey(ctx context.Context, userID string) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return userID + " " + p.Addr.String()
	}
	return userID
}

// start points the cursor at slot 0 of a sequence just created or found.
func (c *blobCursors) start(key, seqID string, length int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*blobCursor{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxBlobCursors {
		c.evict(now)
	}
	c.m[key] = &blobCursor{seqID: seqID, length: length, used: now}
}

// evict removes idle cursors, or else the least recently used one.
func (c *blobCursors) evict(now time.Time) {
	var oldest string
	for k, cur := range c.m {
		if now.Sub(cur.used) > cursorIdle {
			delete(c.m, k)
		} else if oldest == "" || cur.used.Before(c.m[oldest].used) {
			oldest = k
		}
	}
	if len(c.m) >= maxBlobCursors {
		delete(c.m, oldest)
	}
}

// wrote records a stream for slot index of seqID: the cursor moves past
// it, or goes if it points at another sequence.
func (c *blobCursors) wrote(key, seqID string, index int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.m[key]
	switch {
	case cur == nil:
	case cur.seqID != seqID:
		delete(c.m, key)
	default:
		cur.index, cur.used = index+1, now
	}
}

// next returns the slot under the cursor and moves the cursor on; ok is
// false when there is none.
func (c *blobCursors) next(key string, now time.Time) (seqID string, index int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.m[key]
	if cur == nil || cur.index >= cur.length || now.Sub(cur.used) > cursorIdle {
		return "", 0, false
	}
	seqID, index = cur.seqID, cur.index
	cur.index, cur.used = index+1, now
	return seqID, index, true
}

// emptyBlobRequest is the request an empty WriteBlob stream stands for,
// authorized by the guard, or nil when no slot awaits one.
func (s *Server) emptyBlobRequest(stream servicepb.TensorBoardWriterService_WriteBlobServer) (*servicepb.WriteBlobRequest, error) {
	ctx := stream.Context()
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	seqID, index, ok := s.cursors.next(cursorKey(ctx, p.UserID), s.now())
	if !ok {
		s.logger.WarnContext(ctx, "an empty WriteBlob stream names no blob and no blob sequence of this connection awaits one; nothing stored", "user_id", p.UserID)
		return nil, nil
	}
	req := &servicepb.WriteBlobRequest{BlobSequenceId: seqID, Index: index, FinalizeObject: true}
	var ss grpc.ServerStream = stream
	if g, ok := stream.(*grpc.GenericServerStream[servicepb.WriteBlobRequest, servicepb.WriteBlobResponse]); ok {
		ss = g.ServerStream
	}
	if err := tenancy.AuthorizeMessage(ss, req); err != nil {
		return nil, err
	}
	return req, nil
}
