package writer

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
)

// chunkReader receives a WriteBlob stream's requests within its deadlines:
// each must arrive within idle of being asked for, and none after total
// from the start. A stream that stalls is ended by its handler returning,
// which is the only way to stop a server stream's Recv.
type chunkReader struct {
	stream  servicepb.TensorBoardWriterService_WriteBlobServer
	idle    time.Duration
	total   *time.Timer
	limit   time.Duration
	want    chan struct{}
	results chan received
	done    chan struct{}
}

type received struct {
	req *servicepb.WriteBlobRequest
	err error
}

func newChunkReader(stream servicepb.TensorBoardWriterService_WriteBlobServer, idle, total time.Duration) *chunkReader {
	c := &chunkReader{
		stream: stream, idle: idle, total: time.NewTimer(total), limit: total,
		want: make(chan struct{}), results: make(chan received, 1), done: make(chan struct{}),
	}
	go c.loop()
	return c
}

// loop receives one request per want; it ends at the first error or when
// the handler is done (the stream's Recv then returns, its call over).
func (c *chunkReader) loop() {
	for {
		select {
		case <-c.want:
		case <-c.done:
			return
		}
		req, err := c.stream.Recv()
		c.results <- received{req, err}
		if err != nil {
			return
		}
	}
}

// next is the stream's next request, io.EOF at its end, or an error once
// a deadline passes.
func (c *chunkReader) next() (*servicepb.WriteBlobRequest, error) {
	c.want <- struct{}{}
	idle := time.NewTimer(c.idle)
	defer idle.Stop()
	select {
	case r := <-c.results:
		return r.req, r.err
	case <-idle.C:
		return nil, rpcerr.New(codes.DeadlineExceeded,
			"no request for %v: an idle WriteBlob stream is closed; what arrived is kept, resume from GetBlobMetadata", c.idle)
	case <-c.total.C:
		return nil, rpcerr.New(codes.DeadlineExceeded,
			"a WriteBlob stream may last %v: what arrived is kept, resume from GetBlobMetadata", c.limit)
	}
}

// stop ends the receiving goroutine once the handler returns.
func (c *chunkReader) stop() {
	c.total.Stop()
	close(c.done)
}

// clientOf is the client address of a call, as Config.ClientAddr resolves
// it; "" if unknown.
func (s *Server) clientOf(ctx context.Context) string {
	if s.cfg.ClientAddr == nil {
		return connOf(ctx)
	}
	if a, ok := s.cfg.ClientAddr(ctx); ok {
		return a.String()
	}
	return ""
}

// connOf names the client connection of a call: its remote address, one
// per TCP connection.
func connOf(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}
