package writer_test

import (
	"context"
	"fmt"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// wantRefused fails the test unless err is code c with a message naming
// mention.
func wantRefused(t *testing.T, what string, err error, c codes.Code, mention string) {
	t.Helper()
	if status.Code(err) != c || !strings.Contains(err.Error(), mention) {
		t.Errorf("%s: %v, want %v naming %q", what, err, c, mention)
	}
}

func putRuns(ctx context.Context, h *inprocess.Env, eid string, names ...string) error {
	req := &experimentsv1.PutRunsRequest{ExperimentId: eid}
	for _, n := range names {
		req.Runs = append(req.Runs, &experimentsv1.RunStart{Name: n, StartTime: 1e9})
	}
	_, err := h.Experiments.PutRuns(ctx, req)
	return err
}

// PutRuns accepted any number of runs per experiment (issue 20 #1:
// 100,000 runs of 1 KiB names, +470 MB in 8.3 s), and every listing of
// the runs answered them all. Runs are capped per experiment
// (--max-runs-per-experiment) on every path that creates one: PutRuns,
// points, blob sequences. Runs that exist may be declared and written to
// again at the cap.
func TestRunsPerExperimentAreCapped(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	const max = 5
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxRunsPerExperiment = max })
	ctx, eid := h.AdaExperiment(t, "sweep")
	if err := putRuns(ctx, h, eid, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if err := putRuns(ctx, h, eid, "a", "b", "c", "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 1)); err != nil { // run "train", the fifth
		t.Fatal(err)
	}
	const limit = "runs per experiment limit is 5"
	wantRefused(t, "a sixth run by PutRuns", putRuns(ctx, h, eid, "a", "e"), codes.ResourceExhausted, limit)
	req := inprocess.ScalarRequest(eid, 2)
	req.Runs[0].Name = "eval"
	_, err := h.Writer.WriteScalar(ctx, req)
	wantRefused(t, "a sixth run by WriteScalar", err, codes.ResourceExhausted, limit)
	_, err = h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "images", Tag: "x", WallTime: timestamppb.Now(), FinalSequenceLength: 1})
	wantRefused(t, "a sixth run by GetOrCreateBlobSequence", err, codes.ResourceExhausted, limit)
	// At the cap, the runs there are still written to and declared.
	if err := putRuns(ctx, h, eid, "a", "d", "train"); err != nil {
		t.Errorf("declaring existing runs at the cap: %v", err)
	}
	if _, err := h.Writer.WriteScalar(ctx, inprocess.ScalarRequest(eid, 3)); err != nil {
		t.Errorf("writing to an existing run at the cap: %v", err)
	}
	if _, err := h.Writer.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: "a", Tag: "x", WallTime: timestamppb.Now(), FinalSequenceLength: 1}); err != nil {
		t.Errorf("a blob sequence in an existing run at the cap: %v", err)
	}
	exp, err := h.Experiments.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetRuns()); n != max || exp.GetExperiment().GetCounts().GetNumRuns() != max {
		t.Errorf("%d runs listed, %d counted; want %d: a refused write created runs", n, exp.GetExperiment().GetCounts().GetNumRuns(), max)
	}
}

// Runs and grants were stored bytes no quota counted (issue 20 #1). Each
// run and grant counts its name's, user ID's or email's bytes and
// store.RowOverheadBytes toward the owner's byte quota
// (--max-blob-bytes-per-user); past it PutRuns and GrantAccess are
// refused naming the quota, and GetQuotaUsage counts them.
func TestRunsAndGrantsCountTowardTheByteQuota(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	const quota = 5000
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxBlobBytesPerUser = quota })
	ctx, eid := h.AdaExperiment(t, "runs")
	long := strings.Repeat("r", 1000)
	base := h.TokenBytes(t, ctx) // ada's token counts too
	stored := base
	for i := range 5 {
		name := fmt.Sprint(long, i)
		err := putRuns(ctx, h, eid, name)
		if stored+store.RowBytes(name) > quota {
			wantRefused(t, fmt.Sprintf("run %d past the quota (%d bytes stored)", i, stored), err, codes.ResourceExhausted, "blob bytes per user is 5000")
			break
		}
		if err != nil {
			t.Fatalf("run %d, %d bytes stored: %v", i, stored, err)
		}
		stored += store.RowBytes(name)
	}
	if stored == base || stored == base+5*store.RowBytes(long+"0") {
		t.Fatalf("%d bytes of runs stored: the quota was never reached", stored)
	}
	// Declaring the same runs again adds nothing.
	if err := putRuns(ctx, h, eid, long+"0"); err != nil {
		t.Errorf("declaring a stored run again: %v", err)
	}
	email := strings.Repeat("x", quota-int(stored)) + "@example.com" // longer than the room left, and than 254 bytes
	_, err := h.Experiments.GrantAccess(ctx, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: email}}})
	wantRefused(t, "a pending grant to a long email", err, codes.InvalidArgument, "at most 254")
	email = strings.Repeat("x", 200) + "@example.com"
	if _, err := h.Experiments.GrantAccess(ctx, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: email}}}); err != nil {
		t.Fatal(err)
	}
	stored += store.RowBytes(email)
	usage, err := h.Experiments.GetQuotaUsage(ctx, &experimentsv1.GetQuotaUsageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range usage.GetUsages() {
		if u.GetQuota() == experimentsv1.Quota_QUOTA_BLOB_BYTES && u.GetUsed() != stored {
			t.Errorf("blob bytes quota: used %d, want %d (the runs, the pending grant and ada's token)", u.GetUsed(), stored)
		}
	}
}

// GrantAccess by email accepted multi-MiB addresses and any number of
// pending grants (issue 20 #1: +330 MB in 6.5 s). An email is at most
// 254 bytes and the pending grants over a user's experiments at most
// --max-pending-grants-per-user; granting the same email again is free.
func TestPendingGrantsAreBounded(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxPendingGrantsPerUser = 3 })
	ctx, eid := h.AdaExperiment(t, "shared")
	grant := func(eid, email string) error {
		_, err := h.Experiments.GrantAccess(ctx, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
			Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: email}}})
		return err
	}
	huge := strings.Repeat("a", 2<<20) + "@example.com"
	wantRefused(t, "a 2 MiB email", grant(eid, huge), codes.InvalidArgument, "at most 254")
	longest := strings.Repeat("a", 254-len("@example.com")) + "@example.com"
	for _, email := range []string{longest, "b@example.com", "c@example.com", "b@example.com"} {
		if err := grant(eid, email); err != nil {
			t.Fatalf("grant to %.20s…: %v", email, err)
		}
	}
	other, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "a fourth pending grant, on another experiment", grant(other.GetExperimentId(), "d@example.com"),
		codes.ResourceExhausted, "pending grants per user is 3")
	list, err := h.Experiments.ListGrants(ctx, &experimentsv1.ListGrantsRequest{ExperimentId: eid})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.GetGrants()); n != 3 {
		t.Errorf("%d grants listed, want 3", n)
	}
}

// GetExperiment answers the runs of an experiment within the runs limit;
// one holding more (made before the limit, or under a larger one) is
// refused with OUT_OF_RANGE naming the limit, and omit_runs still answers
// the experiment alone, and run_page_size its runs in pages.
func TestGetExperimentRunsAreBounded(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxRunsPerExperiment = 2 })
	ctx, eid := h.AdaExperiment(t, "old")
	if err := st.PutRuns(t.Context(), eid, []store.Run{{Name: "a"}, {Name: "b"}, {Name: "c"}}); err != nil { // before the limit
		t.Fatal(err)
	}
	_, err := h.Experiments.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
	wantRefused(t, "GetExperiment of 3 runs", err, codes.OutOfRange, "has 3 runs; at most 2 are listed")
	exp, err := h.Experiments.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid, OmitRuns: true})
	if err != nil || exp.GetExperiment().GetCounts().GetNumRuns() != 3 || len(exp.GetRuns()) != 0 {
		t.Errorf("GetExperiment with omit_runs = %v, %v; want the experiment counting 3 runs, no runs", exp, err)
	}
	var names []string
	pages := 0
	for token := ""; pages == 0 || token != ""; pages++ {
		exp, err := h.Experiments.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid, RunPageSize: 2, RunPageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if len(exp.GetRuns()) > 2 {
			t.Fatalf("a page of %d runs, size 2", len(exp.GetRuns()))
		}
		for _, r := range exp.GetRuns() {
			names = append(names, r.GetName())
		}
		token = exp.GetNextRunPageToken()
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) || pages != 2 {
		t.Errorf("%d pages of runs %q, want 2 pages of [a b c]", pages, names)
	}
	_, err = h.Experiments.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid, RunPageSize: 2, RunPageToken: "%%"})
	wantRefused(t, "a malformed run_page_token", err, codes.InvalidArgument, "run_page_token")
}
