package tenancy_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
	"io"
	"os"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The tenancy matrix: every RPC of the writer and exporter services (and of
// tbhub's experiments and auth services, bar RevokeToken), called
// with each kind of credential on a private, an unlisted and a public
// experiment, must give the expected code. The expectations are written
// out here by hand, independently of tenancy's table.

type credential string

const (
	credNone      credential = "no token"
	credMalformed credential = "malformed token"
	credExpired   credential = "expired OIDC token"
	credRevoked   credential = "revoked API token"
	credReadOnly  credential = "read-only token"
	credOther     credential = "another user"
	credOwner     credential = "owner"
)

var credentials = []credential{credNone, credMalformed, credExpired, credRevoked, credReadOnly, credOther, credOwner}

var visibilities = []experimentsv1.Visibility{
	experimentsv1.Visibility_VISIBILITY_PRIVATE,
	experimentsv1.Visibility_VISIBILITY_UNLISTED,
	experimentsv1.Visibility_VISIBILITY_PUBLIC,
}

// rpcKind groups RPCs that share expectations.
type rpcKind int

const (
	kindCreate      rpcKind = iota // needs a user with upload scope
	kindWrite                      // owner with upload scope only
	kindList                       // any signed-in user; lists their own
	kindRead                       // follows visibility
	kindTestOnly                   // disabled: UNIMPLEMENTED once authenticated
	kindAccount                    // about the caller only: any valid credential
	kindBrowse                     // the public gallery: anyone, signed in or not
	kindCredentials                // the caller's tokens: needs the tokens scope
)

func expectedCode(k rpcKind, c credential, v experimentsv1.Visibility) codes.Code {
	private := v == experimentsv1.Visibility_VISIBILITY_PRIVATE
	switch c {
	case credMalformed, credExpired, credRevoked:
		return codes.Unauthenticated
	case credNone:
		if k == kindBrowse {
			return codes.OK
		}
		if k == kindRead {
			if private {
				return codes.NotFound
			}
			return codes.OK
		}
		return codes.Unauthenticated
	}
	switch k {
	case kindCreate, kindCredentials:
		if c == credReadOnly {
			return codes.PermissionDenied
		}
		return codes.OK
	case kindWrite:
		switch {
		case c == credOwner:
			return codes.OK
		case c == credReadOnly:
			return codes.PermissionDenied
		case private:
			return codes.NotFound
		}
		return codes.PermissionDenied
	case kindList:
		return codes.OK
	case kindRead:
		if c == credOther && private {
			return codes.NotFound
		}
		return codes.OK
	case kindTestOnly:
		return codes.Unimplemented
	case kindAccount, kindBrowse:
		return codes.OK
	}
	panic("unknown kind")
}

// target is what one call acts on.
type target struct {
	eid    string
	vis    experimentsv1.Visibility
	seqID  string // a blob sequence of eid
	blobID string // a current blob of eid
	index  int64  // a free slot of seqID
	carol  string // a third user, for grants that must not change the matrix
}

type rpcCase struct {
	name string
	kind rpcKind
	call func(ctx context.Context, h *inprocess.Env, tg target) error
}

var rpcCases = []rpcCase{
	{"CreateExperiment", kindCreate, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "n"})
		return err
	}},
	{"UpdateExperiment", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Writer.UpdateExperiment(ctx, &servicepb.UpdateExperimentRequest{
			Experiment:     &servicepb.Experiment{ExperimentId: tg.eid, Name: "renamed"},
			ExperimentMask: &servicepb.ExperimentMask{Name: true}})
		return err
	}},
	{"DeleteExperiment", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Writer.DeleteExperiment(ctx, &servicepb.DeleteExperimentRequest{ExperimentId: tg.eid})
		return err
	}},
	{"WriteScalar", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(tg.eid, 100, 101))
		return err
	}},
	{"WriteTensor", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Writer.WriteTensor(ctx, &servicepb.WriteTensorRequest{ExperimentId: tg.eid, Runs: []*servicepb.WriteTensorRequest_Run{{
			Name: "train", Tags: []*servicepb.WriteTensorRequest_Tag{{Name: "hist", Points: []*servicepb.TensorPoint{{
				Step: 1, WallTime: timestamppb.Now(), Value: &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, DoubleVal: []float64{1, 2}},
			}}}}}}})
		return err
	}},
	{"GetOrCreateBlobSequence", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
			ExperimentId: tg.eid, Run: "train", Tag: "images", Step: 7, WallTime: timestamppb.Now(), FinalSequenceLength: 1})
		return err
	}},
	{"GetBlobMetadata", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Writer.GetBlobMetadata(ctx, &servicepb.GetBlobMetadataRequest{BlobSequenceId: tg.seqID, Index: 0})
		return err
	}},
	{"WriteBlob", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		return h.WriteWholeBlob(ctx, tg.seqID, tg.index, []byte("blob bytes"))
	}},
	{"PurgeData", kindTestOnly, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Writer.PurgeData(ctx, &servicepb.PurgeDataRequest{BatchLimit: 1})
		return err
	}},
	{"DeleteOwnUser", kindTestOnly, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Writer.DeleteOwnUser(ctx, &servicepb.DeleteOwnUserRequest{})
		return err
	}},
	{"StreamExperiments", kindList, func(ctx context.Context, h *inprocess.Env, _ target) error {
		s, err := h.Export.StreamExperiments(ctx, &servicepb.StreamExperimentsRequest{})
		if err != nil {
			return err
		}
		return inprocess.Drain(s.Recv)
	}},
	{"StreamExperimentData", kindRead, func(ctx context.Context, h *inprocess.Env, tg target) error {
		s, err := h.Export.StreamExperimentData(ctx, &servicepb.StreamExperimentDataRequest{ExperimentId: tg.eid})
		if err != nil {
			return err
		}
		return inprocess.Drain(s.Recv)
	}},
	{"StreamBlobData", kindRead, func(ctx context.Context, h *inprocess.Env, tg target) error {
		s, err := h.Export.StreamBlobData(ctx, &servicepb.StreamBlobDataRequest{BlobId: tg.blobID})
		if err != nil {
			return err
		}
		return inprocess.Drain(s.Recv)
	}},

	// tbhub's own services.
	{"experiments.ContinueExperiment", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Experiments.ContinueExperiment(ctx, &experimentsv1.ContinueExperimentRequest{ExperimentId: tg.eid})
		return err
	}},
	{"experiments.GetExperiment", kindRead, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Experiments.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: tg.eid})
		return err
	}},
	{"experiments.ListExperiments", kindList, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Experiments.ListExperiments(ctx, &experimentsv1.ListExperimentsRequest{})
		return err
	}},
	{"experiments.ListPublicExperiments", kindBrowse, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Experiments.ListPublicExperiments(ctx, &experimentsv1.ListPublicExperimentsRequest{})
		return err
	}},
	{"experiments.SetVisibility", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Experiments.SetVisibility(ctx, &experimentsv1.SetVisibilityRequest{ExperimentId: tg.eid, Visibility: tg.vis})
		return err
	}},
	{"experiments.GrantAccess", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Experiments.GrantAccess(ctx, &experimentsv1.GrantAccessRequest{ExperimentId: tg.eid,
			Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserId{UserId: tg.carol}}})
		return err
	}},
	{"experiments.RevokeAccess", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Experiments.RevokeAccess(ctx, &experimentsv1.RevokeAccessRequest{ExperimentId: tg.eid,
			Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserId{UserId: tg.carol}}})
		return err
	}},
	{"experiments.ListGrants", kindWrite, func(ctx context.Context, h *inprocess.Env, tg target) error {
		_, err := h.Experiments.ListGrants(ctx, &experimentsv1.ListGrantsRequest{ExperimentId: tg.eid})
		return err
	}},
	{"experiments.GetQuotaUsage", kindAccount, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Experiments.GetQuotaUsage(ctx, &experimentsv1.GetQuotaUsageRequest{})
		return err
	}},
	{"auth.WhoAmI", kindAccount, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Account.WhoAmI(ctx, &authv1.WhoAmIRequest{})
		return err
	}},
	{"auth.ListTokens", kindCredentials, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Account.ListTokens(ctx, &authv1.ListTokensRequest{})
		return err
	}},
	{"auth.CreateToken", kindCredentials, func(ctx context.Context, h *inprocess.Env, _ target) error {
		_, err := h.Account.CreateToken(ctx, &authv1.CreateTokenRequest{Name: "read", Scopes: []authv1.Scope{authv1.Scope_SCOPE_READ}})
		return err
	}},
}

// matrixFixture holds the principals and experiments of the matrix.
type matrixFixture struct {
	h       *inprocess.Env
	headers map[credential]string
	owner   context.Context // the owner's full-scope API token
	ownerID string
	carol   string
	exps    map[experimentsv1.Visibility]target
	slots   atomic.Int64
}

func newMatrixFixture(t *testing.T, h *inprocess.Env) *matrixFixture {
	t.Helper()
	ctx := t.Context()
	f := &matrixFixture{h: h, headers: map[credential]string{}, exps: map[experimentsv1.Visibility]target{}}
	ownerOIDC := inprocess.As(ctx, inprocess.Bearer(h.IDToken(t, "owner-subject", "owner@example.com", false)))
	who, err := h.Account.WhoAmI(ownerOIDC, &authv1.WhoAmIRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f.ownerID = who.GetUserId()
	token := func(ctx context.Context, scopes ...authv1.Scope) (string, string) {
		resp, err := h.Account.CreateToken(ctx, &authv1.CreateTokenRequest{Name: "matrix", Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetSecret(), resp.GetToken().GetTokenId()
	}
	full, _ := token(ownerOIDC, authv1.Scope_SCOPE_UPLOAD, authv1.Scope_SCOPE_READ, authv1.Scope_SCOPE_TOKENS)
	readOnly, _ := token(ownerOIDC, authv1.Scope_SCOPE_READ)
	revoked, revokedID := token(ownerOIDC, authv1.Scope_SCOPE_UPLOAD, authv1.Scope_SCOPE_READ)
	if _, err := h.Account.RevokeToken(ownerOIDC, &authv1.RevokeTokenRequest{TokenId: revokedID}); err != nil {
		t.Fatal(err)
	}
	otherOIDC := inprocess.As(ctx, inprocess.Bearer(h.IDToken(t, "other-subject", "other@example.com", false)))
	other, _ := token(otherOIDC, authv1.Scope_SCOPE_UPLOAD, authv1.Scope_SCOPE_READ, authv1.Scope_SCOPE_TOKENS)

	f.headers = map[credential]string{
		credNone:      "",
		credMalformed: inprocess.Bearer("tbh_not-a-real-token"),
		credExpired:   inprocess.Bearer(h.IDToken(t, "owner-subject", "owner@example.com", true)),
		credRevoked:   inprocess.Bearer(revoked),
		credReadOnly:  inprocess.Bearer(readOnly),
		credOther:     inprocess.Bearer(other),
		credOwner:     inprocess.Bearer(full),
	}
	f.owner = inprocess.As(ctx, inprocess.Bearer(full))
	carol, err := h.Account.WhoAmI(inprocess.As(ctx, inprocess.Bearer(h.IDToken(t, "carol-subject", "carol@example.com", false))), &authv1.WhoAmIRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f.carol = carol.GetUserId()
	for _, v := range visibilities {
		f.exps[v] = f.newExperiment(t, v)
	}
	return f
}

// newExperiment creates an experiment of the owner with a scalar series, a
// blob sequence of many slots and one current blob.
func (f *matrixFixture) newExperiment(t *testing.T, v experimentsv1.Visibility) target {
	t.Helper()
	h, ctx := f.h, f.owner
	ce, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: v.String()})
	if err != nil {
		t.Fatal(err)
	}
	eid := ce.GetExperimentId()
	if _, err := h.Experiments.SetVisibility(ctx, &experimentsv1.SetVisibilityRequest{ExperimentId: eid, Visibility: v}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "train", Tag: "graph", Step: 0, WallTime: timestamppb.Now(), FinalSequenceLength: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WriteWholeBlob(ctx, seq.GetBlobSequenceId(), 0, []byte("the first blob")); err != nil {
		t.Fatal(err)
	}
	return target{eid: eid, vis: v, carol: f.carol, seqID: seq.GetBlobSequenceId(),
		blobID: store.BlobID(eid, store.BlobRef{Run: "train", Tag: "graph", Step: 0, Index: 0})}
}

func runTenancyMatrix(t *testing.T, h *inprocess.Env) {
	f := newMatrixFixture(t, h)
	for _, rc := range rpcCases {
		for _, c := range credentials {
			for _, v := range visibilities {
				name := fmt.Sprintf("%s/%s/%s", rc.name, c, v)
				tg := f.exps[v]
				if rc.name == "DeleteExperiment" && c == credOwner {
					tg = f.newExperiment(t, v) // keep the shared one
				}
				tg.index = 1 + f.slots.Add(1)
				t.Run(name, func(t *testing.T) {
					err := rc.call(inprocess.As(t.Context(), f.headers[c]), h, tg)
					want := expectedCode(rc.kind, c, v)
					if got := status.Code(err); got != want {
						t.Errorf("got %v (%v), want %v", got, err, want)
					}
				})
			}
		}
	}

	// A private experiment and a missing one look the same to everyone but
	// the owner: same code and same message, for every RPC on an experiment.
	missing := target{eid: store.NewExperimentID()}
	missing.seqID = store.BlobSequenceID(missing.eid, "train", "graph", 0)
	missing.blobID = store.BlobID(missing.eid, store.BlobRef{Run: "train", Tag: "graph"})
	for _, rc := range rpcCases {
		if rc.kind != kindWrite && rc.kind != kindRead {
			continue
		}
		for _, c := range []credential{credNone, credOther} {
			ctx := inprocess.As(t.Context(), f.headers[c])
			priv := f.exps[experimentsv1.Visibility_VISIBILITY_PRIVATE]
			priv.index = 1 + f.slots.Add(1)
			a, b := status.Convert(rc.call(ctx, h, priv)), status.Convert(rc.call(ctx, h, missing))
			if a.Code() != b.Code() || a.Message() != b.Message() {
				t.Errorf("%s by %s: private gives %v %q, missing gives %v %q", rc.name, c, a.Code(), a.Message(), b.Code(), b.Message())
			}
		}
	}

	// The public gallery lists the public experiment, never the unlisted
	// or private one, to anyone.
	for _, c := range []credential{credNone, credOther, credOwner} {
		resp, err := h.Experiments.ListPublicExperiments(inprocess.As(t.Context(), f.headers[c]), &experimentsv1.ListPublicExperimentsRequest{PageSize: 50})
		if err != nil {
			t.Fatalf("ListPublicExperiments as %s: %v", c, err)
		}
		listed := map[string]bool{}
		for _, e := range resp.GetExperiments() {
			listed[e.GetExperimentId()] = true
		}
		for v, tg := range f.exps {
			if want := v == experimentsv1.Visibility_VISIBILITY_PUBLIC; listed[tg.eid] != want {
				t.Errorf("public gallery as %s: %v experiment listed = %v, want %v", c, v, listed[tg.eid], want)
			}
		}
	}

	// Listing never shows another user's experiments.
	s, err := h.Export.StreamExperiments(inprocess.As(t.Context(), f.headers[credOther]), &servicepb.StreamExperimentsRequest{
		ExperimentsMask: &servicepb.ExperimentMask{Name: true, Owner: true}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExperiments() {
			if e.GetOwner() == f.ownerID {
				t.Errorf("another user's listing shows the owner's experiment %s", e.GetExperimentId())
			}
		}
	}
}

// The bad-credential throttle is not in the matrix: inprocess has none
// (the serve package tests it).
func TestTenancyMatrixEmbedded(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	runTenancyMatrix(t, inprocess.Start(t, st, blobs, nil))
}

func TestTenancyMatrixSpanner(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.OnSpanner(t)
	runTenancyMatrix(t, inprocess.Start(t, st, blobs, nil))
}

func TestMain(m *testing.M) { os.Exit(spanneremu.MainOnDemand(m)) }
