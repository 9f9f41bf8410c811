package storetest

import (
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// publicIDs lists the whole public gallery matching search, pageSize at a
// time, checking the order within and across pages.
func publicIDs(t *testing.T, s store.Store, search string, pageSize int) []string {
	t.Helper()
	var ids []string
	var prev *store.Experiment
	q := store.PublicQuery{Search: search, Limit: pageSize}
	for page := 0; ; page++ {
		if page > 100 {
			t.Fatalf("ListPublicExperiments(%q, %d): more than 100 pages", search, pageSize)
		}
		list, err := s.ListPublicExperiments(ctx(t), q)
		must(t, "ListPublicExperiments", err)
		if len(list) > pageSize {
			t.Fatalf("ListPublicExperiments(%q): %d experiments, limit %d", search, len(list), pageSize)
		}
		for i := range list {
			e := &list[i]
			if e.Visibility != store.VisibilityPublic {
				t.Errorf("ListPublicExperiments(%q): %s is %s", search, e.ID, e.Visibility)
			}
			if prev != nil && (e.UpdateTime.After(prev.UpdateTime) || (e.UpdateTime.Equal(prev.UpdateTime) && e.ID <= prev.ID)) {
				t.Errorf("ListPublicExperiments(%q, %d): %s (%v) after %s (%v): want latest update first, then by id, each once",
					search, pageSize, e.ID, e.UpdateTime, prev.ID, prev.UpdateTime)
			}
			prev = e
			ids = append(ids, e.ID)
		}
		if len(list) < pageSize {
			return ids
		}
		last := list[len(list)-1]
		q.After = store.PublicCursor{UpdateTime: last.UpdateTime, ID: last.ID}
	}
}

// testListPublicExperiments checks the public gallery: public live
// experiments only (never unlisted, private or deleted ones), latest
// update first, in pages, searchable by name, description and the owner's
// public name (never the user name, an OIDC user's email).
func testListPublicExperiments(t *testing.T, s store.Store) {
	c := ctx(t)
	ada, bob := newUser(t, s, "ada.lovelace@uni.example"), newUser(t, s, "Bob")
	_, err := s.SetDisplayName(c, bob, "Bobby Tables")
	must(t, "SetDisplayName", err)
	create := func(owner, name, desc string, v store.Visibility) string {
		eid := store.NewExperimentID()
		must(t, "CreateExperiment", s.CreateExperiment(c, store.Experiment{ID: eid, Name: name, Description: desc, Owner: owner, Visibility: v}))
		return eid
	}
	resnet := create(ada, "ResNet sweep", "**bold** claims", store.VisibilityPublic)
	ecole := create(bob, "transformer", "Trained at the ÉCOLE", store.VisibilityPublic)
	gamma := create(bob, "gamma", "", store.VisibilityPublic)
	create(ada, "ResNet unlisted", "", store.VisibilityUnlisted)
	create(ada, "ResNet private", "", store.VisibilityPrivate)
	gone := create(ada, "ResNet deleted", "", store.VisibilityPublic)
	must(t, "DeleteExperiment", s.DeleteExperiment(c, gone))
	// A write makes resnet the latest updated.
	must(t, "WriteScalars", s.WriteScalars(c, resnet, []store.ScalarSeries{scalarSeries("r", "loss", 0, 1, 2, 3)}))

	all := publicIDs(t, s, "", store.MaxPublicPage)
	if !slices.Equal(all, []string{resnet, gamma, ecole}) && !slices.Equal(all, []string{resnet, ecole, gamma}) {
		t.Errorf("gallery = %v, want %v first, then %v and %v (unlisted, private and deleted left out)", all, resnet, gamma, ecole)
	}
	for _, size := range []int{1, 2} {
		if got := publicIDs(t, s, "", size); !slices.Equal(got, all) {
			t.Errorf("gallery in pages of %d = %v, want %v", size, got, all)
		}
	}
	list, err := s.ListPublicExperiments(c, store.PublicQuery{Limit: 1})
	must(t, "ListPublicExperiments", err)
	if len(list) != 1 || list[0].NumScalars != 3 || list[0].NumRuns != 1 || list[0].Description != "**bold** claims" || list[0].Owner != ada {
		t.Errorf("first page = %+v, want %s with its description, owner and counts (3 scalars, 1 run)", list, resnet)
	}

	for _, tc := range []struct {
		search string
		want   []string
	}{
		{"resnet", []string{resnet}},    // name; not the unlisted, private or deleted ResNets
		{"BOLD", []string{resnet}},      // description, any case
		{"école", []string{ecole}},      // beyond ASCII
		{"bob", []string{gamma, ecole}}, // owner's display name
		{"TABLES", []string{gamma, ecole}},
		{store.Handle(ada), []string{resnet}}, // owner's handle: no display name
		{"lovelace", nil},                     // never the user name
		{"uni.example", nil},                  // (an email's domain)
		{"a", all},
		{"no such thing", nil},
		{"%", nil}, // no wildcards
		{"_", nil},
	} {
		got := publicIDs(t, s, tc.search, 2)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("search %q = %v, want %v", tc.search, got, want)
		}
	}

	for _, limit := range []int{0, -1, store.MaxPublicPage + 1} {
		_, err := s.ListPublicExperiments(c, store.PublicQuery{Limit: limit})
		wantErr(t, "limit out of range", err, store.ErrInvalidArgument)
	}

	// Made unlisted, an experiment leaves the gallery; made public again, it
	// comes back at the top (the change is an update).
	unlisted := store.VisibilityUnlisted
	_, err = s.UpdateExperiment(c, gamma, store.ExperimentUpdate{Visibility: &unlisted})
	must(t, "UpdateExperiment", err)
	if got := publicIDs(t, s, "", 10); slices.Contains(got, gamma) || len(got) != 2 {
		t.Errorf("after making %s unlisted, gallery = %v", gamma, got)
	}
	public := store.VisibilityPublic
	_, err = s.UpdateExperiment(c, gamma, store.ExperimentUpdate{Visibility: &public})
	must(t, "UpdateExperiment", err)
	if got := publicIDs(t, s, "", 10); len(got) != 3 || got[0] != gamma {
		t.Errorf("after making %s public again, gallery = %v, want it first", gamma, got)
	}

	// A display name is searched as it is now: cleared, the handle is.
	_, err = s.SetDisplayName(c, bob, "")
	must(t, "SetDisplayName", err)
	if got := publicIDs(t, s, "tables", 10); len(got) != 0 {
		t.Errorf("after clearing the display name, search %q = %v, want none", "tables", got)
	}
	if got := publicIDs(t, s, store.Handle(bob), 10); len(got) != 2 {
		t.Errorf("after clearing the display name, search %q = %v, want %v and %v", store.Handle(bob), got, gamma, ecole)
	}
}
