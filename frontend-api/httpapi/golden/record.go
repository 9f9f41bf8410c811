package golden

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// call is one recorded call: the request and its answer (a message, the
// messages of a server stream, or a status code and message), each proto
// in the wire format.
type call struct {
	Method    string     `json:"method"`
	Request   []byte     `json:"request"`
	Response  []byte     `json:"response,omitempty"`
	Responses [][]byte   `json:"responses,omitempty"`
	Code      codes.Code `json:"code,omitempty"`
	Message   string     `json:"message,omitempty"`
}

// header is a recording's first line.
type header struct {
	Experiment string `json:"experiment"`
}

func key(method string, req any) (string, []byte, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return "", nil, fmt.Errorf("golden: %s request is a %T, not a proto message", method, req)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return "", nil, err
	}
	return method + "\x00" + string(b), b, nil
}

// Recorder is a gRPC connection that passes every call to conn and, while
// recording (Start), keeps each call's request and answer: unary calls
// and server streams (one request, many answers).
type Recorder struct {
	conn      grpc.ClientConnInterface
	mu        sync.Mutex
	recording bool
	skip      []string // methods not recorded
	calls     map[string]call
}

// NewRecorder wraps conn.
func NewRecorder(conn grpc.ClientConnInterface) *Recorder {
	return &Recorder{conn: conn}
}

// Start forgets what was recorded and records the calls from now on, but
// for those to the methods skip names (such as ReadBlob, whose answers are
// whole blobs: too big to keep beside the code).
func (r *Recorder) Start(skip ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording, r.skip, r.calls = true, skip, map[string]call{}
}

// records says whether a call to method is recorded now; r.mu is held.
func (r *Recorder) records(method string) bool {
	return r.recording && !slices.Contains(r.skip, method)
}

// Invoke implements grpc.ClientConnInterface.
func (r *Recorder) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	err := r.conn.Invoke(ctx, method, args, reply, opts...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.records(method) {
		return err
	}
	k, req, kerr := key(method, args)
	if kerr != nil {
		return kerr
	}
	c := call{Method: method, Request: req}
	if err != nil {
		st := status.Convert(err)
		c.Code, c.Message = st.Code(), st.Message()
	} else if c.Response, kerr = marshal(reply); kerr != nil {
		return kerr
	}
	r.calls[k] = c
	return err
}

func marshal(m any) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m.(proto.Message))
}

// NewStream implements grpc.ClientConnInterface.
func (r *Recorder) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := r.conn.NewStream(ctx, desc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &recordedStream{ClientStream: s, r: r, method: method}, nil
}

// recordedStream keeps a server stream's request and answers, and records
// them when the stream ends.
type recordedStream struct {
	grpc.ClientStream
	r         *Recorder
	method    string
	key       string
	request   []byte
	responses [][]byte
}

func (s *recordedStream) SendMsg(m any) error {
	k, req, err := key(s.method, m)
	if err != nil {
		return err
	}
	s.key, s.request = k, req
	return s.ClientStream.SendMsg(m)
}

func (s *recordedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		b, merr := marshal(m)
		if merr != nil {
			return merr
		}
		s.responses = append(s.responses, b)
		return nil
	}
	c := call{Method: s.method, Request: s.request, Responses: s.responses}
	if err != io.EOF {
		st := status.Convert(err)
		c.Code, c.Message = st.Code(), st.Message()
	}
	s.r.mu.Lock()
	if s.r.records(s.method) && s.key != "" {
		s.r.calls[s.key] = c
	}
	s.r.mu.Unlock()
	return err
}

// Save stops recording and writes what was recorded, with the experiment
// the requests name, to path (gzipped JSON lines, in a stable order).
func (r *Recorder) Save(path, experiment string) error {
	r.mu.Lock()
	calls := r.calls
	r.recording, r.calls = false, nil
	r.mu.Unlock()
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(f)
	enc := json.NewEncoder(gz)
	err = enc.Encode(header{Experiment: experiment})
	for _, k := range keys {
		if err == nil {
			err = enc.Encode(calls[k])
		}
	}
	if cerr := gz.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Replay is a gRPC connection that answers each call with the answer
// recorded for the same method and request (Recorder.Save), and any other
// call with Unimplemented, naming it (NotRecorded).
type Replay struct {
	experiment string
	calls      map[string]call
}

// OpenReplay reads a recording.
func OpenReplay(path string) (*Replay, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bufio.NewReader(gz))
	var h header
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	r := &Replay{experiment: h.Experiment, calls: map[string]call{}}
	for dec.More() {
		var c call
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r.calls[c.Method+"\x00"+string(c.Request)] = c
	}
	return r, nil
}

// Experiment is the experiment the recorded requests name.
func (r *Replay) Experiment() string { return r.experiment }

const notRecorded = "golden: no recorded answer to"

// NotRecorded says whether the HTTP API answered r because a call it made
// had no recorded answer to replay, to method.
func NotRecorded(r Response, method string) bool {
	return r.Status == http.StatusNotImplemented && bytes.Contains(r.Body, []byte(notRecorded+" "+method+" "))
}

// lookup finds the recorded answer to method with request args.
func (r *Replay) lookup(method string, args any) (call, error) {
	k, _, err := key(method, args)
	if err != nil {
		return call{}, err
	}
	c, ok := r.calls[k]
	if !ok {
		return call{}, status.Errorf(codes.Unimplemented, "%s %s %v (rerecord: services/allinone/readpath's tests with -update)", notRecorded, method, args)
	}
	return c, nil
}

// Invoke implements grpc.ClientConnInterface.
func (r *Replay) Invoke(_ context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	c, err := r.lookup(method, args)
	if err != nil {
		return err
	}
	if c.Code != codes.OK {
		return status.Error(c.Code, c.Message)
	}
	return proto.Unmarshal(c.Response, reply.(proto.Message))
}

// NewStream implements grpc.ClientConnInterface for server streams: the
// one request sent, then the recorded answers.
func (r *Replay) NewStream(ctx context.Context, _ *grpc.StreamDesc, method string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	return &replayedStream{ctx: ctx, r: r, method: method}, nil
}

type replayedStream struct {
	ctx    context.Context
	r      *Replay
	method string
	call   call
	err    error // the lookup's, until a request is sent
	next   int
}

func (s *replayedStream) SendMsg(m any) error {
	s.call, s.err = s.r.lookup(s.method, m)
	return nil
}

func (s *replayedStream) RecvMsg(m any) error {
	switch {
	case s.err != nil:
		return s.err
	case s.next < len(s.call.Responses):
		s.next++
		return proto.Unmarshal(s.call.Responses[s.next-1], m.(proto.Message))
	case s.call.Code != codes.OK:
		return status.Error(s.call.Code, s.call.Message)
	}
	return io.EOF
}

func (s *replayedStream) Header() (metadata.MD, error) { return nil, nil }
func (s *replayedStream) Trailer() metadata.MD         { return nil }
func (s *replayedStream) CloseSend() error             { return nil }
func (s *replayedStream) Context() context.Context     { return s.ctx }
