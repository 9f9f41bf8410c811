package serve_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/auth"
	"github.com/tbhub/tbhub/services/internal/auth/oidctest"
	"github.com/tbhub/tbhub/services/internal/blob"
	"github.com/tbhub/tbhub/services/internal/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/limits"
	"github.com/tbhub/tbhub/services/internal/serve"
	"github.com/tbhub/tbhub/services/internal/store"
	"github.com/tbhub/tbhub/services/internal/store/sqlitestore"
)

// testClientID is the OAuth client ID the test issuer's tokens are for.
const testClientID = "tbhub-test"

// harness is a whole tbhub serve process in the test, on loopback ports,
// with a test OIDC issuer and gRPC clients of every service.
type harness struct {
	srv     *serve.Server
	stop    func() error // stops srv (once; the test's end does too)
	st      store.Store
	blobs   blob.Store
	iss     *oidctest.Issuer
	conn    *grpc.ClientConn
	writer  servicepb.TensorBoardWriterServiceClient
	export  servicepb.TensorBoardExporterServiceClient
	exps    experimentsv1.ExperimentServiceClient
	account authv1.AuthServiceClient
}

// embedded opens a fresh SQLite store and blob folder.
func embedded(t testing.TB) (store.Store, blob.Store) {
	t.Helper()
	return embeddedIn(t, t.TempDir())
}

// embeddedIn opens a fresh SQLite store in dir and a blob folder in
// dir/blobs.
func embeddedIn(t testing.TB, dir string) (store.Store, blob.Store) {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(dir, sqlitestore.DefaultFile), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := fileblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blobs.Close() })
	return st, blobs
}

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
	return &harness{
		srv: srv, stop: stop, st: st, blobs: blobs, iss: iss, conn: conn,
		writer:  servicepb.NewTensorBoardWriterServiceClient(conn),
		export:  servicepb.NewTensorBoardExporterServiceClient(conn),
		exps:    experimentsv1.NewExperimentServiceClient(conn),
		account: authv1.NewAuthServiceClient(conn),
	}
}

// as returns a context whose calls carry the authorization header h
// ("" for none).
func as(ctx context.Context, header string) context.Context {
	if header == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", header)
}

func bearer(token string) string { return "Bearer " + token }

// idToken signs an ID token for subject, valid now unless expired.
func (h *harness) idToken(t testing.TB, subject, email string, expired bool) string {
	now := time.Now()
	c := oidctest.Claims{Subject: subject, Audience: testClientID, Email: email, EmailVerified: true,
		IssuedAt: now.Add(-time.Minute), Expiry: now.Add(time.Hour)}
	if expired {
		c.IssuedAt, c.Expiry = now.Add(-2*time.Hour), now.Add(-time.Hour)
	}
	return h.iss.Sign(t, c)
}
