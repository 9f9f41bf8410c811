package serve_test

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/auth/oidctest"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
)

// testClientID is the OAuth client ID the test issuer's tokens are for.
const testClientID = inprocess.ClientID

// harness is a whole tbhub serve process in the test, on loopback ports,
// with a test OIDC issuer and gRPC clients of every service (package
// inprocess runs the same services without the process).
type harness struct {
	*inprocess.Clients
	srv   *serve.Server
	stop  func() error // stops srv (once; the test's end does too)
	st    store.Store
	blobs blob.Store
}

// embedded opens a fresh SQLite store and blob folder.
var embedded = inprocess.Embedded

// embeddedIn opens a fresh SQLite store in dir and a blob folder in
// dir/blobs.
var embeddedIn = inprocess.EmbeddedIn

// newHarness starts serve on st and blobs. Rate limits are off unless
// configure sets them, so tests are not throttled.
func newHarness(t testing.TB, st store.Store, blobs blob.Store, configure func(*serve.Config)) *harness {
	t.Helper()
	iss := oidctest.Start(t)
	lim := limits.Default()
	lim.RequestsPerSecond = 0
	cfg := serve.Config{
		HTTPAddr:      "127.0.0.1:0",
		OIDC:          auth.OIDCConfig{Issuer: iss.URL, ClientIDs: []string{testClientID}, HTTPClient: iss.Client()},
		Limits:        lim,
		SweepInterval: -1,
	}
	if configure != nil {
		configure(&cfg)
	}
	srv, err := serve.New(st, blobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &harness{Clients: inprocess.NewClients(conn, st, srv.Authenticator(), iss), srv: srv, stop: stop, st: st, blobs: blobs}
}

// as returns a context whose calls carry the authorization header h
// ("" for none).
var as = inprocess.As

var bearer = inprocess.Bearer
