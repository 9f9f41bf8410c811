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
	"google.golang.org/protobuf/encoding/protojson"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// leaksEmail reports whether an experiment as answered holds "@" anywhere:
// the owner's email (or their user name, which is the email of an OIDC
// user) in any field.
func leaksEmail(e *experimentsv1.Experiment) bool {
	return strings.Contains(protojson.Format(e), "@")
}

// GET of an experiment: a reader who is not the owner sees the owner's
// public name and no email; the owner sees their own email and user name.
func TestExperimentOwnerEmailOnlyToOwner(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	owner := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "owner-sub", "owner@example.com", false)))
	reader := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "reader-sub", "reader@example.com", false)))
	created, err := h.Writer.CreateExperiment(owner, &servicepb.CreateExperimentRequest{Name: "mnist"})
	if err != nil {
		t.Fatal(err)
	}
	eid := created.GetExperimentId()
	if _, err := h.Experiments.GrantAccess(owner, &experimentsv1.GrantAccessRequest{ExperimentId: eid,
		Grantee: &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: "reader@example.com"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Experiments.SetVisibility(owner, &experimentsv1.SetVisibilityRequest{ExperimentId: eid,
		Visibility: experimentsv1.Visibility_VISIBILITY_PUBLIC}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who       string
		ctx       context.Context
		wantEmail bool
	}{
		{"owner", owner, true},
		{"granted reader", reader, false},
		{"anonymous", t.Context(), false},
	} {
		resp, err := h.Experiments.GetExperiment(tc.ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
		if err != nil {
			t.Fatalf("%s: %v", tc.who, err)
		}
		e := resp.GetExperiment()
		if !strings.HasPrefix(e.GetOwnerDisplayName(), "user-") {
			t.Errorf("%s: owner display name %q, want the handle", tc.who, e.GetOwnerDisplayName())
		}
		if tc.wantEmail {
			if e.GetOwnerEmail() != "owner@example.com" || e.GetOwnerName() != "owner@example.com" {
				t.Errorf("%s: owner email %q, name %q, want owner@example.com", tc.who, e.GetOwnerEmail(), e.GetOwnerName())
			}
		} else if leaksEmail(e) {
			t.Errorf("%s: %v holds an email", tc.who, e)
		}
	}
}

// The public gallery through ExperimentService, signed out: public
// experiments only, latest update first, page tokens that walk the whole
// list once, the search, the owner's public name (never their email), and
// the bounds.
func TestPublicGallery(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	owner := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "gallery-owner", "gallery@example.com", false)))
	var public []string // newest first
	for i, v := range []experimentsv1.Visibility{
		experimentsv1.Visibility_VISIBILITY_PUBLIC, experimentsv1.Visibility_VISIBILITY_UNLISTED,
		experimentsv1.Visibility_VISIBILITY_PUBLIC, experimentsv1.Visibility_VISIBILITY_PRIVATE,
		experimentsv1.Visibility_VISIBILITY_PUBLIC,
	} {
		resp, err := h.Writer.CreateExperiment(owner, &servicepb.CreateExperimentRequest{
			Name: fmt.Sprintf("exp %d %s", i, v), Description: fmt.Sprintf("**desc %d**", i)})
		if err != nil {
			t.Fatal(err)
		}
		eid := resp.GetExperimentId()
		if _, err := h.Experiments.SetVisibility(owner, &experimentsv1.SetVisibilityRequest{ExperimentId: eid, Visibility: v}); err != nil {
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
		resp, err := h.Experiments.ListPublicExperiments(anon, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExperiments() {
			got = append(got, e.GetExperimentId())
			if leaksEmail(e) || !strings.HasPrefix(e.GetOwnerDisplayName(), "user-") {
				t.Errorf("%s: %v, want the owner's handle and no email", e.GetExperimentId(), e)
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

	resp, err := h.Experiments.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{Query: "EXP 2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetExperiments()) != 1 || resp.GetExperiments()[0].GetExperimentId() != public[1] || resp.GetNextPageToken() != "" {
		t.Errorf("search \"EXP 2\" = %v, want only %s and no next page", resp.GetExperiments(), public[1])
	}
	resp, err = h.Experiments.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{Query: "unlisted"})
	if err != nil || len(resp.GetExperiments()) != 0 {
		t.Errorf("search \"unlisted\" = %v, %v; want nothing", resp.GetExperiments(), err)
	}
	// The owner's email is not searched: its domain finds nothing.
	for _, q := range []string{"example.com", "gallery@"} {
		resp, err = h.Experiments.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{Query: q})
		if err != nil || len(resp.GetExperiments()) != 0 {
			t.Errorf("search %q (the owner's email) = %v, %v; want nothing", q, resp.GetExperiments(), err)
		}
	}
	// A display name the owner chose is shown and searched instead.
	if _, err := h.Account.SetDisplayName(owner, &authv1.SetDisplayNameRequest{DisplayName: "Grace H."}); err != nil {
		t.Fatal(err)
	}
	resp, err = h.Experiments.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{Query: "grace h"})
	if err != nil || len(resp.GetExperiments()) != 3 {
		t.Fatalf("search \"grace h\" = %v, %v; want the 3 public experiments", resp.GetExperiments(), err)
	}
	if e := resp.GetExperiments()[0]; e.GetOwnerDisplayName() != "Grace H." || leaksEmail(e) {
		t.Errorf("after SetDisplayName: %v, want owner display name Grace H. and no email", e)
	}

	for _, bad := range []*experimentsv1.ListPublicExperimentsRequest{
		{PageToken: "nonsense"},
		{PageToken: "12.not-an-id"},
		{Query: strings.Repeat("x", 201)},
	} {
		if _, err := h.Experiments.ListPublicExperiments(anon, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("ListPublicExperiments(%v) = %v, want InvalidArgument", bad, err)
		}
	}
	resp, err = h.Experiments.ListPublicExperiments(anon, &experimentsv1.ListPublicExperimentsRequest{PageSize: 1000})
	if err != nil || len(resp.GetExperiments()) != 3 {
		t.Errorf("page_size 1000: %d experiments, %v; want all 3 (capped, not refused)", len(resp.GetExperiments()), err)
	}
}

// SetDisplayName: a name within the rules is kept and shown by WhoAmI;
// names too long, with markup, control or bidirectional characters, an
// email, or posing as a handle are refused with the rule, leaving the
// stored name; a read-only token may not change it.
func TestSetDisplayName(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	user := inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "dn-sub", "dn@example.com", false)))
	who, err := h.Account.WhoAmI(user, &authv1.WhoAmIRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if who.GetDisplayName() != store.Handle(who.GetUserId()) {
		t.Errorf("new user's display name %q, want the handle %q (from the user ID, not the email)", who.GetDisplayName(), store.Handle(who.GetUserId()))
	}
	handle := who.GetDisplayName()
	set, err := h.Account.SetDisplayName(user, &authv1.SetDisplayNameRequest{DisplayName: "Zoë O'Brien-Smith Jr."})
	if err != nil || set.GetDisplayName() != "Zoë O'Brien-Smith Jr." {
		t.Fatalf("SetDisplayName = %v, %v", set, err)
	}
	for _, tc := range []struct{ name, wantMsg string }{
		{strings.Repeat("ß", 65), "65 characters; at most 64"},
		{"<script>alert(1)</script>", `not '<'`},
		{"dn@example.com", `not '@'`},
		{"evil\u202eeman", `not '\u202e'`},
		{"tab\there", `not '\t'`},
		{" padded", "space"},
		{"two  spaces", "space"},
		{"User-abc12345", `"user-"`},
	} {
		_, err := h.Account.SetDisplayName(user, &authv1.SetDisplayNameRequest{DisplayName: tc.name})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.wantMsg) {
			t.Errorf("SetDisplayName(%q) = %v, want InvalidArgument saying %q", tc.name, err, tc.wantMsg)
		}
	}
	if _, err := h.Account.SetDisplayName(user, &authv1.SetDisplayNameRequest{DisplayName: strings.Repeat("ß", 64)}); err != nil {
		t.Errorf("SetDisplayName of 64 characters: %v", err)
	}

	tok, err := h.Account.CreateToken(user, &authv1.CreateTokenRequest{Name: "ro", Scopes: []authv1.Scope{authv1.Scope_SCOPE_READ}})
	if err != nil {
		t.Fatal(err)
	}
	readOnly := inprocess.As(t.Context(), inprocess.Bearer(tok.GetSecret()))
	if _, err := h.Account.SetDisplayName(readOnly, &authv1.SetDisplayNameRequest{DisplayName: "Mallory"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("SetDisplayName with a read-only token = %v, want PermissionDenied", err)
	}
	if who, err := h.Account.WhoAmI(user, &authv1.WhoAmIRequest{}); err != nil || who.GetDisplayName() != strings.Repeat("ß", 64) {
		t.Errorf("after refused changes, WhoAmI = %v, %v; want the last accepted name", who, err)
	}
	// Clearing goes back to the handle.
	if set, err := h.Account.SetDisplayName(user, &authv1.SetDisplayNameRequest{}); err != nil || set.GetDisplayName() != handle {
		t.Errorf("clearing: %v, %v; want the handle %q", set, err, handle)
	}
}
