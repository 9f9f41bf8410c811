package readpath_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

type galleryPage struct {
	Experiments []struct {
		ExperimentID     string `json:"experimentId"`
		Name             string `json:"name"`
		Description      string `json:"description"`
		DescriptionHTML  string `json:"descriptionHtml"`
		OwnerName        string `json:"ownerName"`
		OwnerEmail       string `json:"ownerEmail"`
		OwnerDisplayName string `json:"ownerDisplayName"`
		UpdateTime       string `json:"updateTime"`
	} `json:"experiments"`
	NextPageToken string `json:"nextPageToken"`
}

// hostileDescription is markdown that must come out inert: a script, raw
// HTML with a handler, a javascript: link and image.
const hostileDescription = "**bold** claims\n\n<script>alert(1)</script> <img src=x onerror=alert(2)>\n\n" +
	"[click](javascript:alert(3)) ![i](javascript:alert(4)) [ok](https://example.com/)"

// GET /api/experiments?scope=public, signed out: the public gallery, never
// an unlisted or private experiment; searched with q; in pages; each
// description rendered and sanitized beside the raw text.
func TestPublicGalleryRoute(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		checkPublicGalleryRoute(t, startServerWith(t, readpath.Config{CacheTTL: -1}))
	})
	t.Run("spanner", func(t *testing.T) {
		spanneremu.SkipIfShort(t)
		checkPublicGalleryRoute(t, startOnSpanner(t, readpath.Config{CacheTTL: -1}))
	})
}

func checkPublicGalleryRoute(t *testing.T, s *server) {
	ctx := context.Background()
	owner, err := s.st.GetUserByName(ctx, "researcher")
	if err != nil {
		t.Fatal(err)
	}
	create := func(name, desc string, v store.Visibility) string {
		eid := store.NewExperimentID()
		if err := s.st.CreateExperiment(ctx, store.Experiment{ID: eid, Name: name, Description: desc, Owner: owner.ID, Visibility: v}); err != nil {
			t.Fatal(err)
		}
		return eid
	}
	older := create("mnist baseline", "plain", store.VisibilityPublic)
	create("mnist unlisted", "", store.VisibilityUnlisted)
	create("mnist private", "", store.VisibilityPrivate)
	hostile := create("hostile", hostileDescription, store.VisibilityPublic)

	get := func(query string) (galleryPage, response) {
		t.Helper()
		r := s.do(t, http.MethodGet, "/api/experiments?scope=public"+query, "", nil)
		var p galleryPage
		if r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatalf("%s: %v", r.body, err)
			}
		}
		return p, r
	}
	ids := func(p galleryPage) []string {
		var out []string
		for _, e := range p.Experiments {
			out = append(out, e.ExperimentID)
		}
		return out
	}

	p, r := get("")
	if r.status != http.StatusOK {
		t.Fatalf("signed out: %d %s", r.status, r.body)
	}
	if got := ids(p); !slices.Equal(got, []string{hostile, older}) {
		t.Errorf("gallery = %v, want [%s %s] (latest first, no unlisted or private)", got, hostile, older)
	}
	if cc := r.header.Get("Cache-Control"); !strings.Contains(cc, "no-cache") {
		t.Errorf("Cache-Control %q", cc)
	}
	e := p.Experiments[0]
	// Signed out, the owner is their public name only (no display name
	// chosen: the handle), never their user name or email.
	if e.Description != hostileDescription || e.OwnerDisplayName != store.Handle(owner.ID) || e.OwnerName != "" || e.OwnerEmail != "" || e.UpdateTime == "" {
		t.Errorf("first entry: %+v, want owner display name %q and no user name", e, store.Handle(owner.ID))
	}
	html := e.DescriptionHTML
	if !strings.Contains(html, "<strong>bold</strong>") || !strings.Contains(html, `<a href="https://example.com/">ok</a>`) {
		t.Errorf("descriptionHtml %q: want the markdown rendered", html)
	}
	for _, bad := range []string{"<script", "onerror", "javascript:"} {
		if strings.Contains(strings.ToLower(html), bad) {
			t.Errorf("descriptionHtml holds %q: %s", bad, html)
		}
	}

	p, _ = get("&q=" + url.QueryEscape("MNIST"))
	if got := ids(p); !slices.Equal(got, []string{older}) {
		t.Errorf("q=MNIST: %v, want [%s]", got, older)
	}
	p, _ = get("&q=" + url.QueryEscape(store.Handle(owner.ID)))
	if got := ids(p); len(got) != 2 {
		t.Errorf("q=%s (the owner's handle): %v, want both public experiments", store.Handle(owner.ID), got)
	}
	p, _ = get("&q=researcher")
	if got := ids(p); len(got) != 0 {
		t.Errorf("q=researcher (the owner's user name, not shown): %v, want none", got)
	}

	p, _ = get("&page_size=1")
	if got := ids(p); !slices.Equal(got, []string{hostile}) || p.NextPageToken == "" {
		t.Fatalf("page 1: %v, token %q", got, p.NextPageToken)
	}
	p, _ = get("&page_size=1&page_token=" + url.QueryEscape(p.NextPageToken))
	if got := ids(p); !slices.Equal(got, []string{older}) || p.NextPageToken != "" {
		t.Errorf("page 2: %v, token %q; want [%s] and the end", got, p.NextPageToken, older)
	}

	_, r = get("&page_token=junk")
	expect(t, "bad page token", r, http.StatusBadRequest, "page_token")
	_, r = get("&page_size=-1")
	expect(t, "bad page size", r, http.StatusBadRequest, "page_size")
	_, r = get("&q=" + strings.Repeat("x", 300))
	expect(t, "long query", r, http.StatusBadRequest, "at most 200")

	// The other scopes still need a user.
	r = s.do(t, http.MethodGet, "/api/experiments?scope=owned", "", nil)
	expect(t, "owned, signed out", r, http.StatusUnauthorized, "")
	// An experiment's own answer carries the rendered description too.
	var one struct {
		DescriptionHTML string `json:"descriptionHtml"`
	}
	s.getJSON(t, "/api/experiments/"+hostile, &one)
	if one.DescriptionHTML != html {
		t.Errorf("GET /api/experiments/{eid} descriptionHtml = %q, want %q", one.DescriptionHTML, html)
	}
}
