package lifecycle

// Benchmarks of the three ways a process can serve gRPC and HTTP
// (docs/benchmarks.md, "gRPC and HTTP on one port"):
//
//   - servehttp: one port, one HTTP server (HTTP/1 + h2c), gRPC requests
//     handed to grpc.Server.ServeHTTP (what serve does without --grpc-addr);
//   - split: one port, connections told apart by their first bytes (the
//     HTTP/2 preface goes to the native gRPC server, the rest to HTTP), as
//     cmux does;
//   - separate: gRPC on a port of its own, native server (--grpc-addr, and
//     the read service).
//
// Over loopback, with the read path's message (ReadScalars: 1,000 points of
// one tag) and the upload path's stream (WriteBlob: 8 MiB in 1 MiB chunks).
//
//	cd services/serverkit && go test -run NONE -bench Transport -benchtime 2s ./lifecycle/

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// benchServices answers ReadScalars with a fixed series and consumes
// WriteBlob streams: the transport is what is measured.
type benchServices struct {
	datapb.UnimplementedTensorBoardDataProviderServer
	servicepb.UnimplementedTensorBoardWriterServiceServer
	scalars *datapb.ReadScalarsResponse
}

func newBenchServices() *benchServices {
	d := &datapb.ScalarData{}
	for i := range 1000 {
		d.Step = append(d.Step, int64(i))
		d.WallTime = append(d.WallTime, 1.7e9+float64(i))
		d.Value = append(d.Value, float32(i)/1000)
	}
	return &benchServices{scalars: &datapb.ReadScalarsResponse{Runs: []*datapb.ReadScalarsResponse_RunEntry{{
		RunName: "train", Tags: []*datapb.ReadScalarsResponse_TagEntry{{TagName: "loss", Data: d}}}}}}
}

func (b *benchServices) ReadScalars(context.Context, *datapb.ReadScalarsRequest) (*datapb.ReadScalarsResponse, error) {
	return b.scalars, nil
}

func (b *benchServices) WriteBlob(s grpc.BidiStreamingServer[servicepb.WriteBlobRequest, servicepb.WriteBlobResponse]) error {
	var n int64
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		n += int64(len(req.GetData()))
		if req.GetFinalizeObject() {
			return s.Send(&servicepb.WriteBlobResponse{Size: n})
		}
	}
}

// chanListener is a net.Listener fed connections by a splitter.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// peekedConn replays the bytes read to tell the protocol.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// split sends connections that open with the HTTP/2 preface to h2 and the
// others to h1, as cmux's HTTP2 matcher does.
func split(lis net.Listener) (h2, h1 *chanListener) {
	h2 = &chanListener{addr: lis.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	h1 = &chanListener{addr: lis.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				h2.Close()
				h1.Close()
				return
			}
			go func() {
				r := bufio.NewReader(c)
				head, err := r.Peek(len(h2Preface))
				if err != nil && len(head) == 0 {
					c.Close()
					return
				}
				to := h1
				if bytes.Equal(head, []byte(h2Preface)) {
					to = h2
				}
				select {
				case to.conns <- &peekedConn{Conn: c, r: r}:
				case <-to.done:
					c.Close()
				}
			}()
		}
	}()
	return h2, h1
}

// startTransport serves the bench services the named way and returns the
// gRPC address.
func startTransport(b *testing.B, mode string) string {
	gs := grpc.NewServer()
	svc := newBenchServices()
	datapb.RegisterTensorBoardDataProviderServer(gs, svc)
	servicepb.RegisterTensorBoardWriterServiceServer(gs, svc)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	p := New(0, nil)
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := lis.Addr().String()
	switch mode {
	case "servehttp":
		p.HTTP(lis, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
				gs.ServeHTTP(w, r)
				return
			}
			mux.ServeHTTP(w, r)
		}))
		p.GRPCInHTTP(gs)
	case "split":
		h2, h1 := split(lis)
		p.GRPC(h2, gs)
		p.HTTP(h1, mux)
	case "separate":
		glis, err := Listen("127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		p.GRPC(glis, gs)
		p.HTTP(lis, mux)
		addr = glis.Addr().String()
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	b.Cleanup(func() {
		stop()
		<-done
	})
	return addr
}

func dialBench(b *testing.B, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

var transportModes = []string{"servehttp", "split", "separate"}

// BenchmarkTransportReadScalars: one read-path call at a time (latency)
// and from many goroutines over one connection (throughput).
func BenchmarkTransportReadScalars(b *testing.B) {
	for _, mode := range transportModes {
		b.Run(mode+"/serial", func(b *testing.B) {
			c := datapb.NewTensorBoardDataProviderClient(dialBench(b, startTransport(b, mode)))
			req := &datapb.ReadScalarsRequest{ExperimentId: "e"}
			for b.Loop() {
				if _, err := c.ReadScalars(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/parallel", func(b *testing.B) {
			c := datapb.NewTensorBoardDataProviderClient(dialBench(b, startTransport(b, mode)))
			req := &datapb.ReadScalarsRequest{ExperimentId: "e"}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.ReadScalars(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkTransportWriteBlob streams 8 MiB in 1 MiB chunks per op, as an
// upload of a large blob does.
func BenchmarkTransportWriteBlob(b *testing.B) {
	const chunk, chunks = 1 << 20, 8
	data := bytes.Repeat([]byte{7}, chunk)
	for _, mode := range transportModes {
		b.Run(mode, func(b *testing.B) {
			c := servicepb.NewTensorBoardWriterServiceClient(dialBench(b, startTransport(b, mode)))
			b.SetBytes(chunk * chunks)
			for b.Loop() {
				s, err := c.WriteBlob(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				for i := range chunks {
					if err := s.Send(&servicepb.WriteBlobRequest{Data: data, Offset: int64(i * chunk), FinalizeObject: i == chunks-1}); err != nil {
						b.Fatal(err)
					}
				}
				if r, err := s.Recv(); err != nil || r.GetSize() != chunk*chunks {
					b.Fatalf("WriteBlob: %v %v", r, err)
				}
				s.CloseSend()
			}
		})
	}
}
