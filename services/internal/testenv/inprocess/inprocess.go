// Package inprocess runs tbhub's gRPC services inside a test, with no
// process and no port: the write side (writer, experiments, auth), the
// exporter and the read service (data provider) on one gRPC server behind
// the real authenticator and tenancy guard, reached over an in-memory
// connection (bufconn), on a store the test chooses (Embedded gives a
// SQLite store and a blob folder in a temporary directory). A test OIDC
// issuer signs ID tokens the authenticator accepts.
//
// Clients holds the client side and the helpers the write-path tests
// share (users and tokens, an experiment, the export of everything
// written); the serve harness, which runs the same services in a real
// process, uses it too.
package inprocess

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/tbhub/tbhub/services/internal/api/export"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/api/writer"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/auth/oidctest"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// ClientID is the OAuth client ID the test issuer's tokens are for.
const ClientID = "tbhub-test"

// Config is what a test may change of the services; the zero value is
// the defaults with rate limits off.
type Config struct {
	// Limits are the write side's limits; limits.Default() with
	// RequestsPerSecond 0 (no rate limit) before configure runs.
	Limits limits.Limits
	// Now is the clock of the writer, the limits and the authenticator.
	Now              func() time.Time
	Logger           *slog.Logger
	EnableTestRPCs   bool
	CreateRequestTTL time.Duration
	// Reader configures the read service; its BlobKeySecret is filled in
	// when empty.
	Reader reader.Config
}

// Env is the running services and their clients. Everything stops when
// the test ends.
type Env struct {
	*Clients
	Blobs blob.Store
	lis   *bufconn.Listener
}

// Embedded opens a fresh SQLite store and a blob folder in a temporary
// directory of tb; both close when tb ends.
func Embedded(tb testing.TB) (store.Store, blob.Store) {
	tb.Helper()
	return EmbeddedIn(tb, tb.TempDir())
}

// EmbeddedIn opens a fresh SQLite store in dir and a blob folder in
// dir/blobs.
func EmbeddedIn(tb testing.TB, dir string) (store.Store, blob.Store) {
	tb.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(dir, sqlitestore.DefaultFile), sqlitestore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	blobs, err := fileblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { blobs.Close() })
	return st, blobs
}

// OnSpanner is a store on a fresh Cloud Spanner emulator database and a
// blob folder (package spanneremu: the test binary's TestMain calls
// spanneremu.Main or MainOnDemand).
func OnSpanner(tb testing.TB) (store.Store, blob.Store) {
	tb.Helper()
	st := spanneremu.NewDatabase(tb).Store(tb)
	blobs, err := fileblob.Open(filepath.Join(tb.TempDir(), "blobs"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { blobs.Close() })
	return st, blobs
}

// Start serves the services on st and blobs, configured by configure (may
// be nil). Several Envs on one store are several instances of the service.
// Unlike `tbhub serve` it does not throttle bad credentials per client
// address: a bufconn peer has no address.
func Start(tb testing.TB, st store.Store, blobs blob.Store, configure func(*Config)) *Env {
	tb.Helper()
	cfg := Config{Limits: limits.Default()}
	cfg.Limits.RequestsPerSecond = 0
	if configure != nil {
		configure(&cfg)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Reader.BlobKeySecret) == 0 {
		cfg.Reader.BlobKeySecret = reader.RandomSecret()
	}
	iss := oidctest.Start(tb)
	a, err := auth.New(st, auth.Config{
		OIDC: auth.OIDCConfig{Issuer: iss.URL, ClientIDs: []string{ClientID}, HTTPClient: iss.Client()},
		Now:  cfg.Now, Logger: cfg.Logger,
	})
	if err != nil {
		tb.Fatal(err)
	}
	enf, err := limits.NewEnforcer(cfg.Limits, st, cfg.Now)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := writer.New(st, blobs, a, enf, writer.Config{
		PublicOrigin: "http://tbhub.test", EnableTestRPCs: cfg.EnableTestRPCs,
		CreateRequestTTL: cfg.CreateRequestTTL, Now: cfg.Now, Logger: cfg.Logger,
	})
	if err != nil {
		tb.Fatal(err)
	}
	rd, err := reader.New(st, blobs, cfg.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	guard := tenancy.NewGuard(a, st, cfg.Logger)
	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(int(cfg.Limits.MaxRequestBytes)),
		grpc.ChainUnaryInterceptor(rd.UnaryInterceptor(), guard.Unary()),
		grpc.ChainStreamInterceptor(rd.StreamInterceptor(), guard.Stream()),
	)
	w.Register(gs)
	export.New(st, blobs).Register(gs)
	rd.Register(gs)
	lis := bufconn.Listen(4 << 20)
	go gs.Serve(lis)
	tb.Cleanup(gs.Stop)
	e := &Env{Blobs: blobs, lis: lis}
	e.Clients = NewClients(e.Dial(tb), st, a, iss)
	return e
}

// Dial opens another connection to the services, with opts after the
// defaults (e.g. a client interceptor); it closes when tb ends.
func (e *Env) Dial(tb testing.TB, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	lis := e.lis
	opts = append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20)),
	}, opts...)
	conn, err := grpc.NewClient("passthrough:///bufconn", opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// Drain receives from recv until the stream ends; io.EOF is success.
func Drain[T any](recv func() (T, error)) error {
	for {
		if _, err := recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
