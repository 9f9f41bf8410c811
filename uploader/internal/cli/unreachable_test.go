package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// handshakeAt serves the upload handshake naming endpoint as the gRPC API.
func handshakeAt(t *testing.T, endpoint string) string {
	t.Helper()
	body, err := proto.Marshal(&servicepb.ServerInfoResponse{ApiServer: &servicepb.ApiServer{Endpoint: endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveGRPC serves the services register adds on a local port, behind the
// upload handshake, and returns the server URL to pass as --server.
func serveGRPC(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	return handshakeAt(t, "dns:///"+serveGRPCListener(t, register))
}

// serveGRPCListener serves the services register adds on a local port and
// returns its address.
func serveGRPCListener(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	register(g)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// closedAddr is a local address nothing listens at.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// A server that cannot be reached, at its URL or at the gRPC endpoint its
// handshake names, reads "cannot reach the server at ADDR", never "server
// error", and with no trace id (the server has no log of it). A failure the
// server answered gives the trace id its logs carry.
func TestUnreachableServerMessage(t *testing.T) {
	down := "http://" + closedAddr(t)
	grpcDown := closedAddr(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := grpc.NewServer() // answers every call: Unimplemented
	go func() { _ = refusing.Serve(lis) }()
	t.Cleanup(refusing.Stop)

	for _, tc := range []struct {
		name, server, want string
		trace              bool
	}{
		{"refused at the URL", down, "cannot reach the server at " + down + " (", false},
		{"refused at the gRPC endpoint", handshakeAt(t, "dns:///"+grpcDown), "cannot reach the server at " + grpcDown + " (", false},
		{"answered with an error", handshakeAt(t, "dns:///"+lis.Addr().String()), "Unimplemented", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			err := Run(context.Background(), env, []string{"list", "--server", tc.server, "--token", "T"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "server error") {
				t.Errorf("tbup list: %v; want it to say %q", err, tc.want)
			}
			if got := strings.Contains(err.Error(), "trace id"); got != tc.trace {
				t.Errorf("trace id printed: %v, want %v; err %v; stderr:\n%s", got, tc.trace, err, errOut.String())
			}
		})
	}
}

// Choosing the experiment, each retry of a server that does not answer is
// told on stderr (tbup was silent for a minute), and the failure names the
// address.
func TestChooseExperimentSaysRetries(t *testing.T) {
	addr := closedAddr(t)
	conn, err := client.Dial("dns:///"+addr, false, "T")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var errOut bytes.Buffer
	env := Env{Stdout: io.Discard, Stderr: &errOut, Getenv: func(string) string { return "" }}
	r := sayRetries(env, client.Retry{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond})
	_, err = chooseExperiment(context.Background(), env, servicepb.NewTensorBoardWriterServiceClient(conn), experimentsv1.NewExperimentServiceClient(conn),
		state.New("http://x", "/logdir"), func(*state.State) error { return nil }, "", "", "", "", r)
	want := "cannot reach the server at " + addr
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("chooseExperiment: %v; want it to say %q", err, want)
	}
	if n := strings.Count(errOut.String(), want); n != 2 || strings.Count(errOut.String(), "trying again in") != 2 {
		t.Errorf("stderr tells %d retries, want 2:\n%s", n, errOut.String())
	}
}
