package serve_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// The public gallery through ExperimentService, signed out: public
// experiments only, latest update first, page tokens that walk the whole
// list once, the search, the owner's name, and the bounds.
func TestPublicGallery(t *testing.T) {
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, nil)
	owner := as(t.Context(), bearer(h.idToken(t, "gallery-owner", "gallery@example.com", false)))
	var public []string // newest first
	for i, v := range []experimentsv1.Visibility{
		experimentsv1.Visibility_VISIBILITY_PUBLIC, experimentsv1.Visibility_VISIBILITY_UNLISTED,
		experimentsv1.Visibility_VISIBILITY_PUBLIC, experimentsv1.Visibility_VISIBILITY_PRIVATE,
		experimentsv1.Visibility_VISIBILITY_PUBLIC,
	} {
		resp, err := h.writer.CreateExperiment(owner, &servicepb.CreateExperimentRequest{
			Name: fmt.Sprintf("exp %d %s", i, v), Description: fmt.Sprintf("**desc %d**", i)})
		if err != nil {
			t.Fatal(err)
		}
		eid := resp.GetExperimentId()
		if _, err := h.exps.SetVisibility(owner, &experimentsv1.SetVisibilityRequest{ExperimentId: eid, Visibility: v}); err != nil {
			t.Fatal(err)
		}
		if v == experimentsv1.Visibility_VISIBILITY_PUBLIC {
			public = append([]string{eid}, public...)
		}
	}
	anon := t.Context()
	var got []string
	req := &experimentsv1.ListPublicExperimentsRequest{PageSize: 2}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more than 3 pages of 2 for 3 experiments")
		}
		resp, err := h.exps.ListPublicExperiments(anon, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExperiments() {
			got = append(got, e.GetExperimentId())
			if e.GetOwnerName() != "gallery@example.com" || e.GetOwnerEmail() != "gallery@example.com" {
				t.Errorf("%s: owner name %q, email %q, want gallery@example.com", e.GetExperimentId(), e.GetOwnerName(), e.GetOwnerEmail())
			}
			if !strings.HasPrefix(e.GetDescription(), "**desc") || e.GetVisibility() != experimentsv1.Visibility_VISIBILITY_PUBLIC {
				t.Errorf("%s: description %q, visibility %v", e.GetExperimentId(), e.GetDescription(), e.GetVisibility())
			}
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if !slices.Equal(got, public) {
		t.Errorf("gallery = %v, want the public experiments newest first: %v", got, public)
	}

	resp, err := h.exps.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{Query: "EXP 2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetExperiments()) != 1 || resp.GetExperiments()[0].GetExperimentId() != public[1] || resp.GetNextPageToken() != "" {
		t.Errorf("search \"EXP 2\" = %v, want only %s and no next page", resp.GetExperiments(), public[1])
	}
	resp, err = h.exps.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{Query: "unlisted"})
	if err != nil || len(resp.GetExperiments()) != 0 {
		t.Errorf("search \"unlisted\" = %v, %v; want nothing", resp.GetExperiments(), err)
	}

	for _, bad := range []*experimentsv1.ListPublicExperimentsRequest{
		{PageToken: "nonsense"},
		{PageToken: "12.not-an-id"},
		{Query: strings.Repeat("x", 201)},
	} {
		if _, err := h.exps.ListPublicExperiments(anon, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("ListPublicExperiments(%v) = %v, want InvalidArgument", bad, err)
		}
	}
	resp, err = h.exps.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{PageSize: 1000})
	if err != nil || len(resp.GetExperiments()) != 3 {
		t.Errorf("page_size 1000: %d experiments, %v; want all 3 (capped, not refused)", len(resp.GetExperiments()), err)
	}
}
