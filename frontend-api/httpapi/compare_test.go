package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// GetExperiment: e1 is "alpha", e2 "beta"; every other experiment is
// one the caller may not read.
func (f *fakeProvider) GetExperiment(ctx context.Context, req *datapb.GetExperimentRequest) (*datapb.GetExperimentResponse, error) {
	if err := f.check(ctx); err != nil {
		return nil, err
	}
	switch req.GetExperimentId() {
	case "e1":
		return &datapb.GetExperimentResponse{Name: "alpha"}, nil
	case "e2":
		return &datapb.GetExperimentResponse{Name: "beta"}, nil
	}
	return nil, status.Error(codes.NotFound, "experiment not found")
}

// callCount is how many calls f has answered.
func (f *fakeProvider) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Every data route of an experiment answers under /compare/ for the
// experiments of the comparison the caller may read, with runs named
// "experiment/run"; the comparison route says how many are hidden.
func TestComparisonServesTheDataRoutes(t *testing.T) {
	_, srv := startWith(t, httpapi.Config{CacheTTL: -1, Experiments: manageFakes{}})
	resp, body := get(t, srv.URL+"/compare/e1+e2+e3/data/plugin/scalars/tags")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tags: %d %s", resp.StatusCode, body)
	}
	var tags map[string]map[string]any
	if err := json.Unmarshal([]byte(body), &tags); err != nil {
		t.Fatal(err)
	}
	if len(tags) != 2 || tags["alpha/train"] == nil || tags["beta/train"] == nil {
		t.Errorf("tags = %s, want runs alpha/train and beta/train", body)
	}
	resp, body = get(t, srv.URL+"/compare/e1+e2+e3/data/plugin/scalars/scalars?run=beta/train&tag=loss")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "0.25") {
		t.Errorf("scalars of beta/train: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, srv.URL+"/compare/e1+e2+e3/data/comparison")
	var c struct {
		Members []struct{ ExperimentID, Label string }
		Hidden  int
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("comparison: %d %s (%v)", resp.StatusCode, body, err)
	}
	if c.Hidden != 1 || len(c.Members) != 2 || c.Members[0].Label != "alpha" || c.Members[1].Label != "beta" {
		t.Errorf("comparison = %s, want alpha and beta, 1 hidden", body)
	}
	// None visible: the answer for a missing experiment.
	if resp, body := get(t, srv.URL+"/compare/e3+e4/data/plugin/scalars/tags"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("comparison of hidden experiments: %d %s, want 404", resp.StatusCode, body)
	}
	// Past the cap: a clear 400.
	ids := strings.TrimSuffix(strings.Repeat("e1+", 5)+strings.Repeat("x+", 6), "+")
	if resp, body := get(t, srv.URL+"/compare/"+ids+"/data/runs"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "at most 10") {
		t.Errorf("11 experiments: %d %s, want 400 naming the cap", resp.StatusCode, body)
	}
	// The one-experiment routes do not fan out.
	if _, body := get(t, srv.URL+"/experiment/e1+e2/data/plugin/scalars/tags"); strings.Contains(body, "alpha/") {
		t.Errorf("/experiment/e1+e2/ answered as a comparison: %s", body)
	}
}

// An experiment made private is no longer served from the cache in any
// comparison that holds it.
func TestMutationDropsCachedComparisons(t *testing.T) {
	fakes := manageFakes{}
	fake, srv := startWith(t, httpapi.Config{CacheTTL: time.Hour, Experiments: fakes, Auth: fakes, Writer: noWriter{}})
	calls := fake.callCount
	const path = "/compare/e1+e2/data/plugin/scalars/tags"
	get(t, srv.URL+path, "Authorization", "Bearer reader")
	before := calls()
	get(t, srv.URL+path, "Authorization", "Bearer reader")
	if calls() != before {
		t.Fatal("the second read was not answered from the cache")
	}
	req, _ := http.NewRequest(http.MethodPatch, srv.URL+"/api/experiments/e2", strings.NewReader(`{"visibility": "private"}`))
	req.Header.Set("Authorization", "Bearer owner")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	before = calls()
	get(t, srv.URL+path, "Authorization", "Bearer reader")
	if calls() == before {
		t.Error("a comparison holding e2 was answered from the cache after e2 was made private")
	}
}
