package inprocess

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/auth/oidctest"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Clients reach the services of one process: a client of every service on
// one connection, and what stands behind them that tests use directly (the
// store, the authenticator, the OIDC issuer it trusts).
type Clients struct {
	Store       store.Store
	Auth        *auth.Authenticator
	Issuer      *oidctest.Issuer
	Conn        *grpc.ClientConn
	Writer      servicepb.TensorBoardWriterServiceClient
	Export      servicepb.TensorBoardExporterServiceClient
	Experiments experimentsv1.ExperimentServiceClient
	Account     authv1.AuthServiceClient
	Data        datapb.TensorBoardDataProviderClient
}

// NewClients makes the clients of every service on conn.
func NewClients(conn *grpc.ClientConn, st store.Store, a *auth.Authenticator, iss *oidctest.Issuer) *Clients {
	return &Clients{
		Store: st, Auth: a, Issuer: iss, Conn: conn,
		Writer:      servicepb.NewTensorBoardWriterServiceClient(conn),
		Export:      servicepb.NewTensorBoardExporterServiceClient(conn),
		Experiments: experimentsv1.NewExperimentServiceClient(conn),
		Account:     authv1.NewAuthServiceClient(conn),
		Data:        datapb.NewTensorBoardDataProviderClient(conn),
	}
}

// As returns a context whose calls carry the authorization header header
// ("" for none).
func As(ctx context.Context, header string) context.Context {
	if header == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", header)
}

// Bearer is the authorization header of token.
func Bearer(token string) string { return "Bearer " + token }

// Token creates the local user name if there is none and returns a new API
// token of it with every scope.
func (c *Clients) Token(tb testing.TB, name string) string {
	tb.Helper()
	ctx := context.Background()
	u, err := c.Store.GetUserByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		u = store.User{ID: store.NewUserID(), Name: name}
		err = c.Store.CreateUser(ctx, u)
	}
	if err != nil {
		tb.Fatal(err)
	}
	_, secret, err := c.Auth.IssueToken(ctx, u.ID, "", "test", store.AllScopes, time.Time{})
	if err != nil {
		tb.Fatal(err)
	}
	return secret
}

// UserContext is the test's context carrying a new token of user name.
func (c *Clients) UserContext(t *testing.T, name string) context.Context {
	t.Helper()
	return As(t.Context(), Bearer(c.Token(t, name)))
}

// AdaExperiment signs the user "ada" in and creates an experiment named
// name; it returns her context and the experiment's ID.
func (c *Clients) AdaExperiment(t *testing.T, name string) (context.Context, string) {
	t.Helper()
	ctx := c.UserContext(t, "ada")
	ce, err := c.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, ce.GetExperimentId()
}

// ImageSequence creates the blob sequence (r, images, step 1) of
// experiment eid, of length n, and returns its ID.
func (c *Clients) ImageSequence(t *testing.T, ctx context.Context, eid string, n int64) string {
	t.Helper()
	seq, err := c.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "images", Step: 1, WallTime: timestamppb.Now(), FinalSequenceLength: n})
	if err != nil {
		t.Fatal(err)
	}
	return seq.GetBlobSequenceId()
}

// OpenStalledStream starts a WriteBlob stream that claims 1 MiB, sends one
// byte and then nothing, as the issue's attacker does, and waits for the
// server's acknowledgement of that byte. The stream stays open until ctx
// ends or the server ends it.
func (c *Clients) OpenStalledStream(ctx context.Context, t *testing.T, seqID string, index int64) (servicepb.TensorBoardWriterService_WriteBlobClient, error) {
	t.Helper()
	s, err := c.Writer.WriteBlob(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seqID, Index: index, Data: []byte{1}, BlobBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv()
	return s, err
}

// BlobState is the slot's state and size as GetBlobMetadata reports them.
func (c *Clients) BlobState(t *testing.T, ctx context.Context, seqID string, index int64) (servicepb.BlobState, int64) {
	t.Helper()
	md, err := c.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: seqID, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	return md.GetBlobState(), md.GetSize()
}

// IDToken signs an ID token for subject, valid now unless expired.
func (c *Clients) IDToken(tb testing.TB, subject, email string, expired bool) string {
	now := time.Now()
	cl := oidctest.Claims{Subject: subject, Audience: ClientID, Email: email, EmailVerified: true,
		IssuedAt: now.Add(-time.Minute), Expiry: now.Add(time.Hour)}
	if expired {
		cl.IssuedAt, cl.Expiry = now.Add(-2*time.Hour), now.Add(-time.Hour)
	}
	return c.Issuer.Sign(tb, cl)
}

// TokenBytes is what the tokens of the caller of ctx count toward the
// byte quota.
func (c *Clients) TokenBytes(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	who, err := c.Account.WhoAmI(ctx, &authv1.WhoAmIRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := c.Store.ListAPITokens(ctx, who.GetUserId())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for i := range tokens {
		n += tokens[i].StoredBytes()
	}
	return n
}

// ScalarMetadata is the metadata of a scalar series of the scalars plugin.
func ScalarMetadata() *tbpb.SummaryMetadata {
	return &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}, DataClass: tbpb.DataClass_DATA_CLASS_SCALAR}
}

// ScalarRequest writes the series train/loss of eid at steps, each of
// value step/10.
func ScalarRequest(eid string, steps ...int64) *servicepb.WriteScalarRequest {
	tag := &servicepb.WriteScalarRequest_Tag{Name: "loss", Metadata: ScalarMetadata()}
	for _, s := range steps {
		tag.Points = append(tag.Points, &servicepb.ScalarPoint{Step: s, WallTime: timestamppb.Now(), Value: float64(s) / 10})
	}
	return &servicepb.WriteScalarRequest{ExperimentId: eid, Runs: []*servicepb.WriteScalarRequest_Run{{Name: "train", Tags: []*servicepb.WriteScalarRequest_Tag{tag}}}}
}

// WriteWholeBlob uploads data as one finalized chunk, as a stock uploader
// does for small blobs (no CRC).
func (c *Clients) WriteWholeBlob(ctx context.Context, seqID string, index int64, data []byte) error {
	s, err := c.Writer.WriteBlob(ctx)
	if err != nil {
		return err
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seqID, Index: index, Data: data,
		BlobBytes: int64(len(data)), FinalizeObject: true}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	return Drain(s.Recv)
}

// Exported is what StreamExperimentData returned.
type Exported struct {
	Scalars map[[2]string][]ScalarPoint // by (run, tag)
	Tensors map[[2]string][]*tbpb.TensorProto
	BlobIDs []string
}

// ScalarPoint is one exported scalar.
type ScalarPoint struct {
	Step  int64
	Value float64
}

// ExportAll streams everything of experiment eid.
func (c *Clients) ExportAll(t *testing.T, ctx context.Context, eid string) Exported {
	t.Helper()
	out := Exported{Scalars: map[[2]string][]ScalarPoint{}, Tensors: map[[2]string][]*tbpb.TensorProto{}}
	s, err := c.Export.StreamExperimentData(ctx, &servicepb.StreamExperimentDataRequest{ExperimentId: eid})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		key := [2]string{resp.GetRunName(), resp.GetTagName()}
		if p := resp.GetPoints(); p != nil {
			for i, step := range p.GetSteps() {
				out.Scalars[key] = append(out.Scalars[key], ScalarPoint{step, p.GetValues()[i]})
			}
		}
		if tp := resp.GetTensors(); tp != nil {
			out.Tensors[key] = append(out.Tensors[key], tp.GetValues()...)
		}
		for _, seq := range resp.GetBlobSequences().GetValues() {
			for _, e := range seq.GetEntries() {
				out.BlobIDs = append(out.BlobIDs, e.GetBlob().GetBlobId())
			}
		}
	}
}

// ReadBlob exports the blob blobID whole, checking the chunks' offsets.
func (c *Clients) ReadBlob(t *testing.T, ctx context.Context, blobID string) []byte {
	t.Helper()
	s, err := c.Export.StreamBlobData(ctx, &servicepb.StreamBlobDataRequest{BlobId: blobID})
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return buf
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetOffset() != int64(len(buf)) {
			t.Fatalf("chunk at offset %d after %d bytes", resp.GetOffset(), len(buf))
		}
		buf = append(buf, resp.GetData()...)
	}
}

// DeleteAbandoned removes a swept blob's object the way the writer's
// sweeper does: exactly the generation its row named.
func DeleteAbandoned(blobs blob.Store) func(context.Context, store.AbandonedBlob) error {
	return func(ctx context.Context, b store.AbandonedBlob) error {
		if b.Generation == blob.NoObject {
			return blobs.Delete(ctx, b.ObjectKey)
		}
		return blobs.DeleteGeneration(ctx, b.ObjectKey, b.Generation)
	}
}
