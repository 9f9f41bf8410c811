// Package readertest runs the read service in process for tests and
// benchmarks: a store and a blob folder, the real authenticator and
// tenancy guard, and the data provider on an in-memory gRPC connection
// (bufconn). It also writes test data straight through store.Writer.
package readertest

import (
	"bytes"
	"context"
	"hash/crc32"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
)

// Identities keeps users and API tokens for the authenticator.
type Identities interface {
	store.IdentityStore
	CreateUser(ctx context.Context, u store.User) error
}

// Env is a running read service.
type Env struct {
	Store  store.Store
	IDs    Identities
	Blobs  blob.Store
	Auth   *auth.Authenticator
	Server *reader.Server
	// Conn reaches the service; Client is the data provider on it.
	Conn   *grpc.ClientConn
	Client datapb.TensorBoardDataProviderClient
}

// OpenEmbedded opens a fresh SQLite store and blob folder under tb's
// temporary directory.
func OpenEmbedded(tb testing.TB) (*sqlitestore.Store, blob.Store) {
	tb.Helper()
	dir := tb.TempDir()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(dir, sqlitestore.DefaultFile), sqlitestore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	bs, err := fileblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bs.Close() })
	return st, bs
}

// Start serves a read service over st and blobs, with users and tokens
// kept in ids (often st itself); cfg.BlobKeySecret is filled in when
// empty. Everything stops when tb ends.
func Start(tb testing.TB, st store.Store, ids Identities, blobs blob.Store, cfg reader.Config) *Env {
	tb.Helper()
	if len(cfg.BlobKeySecret) == 0 {
		cfg.BlobKeySecret = reader.RandomSecret()
	}
	a, err := auth.New(ids, auth.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := reader.New(st, blobs, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	guard := tenancy.NewGuard(a, st, nil)
	gs := grpc.NewServer(
		grpc.ChainUnaryInterceptor(srv.UnaryInterceptor(), guard.Unary()),
		grpc.ChainStreamInterceptor(srv.StreamInterceptor(), guard.Stream()),
	)
	srv.Register(gs)
	lis := bufconn.Listen(4 << 20)
	go gs.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)),
	)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		gs.Stop()
	})
	return &Env{Store: st, IDs: ids, Blobs: blobs, Auth: a, Server: srv, Conn: conn, Client: datapb.NewTensorBoardDataProviderClient(conn)}
}

// WithToken returns ctx carrying token as the call's bearer credential.
func WithToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// User creates a user and returns its ID and an API token with every
// scope.
func (e *Env) User(tb testing.TB, name string) (id, token string) {
	tb.Helper()
	return e.UserWithScopes(tb, name, store.AllScopes)
}

// UserWithScopes is User with a token of the given scopes; a user that
// exists already gets one more token.
func (e *Env) UserWithScopes(tb testing.TB, name string, scopes store.TokenScopes) (id, token string) {
	tb.Helper()
	ctx := context.Background()
	u, err := e.Store.GetUserByName(ctx, name)
	if err != nil {
		u = store.User{ID: store.NewUserID(), Name: name}
		if err := e.Store.CreateUser(ctx, u); err != nil {
			tb.Fatal(err)
		}
		if any(e.IDs) != any(e.Store) {
			if err := e.IDs.CreateUser(ctx, u); err != nil {
				tb.Fatal(err)
			}
		}
	}
	_, secret, err := e.Auth.IssueToken(ctx, u.ID, "", "test", scopes, timeZero)
	if err != nil {
		tb.Fatal(err)
	}
	return u.ID, secret
}

// Experiment creates an experiment owned by owner.
func (e *Env) Experiment(tb testing.TB, owner string, vis store.Visibility) string {
	tb.Helper()
	eid := store.NewExperimentID()
	err := e.Store.CreateExperiment(context.Background(), store.Experiment{
		ID: eid, Name: "exp " + eid[:4], Description: "a *test* experiment", Owner: owner, Visibility: vis,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return eid
}

// Series returns a series of the given plugin and class with matching
// summary metadata, as the uploader stores it.
func Series(run, tag, plugin string, c store.DataClass, content []byte) store.TimeSeries {
	md, err := proto.Marshal(&tbpb.SummaryMetadata{
		PluginData:  &tbpb.SummaryMetadata_PluginData{PluginName: plugin, Content: content},
		DisplayName: tag, SummaryDescription: "about " + tag, DataClass: tbpb.DataClass(c),
	})
	if err != nil {
		panic(err)
	}
	return store.TimeSeries{Run: run, Tag: tag, PluginName: plugin, SummaryMetadata: md, DataClass: c, DisplayName: tag, Description: "about " + tag}
}

// Scalars writes points to a scalars-plugin series.
func (e *Env) Scalars(tb testing.TB, eid, run, tag string, points []store.ScalarPoint) {
	tb.Helper()
	err := e.Store.WriteScalars(context.Background(), eid, []store.ScalarSeries{{
		Series: Series(run, tag, "scalars", store.DataClassScalar, nil), Points: points,
	}})
	if err != nil {
		tb.Fatal(err)
	}
}

// Tensors writes tensors to a series of the given plugin.
func (e *Env) Tensors(tb testing.TB, eid string, series store.TimeSeries, steps []int64, wallTimes []float64, tensors []*tbpb.TensorProto) {
	tb.Helper()
	ts := store.TensorSeries{Series: series}
	for i, t := range tensors {
		b, err := proto.Marshal(t)
		if err != nil {
			tb.Fatal(err)
		}
		var shape []int64
		for _, d := range t.GetTensorShape().GetDim() {
			shape = append(shape, d.GetSize())
		}
		ts.Points = append(ts.Points, store.TensorPoint{Step: steps[i], WallTime: wallTimes[i], DType: int32(t.GetDtype()), Shape: shape, Tensor: b})
	}
	if err := e.Store.WriteTensors(context.Background(), eid, []store.TensorSeries{ts}); err != nil {
		tb.Fatal(err)
	}
}

// BlobSequence writes one point of a blob sequence series: the objects
// first, then the rows, as the write service does.
func (e *Env) BlobSequence(tb testing.TB, eid string, series store.TimeSeries, step int64, wallTime float64, blobs [][]byte) {
	tb.Helper()
	ctx := context.Background()
	if _, _, err := e.Store.GetOrCreateBlobSequence(ctx, eid, series, step, wallTime, int64(len(blobs))); err != nil {
		tb.Fatal(err)
	}
	for i, data := range blobs {
		key := blob.ObjectKey(eid, series.Run, series.Tag, step, int64(i))
		attrs, err := e.Blobs.Put(ctx, key, bytes.NewReader(data), blob.PutOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		ref := store.BlobRef{Run: series.Run, Tag: series.Tag, Step: step, Index: int64(i)}
		err = e.Store.PutBlob(ctx, eid, ref, store.Blob{
			Index: int64(i), ObjectKey: key, Size: attrs.Size,
			CRC32C: crc32.Checksum(data, blob.CastagnoliTable), State: store.BlobStateCurrent,
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

var timeZero time.Time
