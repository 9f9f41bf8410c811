package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/eventgen"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
)

// fakeServer is an in-memory write service reached over an in-process gRPC
// connection. It stores what it is sent as tbhub does (points keyed by step, blobs
// by sequence and index, the complete chunks of a broken stream kept unfinalized)
// and lets a test fail, hold or cut any call through fault.
type fakeServer struct {
	servicepb.UnimplementedTensorBoardWriterServiceServer
	lis *bufconn.Listener

	connMu sync.Mutex
	conns  []net.Conn // client connections dialled, for dropConnections

	mu     sync.Mutex
	points map[seriesKey]map[int64]bool // scalar and tensor steps stored
	seqs   map[string]*fakeSeq          // by blob sequence id
	calls  map[string]int               // calls received, by method
	// fault, if set, runs before each call and before each WriteBlob message; an
	// error fails the call (it may also block, to hold a call).
	fault func(c call) error
}

// call is what fault sees of a request.
type call struct {
	method string
	run    string // of the sequence, for blob calls
	tag    string
	step   int64
	index  int64 // WriteBlob: the blob's index
	offset int64 // WriteBlob: the chunk's offset
	first  bool  // WriteBlob: the stream's first message
	req    proto.Message
}

type seriesKey struct{ run, tag string }

type fakeSeq struct {
	run, tag string
	step     int64
	length   int64
	wall     float64
	blobs    map[int64]*fakeBlob
}

type fakeBlob struct {
	data  []byte
	final bool
}

// newFakeServer starts a fake write service and returns a client connected to it.
func newFakeServer(t testing.TB) (*fakeServer, servicepb.TensorBoardWriterServiceClient) {
	t.Helper()
	f := &fakeServer{points: map[seriesKey]map[int64]bool{}, seqs: map[string]*fakeSeq{}, calls: map[string]int{}}
	f.lis = bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	servicepb.RegisterTensorBoardWriterServiceServer(srv, f)
	go srv.Serve(f.lis)
	t.Cleanup(srv.Stop)
	client, _ := f.connect(t)
	return f, client
}

// connect opens another connection to the fake, as another process would.
func (f *fakeServer) connect(t testing.TB) (servicepb.TensorBoardWriterServiceClient, *grpc.ClientConn) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///fake", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			c, err := f.lis.DialContext(ctx)
			if err == nil {
				f.connMu.Lock()
				f.conns = append(f.conns, c)
				f.connMu.Unlock()
			}
			return c, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return servicepb.NewTensorBoardWriterServiceClient(conn), conn
}

// dropConnections breaks every connection to the fake, as a network fault does:
// calls in flight fail, and clients dial again.
func (f *fakeServer) dropConnections() {
	f.connMu.Lock()
	conns := f.conns
	f.conns = nil
	f.connMu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (f *fakeServer) enter(c call) error {
	f.mu.Lock()
	f.calls[c.method]++
	fault := f.fault
	f.mu.Unlock()
	if fault != nil {
		return fault(c)
	}
	return nil
}

func (f *fakeServer) WriteScalar(_ context.Context, req *servicepb.WriteScalarRequest) (*servicepb.WriteScalarResponse, error) {
	if err := f.enter(call{method: "WriteScalar", req: req}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range req.GetRuns() {
		for _, t := range r.GetTags() {
			for _, p := range t.GetPoints() {
				f.store(seriesKey{r.GetName(), t.GetName()}, p.GetStep())
			}
		}
	}
	return &servicepb.WriteScalarResponse{}, nil
}

func (f *fakeServer) WriteTensor(_ context.Context, req *servicepb.WriteTensorRequest) (*servicepb.WriteTensorResponse, error) {
	if err := f.enter(call{method: "WriteTensor", req: req}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range req.GetRuns() {
		for _, t := range r.GetTags() {
			for _, p := range t.GetPoints() {
				f.store(seriesKey{r.GetName(), t.GetName()}, p.GetStep())
			}
		}
	}
	return &servicepb.WriteTensorResponse{}, nil
}

func (f *fakeServer) store(k seriesKey, step int64) {
	if f.points[k] == nil {
		f.points[k] = map[int64]bool{}
	}
	f.points[k][step] = true
}

func (f *fakeServer) GetOrCreateBlobSequence(_ context.Context, req *servicepb.GetOrCreateBlobSequenceRequest) (*servicepb.GetOrCreateBlobSequenceResponse, error) {
	if err := f.enter(call{method: "GetOrCreateBlobSequence", run: req.GetRun(), tag: req.GetTag(), step: req.GetStep(), req: req}); err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%s\x00%s\x00%d", req.GetRun(), req.GetTag(), req.GetStep())
	wall := req.GetWallTime().AsTime()
	w := float64(wall.UnixNano()) / 1e9
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.seqs[id]; s == nil || s.wall != w || s.length != req.GetFinalSequenceLength() {
		// New, or a rewrite of the step: the last write wins, its old blobs go.
		f.seqs[id] = &fakeSeq{run: req.GetRun(), tag: req.GetTag(), step: req.GetStep(), length: req.GetFinalSequenceLength(), wall: w, blobs: map[int64]*fakeBlob{}}
	}
	return &servicepb.GetOrCreateBlobSequenceResponse{BlobSequenceId: id}, nil
}

func (f *fakeServer) GetBlobMetadata(_ context.Context, req *servicepb.GetBlobMetadataRequest) (*servicepb.GetBlobMetadataResponse, error) {
	f.mu.Lock()
	s := f.seqs[req.GetBlobSequenceId()]
	f.mu.Unlock()
	if s == nil {
		return nil, status.Error(codes.NotFound, "blob sequence not found")
	}
	if err := f.enter(call{method: "GetBlobMetadata", run: s.run, tag: s.tag, step: s.step, index: req.GetIndex(), req: req}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := s.blobs[req.GetIndex()]
	switch {
	case b == nil:
		return &servicepb.GetBlobMetadataResponse{BlobState: servicepb.BlobState_BLOB_STATE_UNKNOWN}, nil
	case b.final:
		return &servicepb.GetBlobMetadataResponse{BlobState: servicepb.BlobState_BLOB_STATE_CURRENT, Size: int64(len(b.data)), Crc32C: crc32c(b.data)}, nil
	}
	return &servicepb.GetBlobMetadataResponse{BlobState: servicepb.BlobState_BLOB_STATE_UNFINALIZED, Size: int64(len(b.data)), Crc32C: crc32c(b.data)}, nil
}

// WriteBlob keeps the chunks received in order; a stream at offset 0 starts the
// blob over, a stream that ends without finalize_object leaves it unfinalized.
func (f *fakeServer) WriteBlob(stream servicepb.TensorBoardWriterService_WriteBlobServer) error {
	for first := true; ; first = false {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f.mu.Lock()
		s := f.seqs[req.GetBlobSequenceId()]
		f.mu.Unlock()
		if s == nil {
			return status.Error(codes.NotFound, "blob sequence not found")
		}
		if err := f.enter(call{method: "WriteBlob", run: s.run, tag: s.tag, step: s.step, index: req.GetIndex(), offset: req.GetOffset(), first: first, req: req}); err != nil {
			return err
		}
		f.mu.Lock()
		b := s.blobs[req.GetIndex()]
		switch {
		case b != nil && b.final:
			f.mu.Unlock()
			return status.Error(codes.AlreadyExists, "blob already uploaded")
		case req.GetOffset() == 0:
			b = &fakeBlob{}
			s.blobs[req.GetIndex()] = b
		case b == nil || req.GetOffset() != int64(len(b.data)):
			f.mu.Unlock()
			return status.Error(codes.FailedPrecondition, "offset does not continue the bytes received")
		}
		b.data = append(b.data, req.GetData()...)
		final := req.GetFinalizeObject()
		b.final = final
		size := int64(len(b.data))
		f.mu.Unlock()
		st := servicepb.BlobState_BLOB_STATE_UNFINALIZED
		if final {
			st = servicepb.BlobState_BLOB_STATE_CURRENT
		}
		if err := stream.Send(&servicepb.WriteBlobResponse{BlobState: st, Size: size}); err != nil {
			return err
		}
		if final {
			return nil
		}
	}
}

// blobPoint is one stored blob sequence point, as the test compares them.
type blobPoint struct {
	run, tag string
	step     int64
	blobs    [][]byte // nil where a slot holds no finalized blob
}

// blobPoints lists the stored sequences whose every slot holds a finalized blob,
// and says which do not.
func (f *fakeServer) blobPoint(run, tag string, step int64) (blobPoint, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.seqs[fmt.Sprintf("%s\x00%s\x00%d", run, tag, step)]
	if s == nil {
		return blobPoint{}, false
	}
	p := blobPoint{run: run, tag: tag, step: step}
	complete := true
	for i := int64(0); i < s.length; i++ {
		b := s.blobs[i]
		if b == nil || !b.final {
			complete = false
			p.blobs = append(p.blobs, nil)
			continue
		}
		p.blobs = append(p.blobs, b.data)
	}
	return p, complete
}

func (f *fakeServer) hasPoint(run, tag string, step int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.points[seriesKey{run, tag}][step]
}

func (f *fakeServer) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// memLogdir is a logdir held in memory: runs of event files, each recording where
// every event it holds ends, so a test can say which events a file offset covers.
type memLogdir struct {
	mu    sync.Mutex
	runs  map[string][]string // file names by run
	files map[string]*memFile // by path "run/name"
}

type memFile struct {
	data   []byte
	events []memEvent // in file order
}

// memEvent is one event written: where its record ends and what it holds.
type memEvent struct {
	end    int64
	tag    string
	step   int64
	blobs  [][]byte // a blob sequence's blobs
	scalar bool
}

func newMemLogdir() *memLogdir {
	return &memLogdir{runs: map[string][]string{}, files: map[string]*memFile{}}
}

// file starts an event file (with its file_version record) and returns a writer
// that appends events to it.
func (m *memLogdir) file(t testing.TB, run, name string) *memWriter {
	t.Helper()
	var buf bytes.Buffer
	w := eventgen.NewWriter(&buf)
	if err := w.WriteEvent(&tbpb.Event{WallTime: 1.7e9, What: &tbpb.Event_FileVersion{FileVersion: "brain.Event:2"}}); err != nil {
		t.Fatal(err)
	}
	mf := &memFile{}
	m.mu.Lock()
	m.runs[run] = append(m.runs[run], name)
	sort.Strings(m.runs[run])
	m.files[run+"/"+name] = mf
	m.mu.Unlock()
	mw := &memWriter{t: t, m: m, f: mf, buf: &buf, w: w}
	mw.sync()
	return mw
}

type memWriter struct {
	t   testing.TB
	m   *memLogdir
	f   *memFile
	buf *bytes.Buffer
	w   *eventgen.Writer
}

func (w *memWriter) sync() {
	if err := w.w.Close(); err != nil { // flushes; the writer stays usable on a bytes.Buffer
		w.t.Fatal(err)
	}
	w.m.mu.Lock()
	w.f.data = w.buf.Bytes() // the buffer only grows: what readers hold stays valid
	w.m.mu.Unlock()
}

func (w *memWriter) add(ev *tbpb.Event, me memEvent) {
	w.t.Helper()
	if err := w.w.WriteEvent(ev); err != nil {
		w.t.Fatal(err)
	}
	w.sync()
	w.m.mu.Lock()
	me.end = int64(len(w.f.data))
	w.f.events = append(w.f.events, me)
	w.m.mu.Unlock()
}

func (w *memWriter) scalar(tag string, step int64, v float32) {
	var md *tbpb.SummaryMetadata
	if len(w.f.events) == 0 {
		md = eventgen.ScalarMetadata()
	}
	w.add(eventgen.Scalar(tag, step, 1.7e9+float64(step), v, md), memEvent{tag: tag, step: step, scalar: true})
}

// image writes an image summary; its blob sequence is width, height, images.
func (w *memWriter) image(tag string, step int64, images ...[]byte) {
	w.imageAt(tag, step, 1.7e9+float64(step), images...)
}

// imageAt writes an image summary with the given wall time.
func (w *memWriter) imageAt(tag string, step int64, wall float64, images ...[]byte) {
	blobs := append([][]byte{[]byte("8"), []byte("8")}, images...)
	w.add(eventgen.Image(tag, step, wall, 8, 8, images...), memEvent{tag: tag, step: step, blobs: blobs})
}

func (m *memLogdir) String() string { return "memory logdir" }

func (m *memLogdir) Scan(context.Context) ([]logdir.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var runs []logdir.Run
	for run, names := range m.runs {
		r := logdir.Run{Name: run}
		for _, n := range names {
			r.Files = append(r.Files, logdir.File{Name: n, Path: run + "/" + n, Size: int64(len(m.files[run+"/"+n].data))})
		}
		runs = append(runs, r)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	return runs, nil
}

func (m *memLogdir) Open(_ context.Context, path string, offset int64) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.files[path]
	if f == nil || offset < 0 || offset > int64(len(f.data)) {
		return nil, fmt.Errorf("no file %q at offset %d", path, offset)
	}
	return io.NopCloser(bytes.NewReader(f.data[offset:])), nil
}

func (m *memLogdir) Stat(_ context.Context, path string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.files[path]; f != nil {
		return int64(len(f.data)), nil
	}
	return 0, errors.New("no such file")
}

// missing lists the events below offset of run's file name that the server does
// not hold (a blob point counts only with every blob finalized and equal).
func (m *memLogdir) missing(f *fakeServer, run, name string, offset int64) []string {
	m.mu.Lock()
	events := m.files[run+"/"+name].events
	m.mu.Unlock()
	var out []string
	for _, e := range events {
		if e.end > offset {
			break
		}
		if e.scalar {
			if !f.hasPoint(run, e.tag, e.step) {
				out = append(out, fmt.Sprintf("%s/%s scalar step %d", run, e.tag, e.step))
			}
			continue
		}
		p, complete := f.blobPoint(run, e.tag, e.step)
		if !complete || len(p.blobs) != len(e.blobs) {
			out = append(out, fmt.Sprintf("%s/%s blob step %d", run, e.tag, e.step))
			continue
		}
		for i := range e.blobs {
			if !bytes.Equal(p.blobs[i], e.blobs[i]) {
				out = append(out, fmt.Sprintf("%s/%s blob step %d index %d differs", run, e.tag, e.step, i))
			}
		}
	}
	return out
}
