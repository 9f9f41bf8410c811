package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

func handshakeServer(t *testing.T, resp *servicepb.ServerInfoResponse, code int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/uploader" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req servicepb.ServerInfoRequest
		if err := proto.Unmarshal(body, &req); err != nil || req.GetVersion() != Version {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		b, _ := proto.Marshal(resp)
		w.WriteHeader(code)
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHandshakeDefaultsAndOverrides(t *testing.T) {
	srv := handshakeServer(t, &servicepb.ServerInfoResponse{
		Compatibility: &servicepb.Compatibility{Verdict: servicepb.CompatibilityVerdict_VERDICT_WARN, Details: "upgrade soon"},
		ApiServer:     &servicepb.ApiServer{Endpoint: "localhost:6007"},
		UrlFormat:     &servicepb.ExperimentUrlFormat{Template: "http://x/experiment/<id>/", IdPlaceholder: "<id>"},
		PluginControl: &servicepb.PluginControl{AllowedPlugins: []string{"scalars", "images"}},
		UploadLimits:  &servicepb.UploadLimits{MaxScalarRequestSize: 1 << 20, MinScalarRequestInterval: 1, MaxBlobSize: -1},
	}, http.StatusOK)
	info, err := Handshake(context.Background(), srv.Client(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Endpoint != "localhost:6007" || info.ExperimentURL("abc") != "http://x/experiment/abc/" || info.Warning != "upgrade soon" {
		t.Errorf("info %+v", info)
	}
	l := info.Limits
	if l.MaxScalarRequestSize != 1<<20 || l.MinScalarInterval != 0 || l.MaxBlobSize != -1 ||
		l.MaxTensorRequestSize != DefaultLimits.MaxTensorRequestSize || l.MinTensorInterval != DefaultLimits.MinTensorInterval {
		t.Errorf("limits %+v", l)
	}

	srv = handshakeServer(t, &servicepb.ServerInfoResponse{Compatibility: &servicepb.Compatibility{Verdict: servicepb.CompatibilityVerdict_VERDICT_ERROR, Details: "too old"}}, http.StatusOK)
	if _, err := Handshake(context.Background(), srv.Client(), srv.URL, nil); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "too old") {
		t.Errorf("verdict error: %v", err)
	}
	srv = handshakeServer(t, &servicepb.ServerInfoResponse{}, http.StatusNotFound)
	if _, err := Handshake(context.Background(), srv.Client(), srv.URL, nil); !errors.Is(err, ErrServer) {
		t.Errorf("404: %v", err)
	}
	if _, err := Handshake(context.Background(), srv.Client(), "localhost:6006", nil); err == nil {
		t.Error("a server without a scheme was accepted")
	}
	// A refused connection is not a server error: the server never answered.
	if _, err := Handshake(context.Background(), http.DefaultClient, "http://127.0.0.1:1", nil); !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrServer) ||
		!strings.HasPrefix(err.Error(), "cannot reach the server at http://127.0.0.1:1 (") || strings.Contains(err.Error(), "server error") {
		t.Errorf("unreachable server: %v", err)
	}
}

func TestRetry(t *testing.T) {
	r := Retry{Attempts: 4, Base: time.Millisecond, Max: 4 * time.Millisecond}
	calls := 0
	err := r.Do(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return status.Error(codes.Unavailable, "restarting")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("transient failures: err %v after %d calls", err, calls)
	}
	calls = 0
	err = r.Do(context.Background(), func(context.Context) error {
		calls++
		return status.Error(codes.InvalidArgument, "bad")
	})
	if status.Code(err) != codes.InvalidArgument || calls != 1 {
		t.Errorf("permanent failure retried: %v after %d calls", err, calls)
	}
	calls = 0
	err = r.Do(context.Background(), func(context.Context) error {
		calls++
		return status.Error(codes.Unavailable, "down")
	})
	if status.Code(err) != codes.Unavailable || calls != 4 {
		t.Errorf("gave up after %d calls (%v), want 4", calls, err)
	}
}

// A refusal with a google.rpc.RetryInfo (tbhub's rate limit) is retried
// after the delay it names, not the policy's backoff, at most a tenth later.
func TestRetryWaitsAsTheServerSays(t *testing.T) {
	const told = 40 * time.Millisecond
	st, err := status.New(codes.ResourceExhausted, "rate limit exceeded").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(told)})
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := RetryDelay(st.Err()); !ok || d != told {
		t.Fatalf("RetryDelay = %v, %v; want %v", d, ok, told)
	}
	if _, ok := RetryDelay(status.Error(codes.ResourceExhausted, "quota")); ok {
		t.Error("RetryDelay of a status without RetryInfo says to wait")
	}
	var waits []time.Duration
	r := Retry{Attempts: 3, Base: time.Millisecond, Max: 2 * time.Millisecond, OnRetry: func(_ error, d time.Duration) { waits = append(waits, d) }}
	calls := 0
	err = r.Do(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return st.Err()
		}
		return nil
	})
	if err != nil || len(waits) != 2 {
		t.Fatalf("err %v, %d retries; want success after 2", err, len(waits))
	}
	for _, d := range waits {
		if d < told || d > told+told/10 {
			t.Errorf("waited %v before retrying; the server said %v", d, told)
		}
	}
}

// A gRPC endpoint nobody answers at is "cannot reach the server at
// HOST:PORT", for unary calls and streams alike, still Unavailable (so
// retried), and not a failure the server answered (no trace id to give).
func TestUnreachableEndpointIsNamed(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	conn, err := Dial("dns:///"+addr, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := StartTrace(t.Context())
	hc := grpc_health_v1.NewHealthClient(conn)
	_, unary := hc.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	var streamed error
	if w, err := hc.Watch(ctx, &grpc_health_v1.HealthCheckRequest{}); err != nil {
		streamed = err
	} else {
		_, streamed = w.Recv()
	}
	for name, err := range map[string]error{"unary": unary, "stream": streamed} {
		want := "cannot reach the server at " + addr + " (connection error"
		if got := Describe(err); !strings.HasPrefix(got, want) {
			t.Errorf("%s call: Describe = %q, want it to start with %q", name, got, want)
		}
		if status.Code(err) != codes.Unavailable || !Retryable(err) {
			t.Errorf("%s call: %v, want Unavailable and retryable", name, err)
		}
	}
	if ServerFailed(ctx) {
		t.Error("ServerFailed after calls that reached no server")
	}
}
