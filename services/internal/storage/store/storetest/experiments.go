package storetest

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func testUsers(t *testing.T, s store.Store) {
	c := ctx(t)
	must(t, "CreateUser", s.CreateUser(c, store.User{ID: "u1", Name: "ada"}))
	wantErr(t, "same id", s.CreateUser(c, store.User{ID: "u1", Name: "bob"}), store.ErrAlreadyExists)
	wantErr(t, "same name", s.CreateUser(c, store.User{ID: "u2", Name: "ada"}), store.ErrAlreadyExists)
	wantErr(t, "empty id", s.CreateUser(c, store.User{Name: "x"}), store.ErrInvalidArgument)
	wantErr(t, "empty name", s.CreateUser(c, store.User{ID: "x"}), store.ErrInvalidArgument)

	u, err := s.GetUser(c, "u1")
	must(t, "GetUser", err)
	if u.ID != "u1" || u.Name != "ada" || u.CreateTime.IsZero() {
		t.Errorf("GetUser = %+v, want u1/ada with a create time", u)
	}
	u2, err := s.GetUserByName(c, "ada")
	must(t, "GetUserByName", err)
	if u2 != u {
		t.Errorf("GetUserByName = %+v, want %+v", u2, u)
	}
	_, err = s.GetUser(c, "nobody")
	wantErr(t, "GetUser unknown", err, store.ErrNotFound)
	_, err = s.GetUserByName(c, "nobody")
	wantErr(t, "GetUserByName unknown", err, store.ErrNotFound)

	// A display name is kept apart from the (unique) user name: two users
	// may choose the same one, and clearing it goes back to the handle.
	if u.DisplayName != "" || u.PublicName() != store.Handle("u1") {
		t.Errorf("new user %+v: public name %q, want the handle %q", u, u.PublicName(), store.Handle("u1"))
	}
	for _, id := range []string{"u1", "u3"} {
		if id == "u3" {
			must(t, "CreateUser", s.CreateUser(c, store.User{ID: "u3", Name: "ada@example.com", DisplayName: "Ada L."}))
		}
		set, err := s.SetDisplayName(c, id, "Ada L.")
		must(t, "SetDisplayName", err)
		got, err := s.GetUser(c, id)
		must(t, "GetUser", err)
		if set.ID != id || set.DisplayName != "Ada L." || got != set || got.PublicName() != "Ada L." {
			t.Errorf("after SetDisplayName(%s): returned %+v, GetUser %+v, want display name Ada L.", id, set, got)
		}
	}
	cleared, err := s.SetDisplayName(c, "u1", "")
	must(t, "SetDisplayName", err)
	if got, _ := s.GetUserByName(c, "ada"); cleared.DisplayName != "" || got != cleared || got.PublicName() != store.Handle("u1") {
		t.Errorf("after clearing: returned %+v, GetUserByName %+v, want no display name", cleared, got)
	}
	_, err = s.SetDisplayName(c, "nobody", "x")
	wantErr(t, "SetDisplayName unknown", err, store.ErrNotFound)
}

func testExperiments(t *testing.T, s store.Store) {
	c := ctx(t)
	owner := newUser(t, s, "owner")
	eid := store.NewExperimentID()
	e := store.Experiment{ID: eid, Name: "mnist", Description: "# notes", Owner: owner, Visibility: store.VisibilityUnlisted}

	bad := e
	bad.ID = "short"
	wantErr(t, "bad id", s.CreateExperiment(c, bad), store.ErrInvalidArgument)
	bad = e
	bad.Visibility = "secret"
	wantErr(t, "bad visibility", s.CreateExperiment(c, bad), store.ErrInvalidArgument)
	bad = e
	bad.Owner = "u-nobody"
	wantErr(t, "unknown owner", s.CreateExperiment(c, bad), store.ErrNotFound)

	must(t, "CreateExperiment", s.CreateExperiment(c, e))
	wantErr(t, "same id again", s.CreateExperiment(c, e), store.ErrAlreadyExists)

	got, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if got.ID != eid || got.Name != e.Name || got.Description != e.Description || got.Owner != owner ||
		got.Visibility != store.VisibilityUnlisted || got.CreateTime.IsZero() || got.UpdateTime.Before(got.CreateTime) {
		t.Errorf("GetExperiment = %+v, want the created fields and times", got)
	}
	if got.NumRuns != 0 || got.NumTags != 0 || got.NumScalars != 0 || got.TotalBlobBytes != 0 || len(got.Readers) != 0 {
		t.Errorf("new experiment has counts or readers: %+v", got)
	}
	_, err = s.GetExperiment(c, store.NewExperimentID())
	wantErr(t, "GetExperiment unknown", err, store.ErrNotFound)

	upd, err := s.UpdateExperiment(c, eid, store.ExperimentUpdate{Description: ptr("new"), Visibility: ptr(store.VisibilityPublic)})
	must(t, "UpdateExperiment", err)
	if upd.Name != "mnist" || upd.Description != "new" || upd.Visibility != store.VisibilityPublic || upd.UpdateTime.Before(got.UpdateTime) {
		t.Errorf("UpdateExperiment = %+v, want name kept, description and visibility changed", upd)
	}
	again, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment after update", err)
	if again.Description != "new" || again.Visibility != store.VisibilityPublic || again.Name != "mnist" {
		t.Errorf("update not stored: %+v", again)
	}
	_, err = s.UpdateExperiment(c, eid, store.ExperimentUpdate{Visibility: ptr(store.Visibility("nope"))})
	wantErr(t, "update to bad visibility", err, store.ErrInvalidArgument)
	_, err = s.UpdateExperiment(c, store.NewExperimentID(), store.ExperimentUpdate{Name: ptr("x")})
	wantErr(t, "update unknown", err, store.ErrNotFound)
}

// testDamagedRecords: what the uploader reports it skipped as damaged is
// kept with the experiment, replaced by the next report, and read back by
// GetExperiment and ListExperiments; other updates leave it alone.
func testDamagedRecords(t *testing.T, s store.Store) {
	c := ctx(t)
	owner := newUser(t, s, "owner")
	eid := store.NewExperimentID()
	must(t, "CreateExperiment", s.CreateExperiment(c, store.Experiment{ID: eid, Owner: owner, Visibility: store.VisibilityPrivate}))
	got, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if !reflect.DeepEqual(got.Damaged, store.Damage{}) {
		t.Errorf("new experiment: Damaged = %+v, want none", got.Damaged)
	}
	first := store.Damage{Records: 3, NumFiles: 2, Files: []string{"damaged/bad_crc/events.out.tfevents.1", "./événements \"quoted\".tfevents"}}
	upd, err := s.UpdateExperiment(c, eid, store.ExperimentUpdate{Damaged: &first})
	must(t, "UpdateExperiment", err)
	if !reflect.DeepEqual(upd.Damaged, first) {
		t.Errorf("UpdateExperiment returned Damaged %+v, want %+v", upd.Damaged, first)
	}
	// Renaming keeps it.
	_, err = s.UpdateExperiment(c, eid, store.ExperimentUpdate{Name: ptr("renamed")})
	must(t, "UpdateExperiment name", err)
	got, err = s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if !reflect.DeepEqual(got.Damaged, first) || got.Name != "renamed" {
		t.Errorf("after a rename: %q, Damaged %+v, want %+v", got.Name, got.Damaged, first)
	}
	// The next report replaces it, files and all (none: only counts).
	next := store.Damage{Records: 5000, NumFiles: 150}
	_, err = s.UpdateExperiment(c, eid, store.ExperimentUpdate{Damaged: &next})
	must(t, "UpdateExperiment", err)
	var list []store.Experiment
	must(t, "ListExperiments", s.ListExperiments(c, store.ExperimentFilter{Owner: owner}, func(e store.Experiment) error {
		list = append(list, e)
		return nil
	}))
	if len(list) != 1 || !reflect.DeepEqual(list[0].Damaged, next) {
		t.Errorf("ListExperiments = %+v, want one experiment with Damaged %+v", list, next)
	}
}

func listIDs(t *testing.T, s store.Store, f store.ExperimentFilter) []string {
	t.Helper()
	var ids []string
	var prev *store.Experiment
	err := s.ListExperiments(ctx(t), f, func(e store.Experiment) error {
		if prev != nil && (e.CreateTime.After(prev.CreateTime) || (e.CreateTime.Equal(prev.CreateTime) && e.ID < prev.ID)) {
			t.Errorf("ListExperiments: %s (%v) after %s (%v): want newest first, then by id", e.ID, e.CreateTime, prev.ID, prev.CreateTime)
		}
		prev = &e
		ids = append(ids, e.ID)
		return nil
	})
	must(t, "ListExperiments", err)
	sort.Strings(ids)
	return ids
}

func testListExperiments(t *testing.T, s store.Store) {
	c := ctx(t)
	ada, bob := newUser(t, s, "ada"), newUser(t, s, "bob")
	byVis := map[store.Visibility][]string{}
	var adas, everyone []string
	for i, v := range []store.Visibility{store.VisibilityPrivate, store.VisibilityPublic, store.VisibilityUnlisted, store.VisibilityPublic} {
		owner := ada
		if i%2 == 1 {
			owner = bob
		}
		eid := store.NewExperimentID()
		must(t, "CreateExperiment", s.CreateExperiment(c, store.Experiment{ID: eid, Owner: owner, Visibility: v}))
		byVis[v] = append(byVis[v], eid)
		everyone = append(everyone, eid)
		if owner == ada {
			adas = append(adas, eid)
		}
	}
	sort.Strings(adas)
	sort.Strings(everyone)
	pub := slices.Sorted(slices.Values(byVis[store.VisibilityPublic]))
	for _, tc := range []struct {
		name string
		f    store.ExperimentFilter
		want []string
	}{
		{"all", store.ExperimentFilter{}, everyone},
		{"owner", store.ExperimentFilter{Owner: ada}, adas},
		{"public", store.ExperimentFilter{Visibilities: []store.Visibility{store.VisibilityPublic}}, pub},
		{"no visibility", store.ExperimentFilter{Visibilities: []store.Visibility{}}, nil},
		{"bob public", store.ExperimentFilter{Owner: bob, Visibilities: []store.Visibility{store.VisibilityPublic}}, pub},
		{"unknown owner", store.ExperimentFilter{Owner: "u-nobody"}, nil},
	} {
		if got := listIDs(t, s, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	// The visitor's error stops the listing and comes back.
	stop := context.Canceled
	n := 0
	err := s.ListExperiments(c, store.ExperimentFilter{}, func(store.Experiment) error { n++; return stop })
	wantErr(t, "visitor error", err, stop)
	if n != 1 {
		t.Errorf("visitor called %d times after returning an error, want 1", n)
	}
}

func testReadGrants(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	zed, amy := newUser(t, s, "zed"), newUser(t, s, "amy")
	must(t, "GrantRead zed", s.GrantRead(c, eid, zed))
	must(t, "GrantRead amy", s.GrantRead(c, eid, amy))
	must(t, "GrantRead amy again", s.GrantRead(c, eid, amy))
	wantErr(t, "grant to unknown user", s.GrantRead(c, eid, "u-nobody"), store.ErrNotFound)
	wantErr(t, "grant on unknown experiment", s.GrantRead(c, store.NewExperimentID(), amy), store.ErrNotFound)
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if want := []string{amy, zed}; !slices.Equal(e.Readers, want) {
		t.Errorf("Readers = %v, want %v", e.Readers, want)
	}
	must(t, "RevokeRead", s.RevokeRead(c, eid, zed))
	must(t, "RevokeRead again", s.RevokeRead(c, eid, zed))
	e, err = s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if want := []string{amy}; !slices.Equal(e.Readers, want) {
		t.Errorf("Readers after revoke = %v, want %v", e.Readers, want)
	}
}

// testDelete checks that a deleted experiment is gone for every method at
// once, and that other experiments are untouched.
func testDelete(t *testing.T, s store.Store) {
	c := ctx(t)
	eid, other := newExperiment(t, s), newExperiment(t, s)
	for _, id := range []string{eid, other} {
		must(t, "WriteScalars", s.WriteScalars(c, id, []store.ScalarSeries{scalarSeries("r", "loss", 0, 1, 2, 3)}))
		_, _, err := s.GetOrCreateBlobSequence(c, id, store.TimeSeries{Run: "r", Tag: "img"}, 1, 1, 1)
		must(t, "GetOrCreateBlobSequence", err)
	}
	must(t, "DeleteExperiment", s.DeleteExperiment(c, eid))
	wantErr(t, "delete again", s.DeleteExperiment(c, eid), store.ErrNotFound)

	_, err := s.GetExperiment(c, eid)
	wantErr(t, "GetExperiment", err, store.ErrNotFound)
	_, err = s.ListRuns(c, eid)
	wantErr(t, "ListRuns", err, store.ErrNotFound)
	_, err = s.ListPlugins(c, eid)
	wantErr(t, "ListPlugins", err, store.ErrNotFound)
	_, err = s.ListSeries(c, eid, store.DataClassUnknown, store.Filter{})
	wantErr(t, "ListSeries", err, store.ErrNotFound)
	wantErr(t, "ReadScalars", s.ReadScalars(c, eid, all(store.Filter{}), func(*store.TimeSeries, []store.ScalarPoint) error { return nil }), store.ErrNotFound)
	wantErr(t, "ReadTensors", s.ReadTensors(c, eid, all(store.Filter{}), func(*store.TimeSeries, []store.TensorPoint) error { return nil }), store.ErrNotFound)
	wantErr(t, "ReadBlobSequences", s.ReadBlobSequences(c, eid, all(store.Filter{}), func(*store.TimeSeries, []store.BlobSequencePoint) error { return nil }), store.ErrNotFound)
	_, err = s.GetBlob(c, eid, store.BlobRef{Run: "r", Tag: "img", Step: 1})
	wantErr(t, "GetBlob", err, store.ErrNotFound)
	wantErr(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("r", "loss", 0, 4)}), store.ErrNotFound)
	wantErr(t, "WriteTensors", s.WriteTensors(c, eid, []store.TensorSeries{{Series: store.TimeSeries{Run: "r", Tag: "t"}, Points: []store.TensorPoint{{Step: 1}}}}), store.ErrNotFound)
	_, _, err = s.GetOrCreateBlobSequence(c, eid, store.TimeSeries{Run: "r", Tag: "img"}, 2, 1, 1)
	wantErr(t, "GetOrCreateBlobSequence", err, store.ErrNotFound)
	wantErr(t, "PutBlob", s.PutBlob(c, eid, store.BlobRef{Run: "r", Tag: "img", Step: 1}, store.Blob{ObjectKey: "k", State: store.BlobStateCurrent}), store.ErrNotFound)
	_, err = s.UpdateExperiment(c, eid, store.ExperimentUpdate{Name: ptr("x")})
	wantErr(t, "UpdateExperiment", err, store.ErrNotFound)
	wantErr(t, "GrantRead", s.GrantRead(c, eid, "u-x"), store.ErrNotFound)
	if ids := listIDs(t, s, store.ExperimentFilter{}); slices.Contains(ids, eid) || !slices.Contains(ids, other) {
		t.Errorf("ListExperiments after delete = %v, want %s only", ids, other)
	}

	if got := readScalars(t, s, other, all(store.Filter{})); len(got) != 1 || len(got[0].Points) != 3 {
		t.Errorf("the other experiment lost data: %+v", got)
	}
}

func testSweep(t *testing.T, s store.Store) {
	c := ctx(t)
	eid, other := newExperiment(t, s), newExperiment(t, s)
	keys := map[string][]string{}
	for _, id := range []string{eid, other} {
		must(t, "WriteScalars", s.WriteScalars(c, id, []store.ScalarSeries{scalarSeries("r", "loss", 0, 1, 2)}))
		must(t, "WriteTensors", s.WriteTensors(c, id, []store.TensorSeries{{Series: store.TimeSeries{Run: "r", Tag: "h"}, Points: []store.TensorPoint{{Step: 1, Tensor: []byte{1}}}}}))
		for step := range int64(2) {
			_, _, err := s.GetOrCreateBlobSequence(c, id, store.TimeSeries{Run: "r", Tag: "img"}, step, 1, 2)
			must(t, "GetOrCreateBlobSequence", err)
			for idx := range int64(2) {
				key := "experiments/" + id + "/" + string(rune('a'+step)) + string(rune('0'+idx))
				state := store.BlobStateCurrent
				if idx == 1 {
					state = store.BlobStateUnfinalized
				}
				must(t, "PutBlob", s.PutBlob(c, id, store.BlobRef{Run: "r", Tag: "img", Step: step, Index: idx},
					store.Blob{ObjectKey: key, Size: 3, State: state}))
				keys[id] = append(keys[id], key)
			}
		}
	}

	wantErr(t, "ListObjectKeys of a live experiment", s.ListObjectKeys(c, other, func(string) error { return nil }), store.ErrFailedPrecondition)
	wantErr(t, "PurgeExperiment of a live experiment", s.PurgeExperiment(c, other), store.ErrFailedPrecondition)
	must(t, "PurgeExperiment of an unknown id", s.PurgeExperiment(c, store.NewExperimentID()))

	must(t, "DeleteExperiment", s.DeleteExperiment(c, eid))
	deleted, err := s.ListDeletedExperiments(c, 10)
	must(t, "ListDeletedExperiments", err)
	if !slices.Equal(deleted, []string{eid}) {
		t.Errorf("ListDeletedExperiments = %v, want [%s]", deleted, eid)
	}

	// A failing object deletion stops the sweep before the rows go, so the
	// next sweep finds the experiment again.
	boom := context.DeadlineExceeded
	n, err := store.Sweep(c, s, func(context.Context, string) error { return boom }, 10)
	wantErr(t, "Sweep with failing deletes", err, boom)
	if n != 0 {
		t.Errorf("Sweep with failing deletes purged %d", n)
	}

	var removed []string
	n, err = store.Sweep(c, s, func(_ context.Context, key string) error {
		removed = append(removed, key)
		return nil
	}, 10)
	must(t, "Sweep", err)
	if n != 1 {
		t.Errorf("Sweep purged %d experiments, want 1", n)
	}
	slices.Sort(removed)
	if want := slices.Sorted(slices.Values(keys[eid])); !slices.Equal(removed, want) {
		t.Errorf("Sweep deleted objects %v, want %v", removed, want)
	}
	deleted, err = s.ListDeletedExperiments(c, 10)
	must(t, "ListDeletedExperiments after sweep", err)
	if len(deleted) != 0 {
		t.Errorf("ListDeletedExperiments after sweep = %v, want none", deleted)
	}
	n, err = store.Sweep(c, s, func(context.Context, string) error { return nil }, 10)
	if err != nil || n != 0 {
		t.Errorf("second Sweep = %d, %v; want 0, nil", n, err)
	}
	// The experiment ID is free again and the other experiment is intact.
	owner := newUser(t, s, "reuser")
	must(t, "CreateExperiment with a purged id", s.CreateExperiment(c, store.Experiment{ID: eid, Owner: owner, Visibility: store.VisibilityPrivate}))
	if got := readScalars(t, s, eid, all(store.Filter{})); len(got) != 0 {
		t.Errorf("recreated experiment has old data: %+v", got)
	}
	e, err := s.GetExperiment(c, other)
	must(t, "GetExperiment other", err)
	if e.NumScalars != 2 || e.NumTensors != 1 || e.NumBlobs != 2 || e.TotalBlobBytes != 6 {
		t.Errorf("other experiment's counts changed: %+v", e)
	}
}

// PastStoreTime returns a time after every row written so far, taken from
// the store's own write times (latest, the latest it reported), and waits
// until this process's clock has passed it too. Rows written after the call
// are then written after it, whichever clock the store stamps them with: a
// store of this process's clock stamps them later than now, and Spanner's
// commit timestamps (microseconds, each transaction later than the ones
// committed before it) are at least latest plus a microsecond, although on
// the emulator they run milliseconds ahead of this process's clock. A
// cutoff taken from time.Now alone would be before the last rows there.
func PastStoreTime(t *testing.T, latest time.Time) time.Time {
	t.Helper()
	at := latest.Add(time.Microsecond)
	// Wall clock readings: the store's times carry no monotonic reading.
	for deadline := time.Now().Add(time.Minute); !time.Now().Round(0).After(at); {
		if time.Now().After(deadline) {
			t.Fatalf("the clock did not pass %v", at)
		}
		time.Sleep(time.Millisecond)
	}
	return at
}

// testAbandonedBlobs: unfinished blobs whose row was last written before a
// time are listed oldest first and removed, rows and objects, releasing
// their bytes from the owner's usage; a blob rewritten since (a resumed
// upload), finished, or of a deleted experiment is kept.
func testAbandonedBlobs(t *testing.T, s store.Store) {
	c := ctx(t)
	owner := newUser(t, s, "abandoner")
	eids := ownedExperiments(t, s, owner, 3)
	a, b, gone := eids[0], eids[1], eids[2]
	before := time.Now().Add(-time.Minute)
	ref := func(i int64) store.BlobRef { return store.BlobRef{Run: "r", Tag: "img", Step: 1, Index: i} }
	put := func(eid string, i int64, size int64, state store.BlobState) {
		t.Helper()
		must(t, "PutBlob", s.PutBlob(c, eid, ref(i), store.Blob{Index: i, ObjectKey: eid + "/" + string(rune('0'+i)), Size: size, State: state}))
	}
	for _, eid := range eids {
		_, _, err := s.GetOrCreateBlobSequence(c, eid, store.TimeSeries{Run: "r", Tag: "img"}, 1, 1, 3)
		must(t, "GetOrCreateBlobSequence", err)
	}
	put(a, 0, 100, store.BlobStateCurrent)
	put(a, 1, 10, store.BlobStateUnfinalized)
	put(a, 2, 20, store.BlobStateUnfinalized)
	put(b, 0, 30, store.BlobStateUnfinalized)
	put(b, 1, 5, store.BlobStateUnfinalized)
	put(gone, 0, 40, store.BlobStateUnfinalized)
	must(t, "DeleteExperiment", s.DeleteExperiment(c, gone))

	if got, err := s.ListAbandonedBlobs(c, before, 10); err != nil || len(got) != 0 {
		t.Errorf("ListAbandonedBlobs before the writes = %+v, %v; want none", got, err)
	}
	// The rows' write times are the store's clock's, so the cutoff is
	// taken from them (PastStoreTime).
	all, err := s.ListAbandonedBlobs(c, time.Now().Add(24*time.Hour), 10)
	must(t, "ListAbandonedBlobs", err)
	if len(all) == 0 {
		t.Fatal("ListAbandonedBlobs a day ahead found no blob")
	}
	cutoff := PastStoreTime(t, all[len(all)-1].WriteTime)
	got, err := s.ListAbandonedBlobs(c, cutoff, 10)
	must(t, "ListAbandonedBlobs", err)
	var keys []string
	for i, g := range got {
		keys = append(keys, g.ObjectKey)
		if g.ObjectKey != g.Experiment+"/"+string(rune('0'+g.Ref.Index)) || g.Ref.Run != "r" || g.Ref.Tag != "img" || g.Ref.Step != 1 {
			t.Errorf("abandoned blob %+v: experiment or key wrong", g)
		}
		if g.WriteTime.Before(before) || !g.WriteTime.Before(cutoff) || (i > 0 && g.WriteTime.Before(got[i-1].WriteTime)) {
			t.Errorf("abandoned blob %d written %v: want between %v and %v, oldest first", i, g.WriteTime, before, cutoff)
		}
	}
	if want := []string{a + "/1", a + "/2", b + "/0", b + "/1"}; !slices.Equal(keys, want) {
		t.Errorf("ListAbandonedBlobs = %v, want %v (oldest first)", keys, want)
	}
	if got, err := s.ListAbandonedBlobs(c, cutoff, 1); err != nil || len(got) != 1 {
		t.Errorf("ListAbandonedBlobs limited to 1 = %+v, %v", got, err)
	}
	usage, err := s.UserUsage(c, owner)
	must(t, "UserUsage", err)
	if usage.BlobBytes != 165 {
		t.Errorf("UserUsage.BlobBytes = %d, want 165 (a current blob and four unfinished)", usage.BlobBytes)
	}

	// A stream resumed a's blob 2 after the cutoff: it rewrote the row.
	// b's blob was finished. Neither is removed.
	put(a, 2, 25, store.BlobStateUnfinalized)
	put(b, 0, 30, store.BlobStateCurrent)
	for _, r := range []struct {
		eid string
		i   int64
	}{{a, 2}, {b, 0}, {a, 0}, {gone, 0}, {store.NewExperimentID(), 0}} {
		if deleted, err := s.DeleteAbandonedBlob(c, r.eid, ref(r.i), cutoff); err != nil || deleted {
			t.Errorf("DeleteAbandonedBlob(blob %d, rewritten, finished, of a deleted or unknown experiment) = %v, %v; want false, nil", r.i, deleted, err)
		}
	}
	if deleted, err := s.DeleteAbandonedBlob(c, a, store.BlobRef{Run: "r", Tag: "none", Step: 1}, cutoff); err != nil || deleted {
		t.Errorf("DeleteAbandonedBlob of a missing series = %v, %v; want false, nil", deleted, err)
	}

	// A blob claimed elsewhere (a stream of the sweeping process) is
	// skipped; the claims granted are released.
	var removed []string
	var claims []string
	n, err := store.SweepAbandonedBlobs(c, s, func(_ context.Context, ab store.AbandonedBlob) error {
		removed = append(removed, ab.ObjectKey)
		return nil
	}, func(ab store.AbandonedBlob) (func(), bool) {
		if ab.ObjectKey == b+"/1" {
			return nil, false
		}
		claims = append(claims, ab.ObjectKey)
		return func() { claims = slices.DeleteFunc(claims, func(k string) bool { return k == ab.ObjectKey }) }, true
	}, cutoff, 10)
	must(t, "SweepAbandonedBlobs", err)
	if len(claims) != 0 {
		t.Errorf("claims not released: %v", claims)
	}
	if n != 1 || !slices.Equal(removed, []string{a + "/1"}) {
		t.Errorf("SweepAbandonedBlobs removed %d, objects %v; want 1, [%s/1]", n, removed, a)
	}
	_, err = s.GetBlob(c, a, ref(1))
	wantErr(t, "GetBlob of the swept blob", err, store.ErrNotFound)
	for _, r := range []struct {
		eid   string
		i     int64
		state store.BlobState
		size  int64
	}{{a, 0, store.BlobStateCurrent, 100}, {a, 2, store.BlobStateUnfinalized, 25}, {b, 0, store.BlobStateCurrent, 30}} {
		if bl, err := s.GetBlob(c, r.eid, ref(r.i)); err != nil || bl.State != r.state || bl.Size != r.size {
			t.Errorf("GetBlob(%s/%d) after the sweep = %+v, %v; want state %v, %d bytes", r.eid, r.i, bl, err, r.state, r.size)
		}
	}
	usage, err = s.UserUsage(c, owner)
	must(t, "UserUsage", err)
	if usage.BlobBytes != 160 {
		t.Errorf("UserUsage.BlobBytes after the sweep = %d, want 160: the swept blob's 10 bytes released", usage.BlobBytes)
	}
	// Unclaimed, the blob skipped goes too; then there is nothing left.
	for _, want := range []int{1, 0} {
		if n, err := store.SweepAbandonedBlobs(c, s, func(context.Context, store.AbandonedBlob) error { return nil }, nil, cutoff, 10); err != nil || n != want {
			t.Errorf("next SweepAbandonedBlobs = %d, %v; want %d, nil", n, err, want)
		}
	}
}
