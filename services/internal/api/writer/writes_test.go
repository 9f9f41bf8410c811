package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func TestBadPointsAreReportedAndGoodOnesKept(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	ctx := h.UserContext(t, "ada")
	ce, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "validation"})
	if err != nil {
		t.Fatal(err)
	}
	eid := ce.GetExperimentId()
	now := timestamppb.Now()
	pt := func(step int64, v float64) *servicepb.ScalarPoint {
		return &servicepb.ScalarPoint{Step: step, WallTime: now, Value: v}
	}
	tensorMeta := &tbpb.SummaryMetadata{DataClass: tbpb.DataClass_DATA_CLASS_TENSOR}
	req := &servicepb.WriteScalarRequest{ExperimentId: eid, Runs: []*servicepb.WriteScalarRequest_Run{
		{Name: "train", Tags: []*servicepb.WriteScalarRequest_Tag{
			{Name: "loss", Metadata: inprocess.ScalarMetadata(), Points: []*servicepb.ScalarPoint{
				pt(1, 0.5), pt(2, math.NaN()), pt(3, math.Inf(-1)),
				{Step: 4, Value: 1}, // no wall time
				{Step: 5, WallTime: &timestamppb.Timestamp{Seconds: 1, Nanos: -1}, Value: 1},
				pt(6, 0.25),
			}},
			{Name: "", Points: []*servicepb.ScalarPoint{pt(1, 1)}},
			{Name: "as-tensor", Metadata: tensorMeta, Points: []*servicepb.ScalarPoint{pt(1, 1)}},
		}},
		{Name: strings.Repeat("r", 1025), Tags: []*servicepb.WriteScalarRequest_Tag{{Name: "x", Points: []*servicepb.ScalarPoint{pt(1, 1)}}}},
	}}
	_, err = h.Writer.WriteScalar(ctx, req)
	s := status.Convert(err)
	if s.Code() != codes.InvalidArgument {
		t.Fatalf("WriteScalar with bad points: %v, want INVALID_ARGUMENT", err)
	}
	var fields []string
	for _, d := range s.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField()+" "+v.GetDescription())
			}
		}
	}
	for _, want := range []string{
		`runs[0].tags[0].points[3] run "train" tag "loss" step 4: wall_time is missing`,
		`runs[0].tags[0].points[4] run "train" tag "loss" step 5: wall_time has nanos outside [0, 1e9)`,
		`runs[0].tags[1].name run "train": tag name is empty`,
		`runs[0].tags[2].metadata run "train" tag "as-tensor": summary metadata declares data class tensor, not scalar`,
		`runs[1].name run "` + strings.Repeat("r", 1025) + `": run name has 1025 bytes; the limit is 1024`,
	} {
		found := false
		for _, f := range fields {
			found = found || f == want
		}
		if !found {
			t.Errorf("violation %q not reported; got:\n%s", want, strings.Join(fields, "\n"))
		}
	}
	if len(fields) != 5 {
		t.Errorf("%d violations reported, want 5", len(fields))
	}
	// The four good points (NaN and -Inf included) are stored.
	got := h.ExportAll(t, ctx, eid)
	loss := got.Scalars[[2]string{"train", "loss"}]
	if len(loss) != 4 || loss[0].Step != 1 || !math.IsNaN(loss[1].Value) || !math.IsInf(loss[2].Value, -1) || loss[3].Step != 6 {
		t.Errorf("stored points: %+v", loss)
	}

	// A series of another class: its points are refused by name, the
	// others stored.
	if _, err := h.Writer.WriteTensor(ctx, &servicepb.WriteTensorRequest{ExperimentId: eid, Runs: []*servicepb.WriteTensorRequest_Run{{
		Name: "train", Tags: []*servicepb.WriteTensorRequest_Tag{
			{Name: "loss", Points: []*servicepb.TensorPoint{{Step: 9, WallTime: now, Value: &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, FloatVal: []float32{1}}}}},
			{Name: "weights", Points: []*servicepb.TensorPoint{{Step: 9, WallTime: now, Value: &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, FloatVal: []float32{1}}}}},
		}}}}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `tag "loss"`) {
		t.Errorf("tensor points to a scalar series: %v", err)
	}
	if got := h.ExportAll(t, ctx, eid); len(got.Tensors[[2]string{"train", "weights"}]) != 1 {
		t.Errorf("good tensor point of the same request not stored: %v", got.Tensors)
	}

	// Names and descriptions. (Invalid UTF-8 never reaches a handler:
	// protobuf refuses it in proto3 strings on both ends.)
	for _, bad := range []*servicepb.CreateExperimentRequest{
		{Name: strings.Repeat("é", 101)}, {Description: strings.Repeat("d", 601)},
	} {
		if _, err := h.Writer.CreateExperiment(ctx, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("CreateExperiment(%d-byte name, %d-byte description): %v", len(bad.Name), len(bad.Description), err)
		}
	}
	if _, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: strings.Repeat("é", 100), Description: strings.Repeat("d", 600)}); err != nil {
		t.Errorf("name of 100 and description of 600 characters: %v", err)
	}
}

func TestLimitsAreEnforced(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	// The byte quota leaves 100 bytes for blobs once the series "loss"
	// (its metadata), the runs "train" and "r" and ada's token are stored.
	token := (&store.APIToken{ID: store.NewTokenID(), Name: "test", SecretPrefix: "tbh_abcdef"}).StoredBytes()
	stored := int64(proto.Size(inprocess.ScalarMetadata())) + store.RowBytes("train") + store.RowBytes("r") + token
	quota := stored + 100
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) {
		c.Limits.MaxExperimentsPerUser = 2
		c.Limits.MaxPointsPerUser = 10
		c.Limits.MaxPointsPerRequest = 8
		c.Limits.MaxBlobBytesPerUser = quota
	})
	ctx := h.UserContext(t, "ada")
	if tb := h.TokenBytes(t, ctx); tb != token {
		t.Fatalf("ada's token holds %d bytes, want %d", tb, token)
	}
	var eid string
	for range 2 {
		ce, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
		if err != nil {
			t.Fatal(err)
		}
		eid = ce.GetExperimentId()
	}
	wantExhausted := func(what string, err error, mention string) {
		t.Helper()
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), mention) {
			t.Errorf("%s: %v, want RESOURCE_EXHAUSTED naming %q", what, err, mention)
		}
	}
	_, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	wantExhausted("third experiment", err, "experiments per user is 2")
	_, err = h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	wantExhausted("9 points in one request", err, "points per request limit is 8")
	if _, err := h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 1, 2, 3, 4, 5, 6, 7, 8)); err != nil {
		t.Fatal(err)
	}
	_, err = h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 11, 12, 13))
	wantExhausted("points beyond the quota", err, "points per user is 10")
	seq, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "b", WallTime: timestamppb.Now(), FinalSequenceLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantExhausted("blob beyond the quota", h.WriteWholeBlob(ctx, seq.GetBlobSequenceId(), 0, make([]byte, 101)), fmt.Sprintf("blob bytes per user is %d", quota))

	usage, err := h.Experiments.GetQuotaUsage(ctx, &experimentsv1.GetQuotaUsageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The byte quota counts no blob (the one refused stored nothing), the
	// metadata of the series "loss", the two runs and ada's token.
	want := map[experimentsv1.Quota][2]int64{
		experimentsv1.Quota_QUOTA_EXPERIMENTS: {2, 2}, experimentsv1.Quota_QUOTA_POINTS: {8, 10},
		experimentsv1.Quota_QUOTA_BLOB_BYTES: {stored, quota},
	}
	for _, u := range usage.GetUsages() {
		if w := want[u.GetQuota()]; u.GetUsed() != w[0] || u.GetLimit() != w[1] {
			t.Errorf("%v: used %d of %d, want %d of %d", u.GetQuota(), u.GetUsed(), u.GetLimit(), w[0], w[1])
		}
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) {
		c.Limits.RequestsPerSecond, c.Limits.Burst = 0.001, 3
	})
	ctx := h.UserContext(t, "ada")
	var last error
	for range 4 {
		_, last = h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	}
	if status.Code(last) != codes.ResourceExhausted || !strings.Contains(last.Error(), "burst 3") {
		t.Errorf("fourth request within the burst of 3: %v", last)
	}
	// Another user is not affected.
	if _, err := h.Writer.CreateExperiment(h.UserContext(t, "bob"), &servicepb.CreateExperimentRequest{}); err != nil {
		t.Errorf("other user: %v", err)
	}
}

// TestSharingAndContinuing covers the tbhub additions: continuing an
// experiment, visibility and read grants, and the token service.
func TestSharingAndContinuing(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	owner := h.UserContext(t, "owner")
	bobOIDC := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "bob-subject", "bob@example.com", false)))
	bobWho, err := h.Account.WhoAmI(bobOIDC, &authv1.WhoAmIRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if bobWho.GetEmail() != "bob@example.com" || bobWho.GetUserName() != "bob@example.com" || bobWho.GetCredentialKind() != authv1.CredentialKind_CREDENTIAL_KIND_OIDC {
		t.Errorf("WhoAmI = %v", bobWho)
	}
	ce, err := h.Writer.CreateExperiment(owner, &servicepb.CreateExperimentRequest{Name: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	eid := ce.GetExperimentId()
	if _, err := h.Writer.WriteScalar(owner, inprocess.ScalarRequest(eid, 1, 5, 3)); err != nil {
		t.Fatal(err)
	}
	cont, err := h.Experiments.ContinueExperiment(owner, &experimentsv1.ContinueExperimentRequest{ExperimentId: eid})
	if err != nil {
		t.Fatal(err)
	}
	if len(cont.GetSeries()) != 1 || cont.GetSeries()[0].GetMaxStep() != 5 || cont.GetSeries()[0].GetNumPoints() != 3 {
		t.Errorf("ContinueExperiment series = %v", cont.GetSeries())
	}
	if cont.GetExperiment().GetVisibility() != experimentsv1.Visibility_VISIBILITY_PRIVATE {
		t.Errorf("new experiments should be private, got %v", cont.GetExperiment().GetVisibility())
	}
	if _, err := h.Experiments.ContinueExperiment(bobOIDC, &experimentsv1.ContinueExperimentRequest{ExperimentId: eid}); status.Code(err) != codes.NotFound {
		t.Errorf("another user continuing a private experiment: %v, want NOT_FOUND", err)
	}
	get := func(ctx context.Context) codes.Code {
		_, err := h.Experiments.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
		return status.Code(err)
	}
	if c := get(bobOIDC); c != codes.NotFound {
		t.Errorf("bob reads private experiment: %v", c)
	}
	if _, err := h.Experiments.GrantAccess(owner, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: "bob@example.com"}}}); err != nil {
		t.Fatal(err)
	}
	if c := get(bobOIDC); c != codes.OK {
		t.Errorf("bob reads after grant: %v", c)
	}
	shared, err := h.Experiments.ListExperiments(bobOIDC, &experimentsv1.ListExperimentsRequest{Scope: experimentsv1.ListExperimentsRequest_SCOPE_SHARED_WITH_ME})
	if err != nil || len(shared.GetExperiments()) != 1 || shared.GetExperiments()[0].GetExperimentId() != eid {
		t.Errorf("shared with bob: %v, %v", shared, err)
	}
	if _, err := h.Writer.WriteScalar(bobOIDC, inprocess.ScalarRequest(eid, 9)); status.Code(err) != codes.PermissionDenied {
		t.Errorf("grantee writes: %v, want PERMISSION_DENIED", err)
	}
	grants, err := h.Experiments.ListGrants(owner, &experimentsv1.ListGrantsRequest{ExperimentId: eid})
	if err != nil || len(grants.GetGrants()) != 1 || grants.GetGrants()[0].GetGrantee().GetUserId() != bobWho.GetUserId() ||
		grants.GetGrants()[0].GetUserName() != "bob@example.com" {
		t.Errorf("ListGrants = %v, %v", grants, err)
	}
	// By user name: local users (tbhub token create --user NAME) have no email.
	h.UserContext(t, "carol")
	if _, err := h.Experiments.GrantAccess(owner, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserName{UserName: "carol"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Experiments.GrantAccess(owner, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserName{UserName: "nobody"}}}); status.Code(err) != codes.NotFound {
		t.Errorf("granting to an unknown user name: %v, want NOT_FOUND", err)
	}
	if _, err := h.Experiments.RevokeAccess(owner, &experimentsv1.RevokeAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserName{UserName: "carol"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Experiments.RevokeAccess(owner, &experimentsv1.RevokeAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserId{UserId: bobWho.GetUserId()}}}); err != nil {
		t.Fatal(err)
	}
	if c := get(bobOIDC); c != codes.NotFound {
		t.Errorf("bob reads after revoke: %v", c)
	}
	// A grant to an email nobody has signed in with yet waits for them, whatever
	// the case it was typed in.
	if _, err := h.Experiments.GrantAccess(owner, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: "Frank@Example.com"}}}); err != nil {
		t.Fatal(err)
	}
	grants, err = h.Experiments.ListGrants(owner, &experimentsv1.ListGrantsRequest{ExperimentId: eid})
	if err != nil || len(grants.GetGrants()) != 1 || grants.GetGrants()[0].GetGrantee().GetEmail() != "frank@example.com" {
		t.Errorf("ListGrants with a pending grant = %v, %v", grants, err)
	}
	frank := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "frank-subject", "frank@example.com", false)))
	if c := get(frank); c != codes.OK {
		t.Errorf("frank reads after his first sign-in: %v", c)
	}
	if _, err := h.Experiments.SetVisibility(owner, &experimentsv1.SetVisibilityRequest{ExperimentId: eid, Visibility: experimentsv1.Visibility_VISIBILITY_UNLISTED}); err != nil {
		t.Fatal(err)
	}
	if c := get(t.Context()); c != codes.OK {
		t.Errorf("anonymous reads unlisted: %v", c)
	}

	// Tokens: a read-only token cannot mint an upload token; listing shows
	// no secrets; revoked tokens stop working.
	mint, err := h.Account.CreateToken(bobOIDC, &authv1.CreateTokenRequest{Name: "ro", Scopes: []authv1.Scope{authv1.Scope_SCOPE_READ}})
	if err != nil {
		t.Fatal(err)
	}
	ro := inprocess.As(t.Context(), inprocess.Bearer(mint.GetSecret()))
	if _, err := h.Account.CreateToken(ro, &authv1.CreateTokenRequest{Scopes: []authv1.Scope{authv1.Scope_SCOPE_UPLOAD}}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("read-only token minting an upload token: %v", err)
	}
	list, err := h.Account.ListTokens(bobOIDC, &authv1.ListTokensRequest{})
	if err != nil || len(list.GetTokens()) != 1 || strings.Contains(list.String(), mint.GetSecret()) {
		t.Errorf("ListTokens = %v, %v; want one token, no secret", list, err)
	}
	if _, err := h.Account.RevokeToken(bobOIDC, &authv1.RevokeTokenRequest{TokenId: mint.GetToken().GetTokenId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Account.WhoAmI(ro, &authv1.WhoAmIRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("revoked token: %v", err)
	}
	if _, err := h.Account.RevokeToken(owner, &authv1.RevokeTokenRequest{TokenId: mint.GetToken().GetTokenId()}); status.Code(err) != codes.NotFound {
		t.Errorf("revoking another user's token: %v, want NOT_FOUND", err)
	}
}

// Summary metadata counts toward the per-user byte quota (issue 14 #4):
// 20 WriteScalar calls, each one point of a new series carrying 60 KB of
// plugin_data.content (under the 64 KiB metadata limit), stored 1.2 MB
// while the quota counted nothing. Under a 200 KiB quota the fourth is
// refused, a blob sequence's metadata is refused the same way, and
// GetQuotaUsage counts what was stored.
func TestMetadataCountsTowardTheByteQuota(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	const quota = 200 << 10
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) {
		c.Limits.MaxBlobBytesPerUser = quota
	})
	ctx, eid := h.AdaExperiment(t, "metadata")
	// The series' run, stored with the first, and ada's token
	// (TestTokensCountTowardTheByteQuota) count too.
	base := store.RowBytes("train") + h.TokenBytes(t, ctx)
	stored := base
	for i := range 20 {
		req := inprocess.ScalarRequest(eid, 1)
		tag := req.Runs[0].Tags[0]
		tag.Name = fmt.Sprintf("fat%d", i)
		tag.Metadata.PluginData.Content = make([]byte, 60_000)
		_, err := h.Writer.WriteScalar(ctx, req)
		if size := int64(proto.Size(tag.Metadata)); stored+size <= quota {
			if err != nil {
				t.Fatalf("series %d, %d bytes of metadata stored: %v", i, stored, err)
			}
			stored += size
			continue
		}
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), fmt.Sprintf("blob bytes per user is %d", quota)) {
			t.Fatalf("series %d past the quota (%d bytes of metadata stored): %v, want RESOURCE_EXHAUSTED naming the quota", i, stored, err)
		}
	}
	if stored == base || stored > quota {
		t.Fatalf("%d bytes of metadata and runs stored under a quota of %d", stored, quota)
	}
	big := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "images", Content: make([]byte, 60_000)}}
	_, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "r", Tag: "b", WallTime: timestamppb.Now(), FinalSequenceLength: 1, Metadata: big})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("blob sequence with 60 KB of metadata past the quota: %v, want RESOURCE_EXHAUSTED", err)
	}
	usage, err := h.Experiments.GetQuotaUsage(ctx, &experimentsv1.GetQuotaUsageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range usage.GetUsages() {
		if u.GetQuota() == experimentsv1.Quota_QUOTA_BLOB_BYTES && (u.GetUsed() != stored || u.GetLimit() != quota) {
			t.Errorf("blob bytes quota: used %d of %d, want %d of %d", u.GetUsed(), u.GetLimit(), stored, quota)
		}
	}
}

// The metadata limit (--max-metadata-bytes) holds on every path that
// creates a series: WriteScalar, WriteTensor and GetOrCreateBlobSequence
// (a blob sequence's metadata; WriteBlob carries none). Over it the series
// is refused naming the limit; within it, accepted.
func TestMetadataLimitOnEveryPath(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	const limit = 1000
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxMetadataBytes = limit })
	ctx, eid := h.AdaExperiment(t, "metadata-limit")
	metadata := func(plugin string, n int) *tbpb.SummaryMetadata {
		return &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: plugin, Content: make([]byte, n)}}
	}
	paths := map[string]func(tag string, md *tbpb.SummaryMetadata) error{
		"WriteScalar": func(tag string, md *tbpb.SummaryMetadata) error {
			req := inprocess.ScalarRequest(eid, 1)
			req.Runs[0].Tags[0].Name, req.Runs[0].Tags[0].Metadata = tag, md
			_, err := h.Writer.WriteScalar(ctx, req)
			return err
		},
		"WriteTensor": func(tag string, md *tbpb.SummaryMetadata) error {
			_, err := h.Writer.WriteTensor(ctx, &servicepb.WriteTensorRequest{ExperimentId: eid, Runs: []*servicepb.WriteTensorRequest_Run{{
				Name: "r", Tags: []*servicepb.WriteTensorRequest_Tag{{Name: tag, Metadata: md, Points: []*servicepb.TensorPoint{{
					Step: 1, WallTime: timestamppb.Now(), Value: &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, FloatVal: []float32{1}}}}}}}}})
			return err
		},
		"GetOrCreateBlobSequence": func(tag string, md *tbpb.SummaryMetadata) error {
			_, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
				ExperimentId: eid, Run: "r", Tag: tag, Step: 1, WallTime: timestamppb.Now(), FinalSequenceLength: 1, Metadata: md})
			return err
		},
	}
	for name, write := range paths {
		if err := write(name+"-over", metadata("p", 2*limit)); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), fmt.Sprintf("metadata limit is %d", limit)) {
			t.Errorf("%s with %d bytes of metadata: %v, want INVALID_ARGUMENT naming the limit of %d", name, 2*limit, err, limit)
		}
		if err := write(name+"-within", metadata("p", limit/2)); err != nil {
			t.Errorf("%s with %d bytes of metadata: %v", name, limit/2, err)
		}
	}
}

// frozenInstances starts two instances on one embedded store with the
// limits set sets, their clocks stopped (Config.Now), so that neither ever
// refreshes its cached usage: the deterministic way to make one stale. It
// returns the store, both, and the context of a user ada.
func frozenInstances(t *testing.T, set func(*limits.Limits)) (store.Store, *inprocess.Env, *inprocess.Env, context.Context) {
	t.Helper()
	st, blobs := inprocess.Embedded(t)
	frozen := time.Now()
	configure := func(c *inprocess.Config) {
		set(&c.Limits)
		c.Now = func() time.Time { return frozen }
	}
	a, b := inprocess.Start(t, st, blobs, configure), inprocess.Start(t, st, blobs, configure)
	return st, a, b, a.UserContext(t, "ada")
}

// TestPointsQuotaHoldsAcrossInstances: two instances on one store, each
// with its own cached usage, both frozen (Config.Now never advances, so
// neither refreshes its cache): the store counts the points and checks
// the quota in the write's own transaction, so the instance whose cache
// is stale is refused by the store, with the numbers, and nothing past
// the quota is stored.
func TestPointsQuotaHoldsAcrossInstances(t *testing.T) {
	t.Parallel()
	_, a, b, ctx := frozenInstances(t, func(l *limits.Limits) { l.MaxPointsPerUser = 20 })
	ce, err := a.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eid := ce.GetExperimentId()
	// b reads ada's usage (0) and keeps it: 10 points.
	if _, err := b.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109)); err != nil {
		t.Fatal(err)
	}
	// a stores 7 more: 17 in all, which b's cache does not know.
	if _, err := a.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 0, 1, 2, 3, 4, 5, 6)); err != nil {
		t.Fatal(err)
	}
	// b believes ada has 10 points and admits 8; the store has 17.
	_, err = b.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 20, 21, 22, 23, 24, 25, 26, 27))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "points per user is 20: the user has 17 and this request adds 8") {
		t.Errorf("8 points at 17 of 20 through the other instance: %v, want RESOURCE_EXHAUSTED with the numbers", err)
	}
	if n := len(a.ExportAll(t, ctx, eid).Scalars[[2]string{"train", "loss"}]); n != 17 {
		t.Errorf("stored %d points, want 17", n)
	}
	// What fits still passes through either: b's cache, which counted
	// the 8 refused points (18), is read again after the refusal.
	if _, err := b.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 20, 21, 22)); err != nil {
		t.Errorf("3 points at 17 of 20: %v", err)
	}
}

// TestExperimentsQuotaHoldsAcrossInstances: the same for experiments: the
// instance whose cached count is stale is refused by the store.
func TestExperimentsQuotaHoldsAcrossInstances(t *testing.T) {
	t.Parallel()
	st, a, b, ctx := frozenInstances(t, func(l *limits.Limits) { l.MaxExperimentsPerUser = 2 })
	for i, h := range []*inprocess.Env{b, a} { // b counts 1, the store 2
		if _, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{}); err != nil {
			t.Fatalf("experiment %d: %v", i+1, err)
		}
	}
	_, err := b.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "experiments per user is 2: the user has 2 and this request adds 1") {
		t.Errorf("third experiment through the other instance: %v, want RESOURCE_EXHAUSTED with the numbers", err)
	}
	who, err := a.Account.WhoAmI(ctx, &authv1.WhoAmIRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := st.UserUsage(t.Context(), who.GetUserId()); err != nil || u.Experiments != 2 {
		t.Errorf("usage after the refusal: %+v, %v; want 2 experiments", u, err)
	}
}

// TestBytesQuotaHoldsAcrossInstances: the byte quota the same way. The
// store counts blob rows' bytes in the usage row and checks the quota in
// the transaction that writes the row, so a blob admitted by the instance
// whose cache is stale is refused, with the numbers; its object is
// removed, and what is left of the quota still takes a blob.
func TestBytesQuotaHoldsAcrossInstances(t *testing.T) {
	const quota = 1 << 20
	st, a, b, ctx := frozenInstances(t, func(l *limits.Limits) { l.MaxBlobBytesPerUser = quota })
	ce, err := a.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eid := ce.GetExperimentId()
	seq := a.ImageSequence(t, ctx, eid, 3)
	e, err := st.GetExperiment(t.Context(), eid)
	if err != nil {
		t.Fatal(err)
	}
	usage := func() store.Usage {
		t.Helper()
		u, err := st.UserUsage(t.Context(), e.Owner)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	// The token, the run and the series' metadata take a few hundred
	// bytes; blobs get the rest.
	room := quota - usage().StoredBytes()
	image := func(n int64, fill byte) []byte { return bytes.Repeat([]byte{fill}, int(n)) }
	// Both instances read ada's usage without blobs (a when it made the
	// sequence, b now), and keep it. b stores all but 400 bytes of the
	// room, which a does not know.
	if err := b.WriteWholeBlob(ctx, seq, 0, image(room-400, 1)); err != nil {
		t.Fatal(err)
	}
	// a believes there is room for 600 more; the store has 400.
	err = a.WriteWholeBlob(ctx, seq, 1, image(600, 2))
	want := fmt.Sprintf("blob bytes per user is %d: the user has %d and this request adds 600", quota, quota-400)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), want) {
		t.Errorf("600 bytes with 400 left through the other instance: %v, want RESOURCE_EXHAUSTED saying %q", err, want)
	}
	if state, size := a.BlobState(t, ctx, seq, 1); state == servicepb.BlobState_BLOB_STATE_CURRENT || size != 0 {
		t.Errorf("the refused blob: %v, %d bytes; want nothing stored", state, size)
	}
	if _, err := a.Blobs.Stat(t.Context(), blob.ObjectKey(eid, "r", "images", 1, 1)); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("the refused blob's object: %v; want it removed", err)
	}
	if got := usage().BlobBytes; got != room-400 {
		t.Errorf("ada's blob bytes after the refusal: %d, want %d", got, room-400)
	}
	// What fits passes through either: a reads the usage again after the
	// store refused.
	if err := a.WriteWholeBlob(ctx, seq, 1, image(400, 3)); err != nil {
		t.Errorf("the last 400 bytes of the quota: %v", err)
	}
	if got := usage().StoredBytes(); got != quota {
		t.Errorf("ada stores %d bytes, want the quota, %d", got, quota)
	}
}

// TestTokenAndPendingGrantCapsHoldAcrossInstances: the live tokens cap
// and the pending grants cap are checked by the store in the transaction
// that creates the token or the grant, so the instance whose cached
// counts are stale is refused, with the numbers.
func TestTokenAndPendingGrantCapsHoldAcrossInstances(t *testing.T) {
	_, a, b, ctx := frozenInstances(t, func(l *limits.Limits) { l.MaxTokensPerUser = 3; l.MaxPendingGrantsPerUser = 2 })
	// ada has the token frozenInstances made. b counts it and one more;
	// a makes a third, which b does not know.
	for i, h := range []*inprocess.Env{b, a} {
		if _, err := h.Account.CreateToken(ctx, &authv1.CreateTokenRequest{Name: fmt.Sprint(i), Scopes: scopesRead}); err != nil {
			t.Fatalf("token %d: %v", i+2, err)
		}
	}
	_, err := b.Account.CreateToken(ctx, &authv1.CreateTokenRequest{Name: "one too many", Scopes: scopesRead})
	wantRefused(t, "a fourth token through the other instance", err, codes.ResourceExhausted,
		"live API tokens per user is 3: the user has 3 and this request adds 1")

	ce, err := a.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{})
	if err != nil {
		t.Fatal(err)
	}
	grant := func(h *inprocess.Env, email string) error {
		_, err := h.Experiments.GrantAccess(ctx, &experimentsv1.GrantAccessRequest{ExperimentId: ce.GetExperimentId(),
			Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: email}}})
		return err
	}
	for i, h := range []*inprocess.Env{b, a} {
		if err := grant(h, fmt.Sprintf("g%d@example.com", i)); err != nil {
			t.Fatalf("pending grant %d: %v", i+1, err)
		}
	}
	wantRefused(t, "a third pending grant through the other instance", grant(b, "g2@example.com"), codes.ResourceExhausted,
		"pending grants per user is 2: the user has 2 and this request adds 1")
	list, err := a.Experiments.ListGrants(ctx, &experimentsv1.ListGrantsRequest{ExperimentId: ce.GetExperimentId()})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.GetGrants()); n != 2 {
		t.Errorf("%d grants stored, want 2", n)
	}
}
