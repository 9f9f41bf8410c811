// Package client connects tbup to a tbhub server: the HTTP handshake that names the
// gRPC endpoint, the experiment URL format and the upload limits (TensorBoard.dev's
// POST /api/uploader protocol), the gRPC connection carrying the user's bearer
// token, and the retry policy for calls.
package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// Version is what tbup reports to servers as its client version.
const Version = "tbup/0.1"

// Limits are the upload limits a server advertises, with TensorBoard's client
// defaults where it says nothing.
type Limits struct {
	MaxBlobSize          int64
	MaxTensorPointSize   int64
	MaxScalarRequestSize int64
	MaxTensorRequestSize int64
	MaxBlobRequestSize   int64 // bytes of blob data per WriteBlob message
	MinScalarInterval    time.Duration
	MinTensorInterval    time.Duration
	MinBlobInterval      time.Duration
}

// DefaultLimits are TensorBoard's uploader defaults for a server that sends none.
var DefaultLimits = Limits{
	MaxBlobSize:          10 << 20,
	MaxTensorPointSize:   16 << 10,
	MaxScalarRequestSize: 128 << 10,
	MaxTensorRequestSize: 512 << 10,
	MaxBlobRequestSize:   4<<20 - 256<<10,
	MinScalarInterval:    5000 * time.Millisecond,
	MinTensorInterval:    1000 * time.Millisecond,
	MinBlobInterval:      1000 * time.Millisecond,
}

// ServerInfo is the handshake's answer, resolved.
type ServerInfo struct {
	Endpoint       string // gRPC target
	URLTemplate    string
	IDPlaceholder  string
	AllowedPlugins []string
	Limits         Limits
	Warning        string // the server's compatibility details, if any
}

// ExperimentURL is where people open an experiment.
func (s *ServerInfo) ExperimentURL(eid string) string {
	return strings.ReplaceAll(s.URLTemplate, s.IDPlaceholder, eid)
}

// Errors a user should be able to tell apart.
var (
	ErrServer       = errors.New("server error")
	ErrIncompatible = errors.New("the server does not accept this client")
	// ErrUnreachable: no answer at all (connection refused, unknown host,
	// timeout): nothing the server did, so no trace of it in its logs.
	ErrUnreachable = errors.New("cannot reach the server")
)

// Handshake asks server (an http(s) origin) how to upload.
func Handshake(ctx context.Context, hc *http.Client, server string, plugins []string) (*ServerInfo, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q is not an http:// or https:// URL", server)
	}
	req := &servicepb.ServerInfoRequest{Version: Version}
	if len(plugins) > 0 {
		req.PluginSpecification = &servicepb.PluginSpecification{UploadPlugins: plugins}
	}
	body, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(server, "/")+"/api/uploader", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("User-Agent", Version)
	// The command's trace (StartTrace), as on its gRPC calls.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(hreq.Header))
	resp, err := hc.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("%w at %s (%v)", ErrUnreachable, server, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the handshake from %s: %v", ErrServer, server, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered %s to the upload handshake; is it a tbhub server?", ErrServer, server, resp.Status)
	}
	var info servicepb.ServerInfoResponse
	if err := proto.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("%w: %s sent an unreadable handshake; is it a tbhub server?", ErrServer, server)
	}
	return resolve(server, &info)
}

func resolve(server string, info *servicepb.ServerInfoResponse) (*ServerInfo, error) {
	c := info.GetCompatibility()
	switch c.GetVerdict() {
	case servicepb.CompatibilityVerdict_VERDICT_ERROR:
		return nil, fmt.Errorf("%w: %s", ErrIncompatible, c.GetDetails())
	}
	si := &ServerInfo{
		Endpoint:      info.GetApiServer().GetEndpoint(),
		URLTemplate:   info.GetUrlFormat().GetTemplate(),
		IDPlaceholder: info.GetUrlFormat().GetIdPlaceholder(),
		Warning:       c.GetDetails(),
		Limits:        DefaultLimits,
	}
	if si.Endpoint == "" {
		return nil, fmt.Errorf("%w: %s named no API endpoint", ErrServer, server)
	}
	if si.URLTemplate == "" {
		si.URLTemplate, si.IDPlaceholder = strings.TrimRight(server, "/")+"/experiment/{{EID}}/", "{{EID}}"
	}
	if si.IDPlaceholder == "" {
		si.IDPlaceholder = "{{EID}}"
	}
	if pc := info.GetPluginControl(); pc != nil {
		si.AllowedPlugins = pc.GetAllowedPlugins()
	} else {
		si.AllowedPlugins = []string{"scalars"} // what an old server understood
	}
	l := info.GetUploadLimits()
	setSize := func(dst *int64, v int64) {
		if v != 0 {
			*dst = v // negative: that class is not uploaded
		}
	}
	setSize(&si.Limits.MaxBlobSize, l.GetMaxBlobSize())
	setSize(&si.Limits.MaxTensorPointSize, l.GetMaxTensorPointSize())
	setSize(&si.Limits.MaxScalarRequestSize, l.GetMaxScalarRequestSize())
	setSize(&si.Limits.MaxTensorRequestSize, l.GetMaxTensorRequestSize())
	setSize(&si.Limits.MaxBlobRequestSize, l.GetMaxBlobRequestSize())
	setInterval := func(dst *time.Duration, ms int64) {
		if ms != 0 {
			*dst = time.Duration(max(ms, 0)) * time.Millisecond
		}
	}
	setInterval(&si.Limits.MinScalarInterval, l.GetMinScalarRequestInterval())
	setInterval(&si.Limits.MinTensorInterval, l.GetMinTensorRequestInterval())
	setInterval(&si.Limits.MinBlobInterval, l.GetMinBlobRequestInterval())
	// The handshake cannot say "no interval" with 0 (that means "default"), so a
	// server that wants none sends 1 ms; treat that as none.
	for _, d := range []*time.Duration{&si.Limits.MinScalarInterval, &si.Limits.MinTensorInterval, &si.Limits.MinBlobInterval} {
		if *d <= time.Millisecond {
			*d = 0
		}
	}
	return si, nil
}

// bearer attaches a token to every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if b.token == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Dial connects to a gRPC endpoint. TLS is used when secure; the token (if any)
// travels as "authorization: Bearer" metadata on every call.
func Dial(endpoint string, secure bool, token string) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if secure {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	return grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(bearer{token: token, secure: secure}),
		grpc.WithUserAgent(Version),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)),
		// Calls carry the trace context of their ctx (see StartTrace) as W3C
		// traceparent; tbup itself records no spans.
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tracenoop.NewTracerProvider()),
			otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelgrpc.WithPropagators(propagation.TraceContext{}))),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return noteFailure(ctx, invoker(ctx, method, req, reply, cc, opts...), endpoint)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			cs, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, noteFailure(ctx, err, endpoint)
			}
			return noteStream{cs, ctx, endpoint}, nil
		}),
	)
}

// noteFailure returns what a call under ctx ended with, err, after noting
// in the command's state (StartTrace) a failure the server answered: not
// reaching it (Unavailable) or giving up (Canceled) leaves nothing in its
// logs. A failure to connect (gRPC's "connection error: ...", which says
// where it tried only in the dialer's details) becomes "cannot reach the
// server at HOST:PORT (connection error: ...)", still Unavailable.
func noteFailure(ctx context.Context, err error, endpoint string) error {
	if err == nil || err == io.EOF {
		return err
	}
	st, ok := status.FromError(err)
	switch {
	case !ok:
		return err
	case st.Code() == codes.Unavailable && strings.HasPrefix(st.Message(), "connection error"):
		return status.Error(codes.Unavailable, fmt.Sprintf("%s at %s (%s)", ErrUnreachable, strings.TrimPrefix(endpoint, "dns:///"), st.Message()))
	case st.Code() == codes.Unavailable, st.Code() == codes.Canceled:
		return err
	}
	if cs, ok := ctx.Value(commandKey{}).(*commandState); ok {
		cs.serverFailed.Store(true)
	}
	return err
}

// UnreachableAt reports whether err says that no server answered at an
// address (noteFailure's "cannot reach the server at HOST:PORT (...)"),
// and returns that message without the connection error's detail.
func UnreachableAt(err error) (string, bool) {
	m := status.Convert(err).Message()
	if !strings.HasPrefix(m, ErrUnreachable.Error()) {
		return "", false
	}
	where, _, _ := strings.Cut(m, " (")
	return where, true
}

// noteStream is a stream whose failures noteFailure sees.
type noteStream struct {
	grpc.ClientStream
	ctx      context.Context
	endpoint string
}

func (s noteStream) SendMsg(m any) error {
	return noteFailure(s.ctx, s.ClientStream.SendMsg(m), s.endpoint)
}

func (s noteStream) RecvMsg(m any) error {
	return noteFailure(s.ctx, s.ClientStream.RecvMsg(m), s.endpoint)
}

func (s noteStream) CloseSend() error {
	return noteFailure(s.ctx, s.ClientStream.CloseSend(), s.endpoint)
}

// commandKey is the context key of a command's *commandState.
type commandKey struct{}

// commandState is what the calls of one command (see StartTrace) noted.
type commandState struct{ serverFailed atomic.Bool }

// ServerFailed reports whether a call made under ctx (from StartTrace) was
// answered by the server with an error, whose logs then hold the trace.
func ServerFailed(ctx context.Context) bool {
	st, ok := ctx.Value(commandKey{}).(*commandState)
	return ok && st.serverFailed.Load()
}

// StartTrace returns ctx inside a new, sampled trace for one tbup command:
// every call made with it carries the same trace id, so the server's spans
// and log lines of a whole upload can be found together.
func StartTrace(ctx context.Context) context.Context {
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = crand.Read(tid[:]) // crypto/rand.Read never fails
	_, _ = crand.Read(sid[:])
	ctx = context.WithValue(ctx, commandKey{}, &commandState{})
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled,
	}))
}

// Retry is a retry policy with exponential backoff and jitter.
type Retry struct {
	Attempts int           // total attempts, at least 1
	Base     time.Duration // first backoff
	Max      time.Duration // longest backoff
	Timeout  time.Duration // per attempt; 0 = none
	// OnRetry, if set, is told about each retry (for progress output).
	OnRetry func(err error, wait time.Duration)
}

// DefaultRetry survives a server restart of a minute or so.
var DefaultRetry = Retry{Attempts: 10, Base: 500 * time.Millisecond, Max: 15 * time.Second, Timeout: 60 * time.Second}

// Retryable reports whether a failed call may succeed if tried again. Every call
// tbup retries is idempotent, so statuses a stopping server produces for calls in
// flight (Canceled, Unknown, Internal for a stream cut mid-way) are retried too;
// Do stops anyway when the caller's own context is done.
func Retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Aborted, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Internal, codes.Unknown, codes.Canceled:
		return !errors.Is(err, context.Canceled)
	}
	return false
}

// Do calls fn until it succeeds, fails with a permanent error, or attempts run out.
func (r Retry) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	var err error
	wait := r.Base
	for attempt := 1; ; attempt++ {
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		if r.Timeout > 0 {
			callCtx, cancel = context.WithTimeout(ctx, r.Timeout)
		}
		err = fn(callCtx)
		cancel()
		if err == nil || !Retryable(err) || attempt >= r.Attempts || ctx.Err() != nil {
			return err
		}
		// Full jitter in [wait/2, wait): clients that failed together retry apart.
		d := wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		if told, ok := RetryDelay(err); ok {
			// The server said when (a rate limit's RetryInfo): no sooner, and
			// up to a tenth later, so that the calls it refused together
			// come back apart.
			d = told + time.Duration(rand.Int64N(int64(told/10)+1))
		}
		if r.OnRetry != nil {
			r.OnRetry(err, d)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
		wait = min(2*wait, r.Max)
	}
}

// RetryDelay is the wait err's google.rpc.RetryInfo detail asks for: what
// tbhub's rate limit answers with RESOURCE_EXHAUSTED (services/internal/policy/rpcerr.Throttled).
func RetryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			if w := ri.GetRetryDelay().AsDuration(); w > 0 {
				return w, true
			}
		}
	}
	return 0, false
}

// Describe turns a gRPC error into a sentence for people.
func Describe(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	switch st.Code() {
	case codes.Unauthenticated:
		return "not signed in, or the token is invalid or revoked (" + st.Message() + "); run 'tbup auth login' or pass --token"
	case codes.PermissionDenied:
		return "permission denied: " + st.Message()
	case codes.NotFound:
		return "not found: " + st.Message()
	case codes.ResourceExhausted:
		return "limit reached: " + st.Message()
	case codes.Unavailable:
		if strings.HasPrefix(st.Message(), ErrUnreachable.Error()) { // named by noteFailure
			return st.Message()
		}
		if strings.HasPrefix(st.Message(), "connection error") {
			return "cannot reach the server (" + st.Message() + ")"
		}
		return "the server is unavailable: " + st.Message()
	case codes.InvalidArgument:
		return "rejected by the server: " + st.Message()
	}
	return fmt.Sprintf("%s: %s", st.Code(), st.Message())
}
