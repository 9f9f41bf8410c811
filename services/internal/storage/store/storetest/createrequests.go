package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// testCreateRequests checks CreateExperimentOnce: a retried create request
// answers the experiment the first attempt made and creates nothing,
// however many attempts race; each user's request IDs are their own;
// records expire; and DeleteExpiredCreateRequests removes expired records
// only, never experiments.
func testCreateRequests(t *testing.T, s store.Store) {
	c := ctx(t)
	alice, bob := newUser(t, s, "alice"), newUser(t, s, "bob")
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	req := store.CreateRequest{ID: "req-1", Now: t0, Expire: t0.Add(time.Hour)}
	exp := func(owner string) store.Experiment {
		return store.Experiment{ID: store.NewExperimentID(), Name: "n", Owner: owner, Visibility: store.VisibilityPrivate}
	}
	count := func(owner string) int {
		t.Helper()
		n := 0
		must(t, "ListExperiments", s.ListExperiments(c, store.ExperimentFilter{Owner: owner}, func(store.Experiment) error { n++; return nil }))
		return n
	}

	first := exp(alice)
	got, err := s.CreateExperimentOnce(c, first, req)
	must(t, "CreateExperimentOnce", err)
	if got != first.ID {
		t.Fatalf("first attempt answered %q, want its experiment %q", got, first.ID)
	}
	if _, err := s.GetExperiment(c, first.ID); err != nil {
		t.Fatalf("GetExperiment of the created experiment: %v", err)
	}

	// The retry (the first answer was lost) picks a new ID, as a server
	// instance does, and gets the first experiment.
	retry := exp(alice)
	later := req
	later.Now = t0.Add(time.Minute)
	got, err = s.CreateExperimentOnce(c, retry, later)
	must(t, "CreateExperimentOnce retried", err)
	if got != first.ID {
		t.Errorf("retry answered %q, want the first attempt's %q", got, first.ID)
	}
	wantErr(t, "the retry's own experiment", func() error { _, err := s.GetExperiment(c, retry.ID); return err }(), store.ErrNotFound)
	if n := count(alice); n != 1 {
		t.Errorf("alice has %d experiments after a retried create, want 1", n)
	}
	if got, err := s.CreatedBy(c, alice, req.ID, later.Now); err != nil || got != first.ID {
		t.Errorf("CreatedBy(alice) = %q, %v; want %q", got, err, first.ID)
	}

	// Another user's equal request ID is another request.
	wantErr(t, "CreatedBy(bob) before bob's create", func() error { _, err := s.CreatedBy(c, bob, req.ID, t0); return err }(), store.ErrNotFound)
	bobs := exp(bob)
	if got, err := s.CreateExperimentOnce(c, bobs, req); err != nil || got != bobs.ID {
		t.Errorf("bob's create with alice's request ID = %q, %v; want his own %q", got, err, bobs.ID)
	}

	// Attempts racing (instances serving the same retried request) make one
	// experiment and all answer it.
	racer := newUser(t, s, "racer")
	var wg sync.WaitGroup
	answers := make([]string, 6)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := s.CreateExperimentOnce(c, exp(racer), store.CreateRequest{ID: "race", Now: t0, Expire: t0.Add(time.Hour)})
			if err != nil {
				t.Errorf("racing CreateExperimentOnce: %v", err)
			}
			answers[i] = id
		}()
	}
	wg.Wait()
	for _, a := range answers[1:] {
		if a != answers[0] {
			t.Errorf("racing attempts answered %q, want one experiment", answers)
			break
		}
	}
	if n := count(racer); n != 1 {
		t.Errorf("racer has %d experiments after racing attempts, want 1", n)
	}

	// Bad input fails and records nothing.
	wantErr(t, "empty request id", func() error {
		_, err := s.CreateExperimentOnce(c, exp(alice), store.CreateRequest{Now: t0, Expire: t0.Add(time.Hour)})
		return err
	}(), store.ErrInvalidArgument)
	wantErr(t, "request id with a space", func() error {
		_, err := s.CreateExperimentOnce(c, exp(alice), store.CreateRequest{ID: "a b", Now: t0, Expire: t0.Add(time.Hour)})
		return err
	}(), store.ErrInvalidArgument)
	wantErr(t, "expiry not after now", func() error {
		_, err := s.CreateExperimentOnce(c, exp(alice), store.CreateRequest{ID: "r", Now: t0, Expire: t0})
		return err
	}(), store.ErrInvalidArgument)
	wantErr(t, "unknown owner", func() error {
		_, err := s.CreateExperimentOnce(c, exp("u-nobody"), store.CreateRequest{ID: "r", Now: t0, Expire: t0.Add(time.Hour)})
		return err
	}(), store.ErrNotFound)
	wantErr(t, "no record of the unknown owner's request", func() error { _, err := s.CreatedBy(c, "u-nobody", "r", t0); return err }(), store.ErrNotFound)
	taken := first
	wantErr(t, "an experiment ID in use", func() error {
		_, err := s.CreateExperimentOnce(c, taken, store.CreateRequest{ID: "taken", Now: t0, Expire: t0.Add(time.Hour)})
		return err
	}(), store.ErrAlreadyExists)
	wantErr(t, "no record of the failed create", func() error { _, err := s.CreatedBy(c, alice, "taken", t0); return err }(), store.ErrNotFound)
	if n := count(alice); n != 1 {
		t.Errorf("alice has %d experiments after failed creates, want 1", n)
	}

	// Once expired, the record is forgotten: the same ID creates anew.
	expired := store.CreateRequest{ID: req.ID, Now: req.Expire, Expire: req.Expire.Add(time.Hour)}
	wantErr(t, "CreatedBy at the expiry", func() error { _, err := s.CreatedBy(c, alice, req.ID, expired.Now); return err }(), store.ErrNotFound)
	fresh := exp(alice)
	if got, err := s.CreateExperimentOnce(c, fresh, expired); err != nil || got != fresh.ID {
		t.Errorf("create after the record expired = %q, %v; want the new %q", got, err, fresh.ID)
	}
	if got, err := s.CreatedBy(c, alice, req.ID, expired.Now); err != nil || got != fresh.ID {
		t.Errorf("CreatedBy after the replacement = %q, %v; want %q", got, err, fresh.ID)
	}

	// At t0+1h bob's and racer's records have expired, alice's new one has
	// not; the sweep removes the two, in pages, and no experiment.
	n1, err := s.DeleteExpiredCreateRequests(c, expired.Now, 1)
	must(t, "DeleteExpiredCreateRequests", err)
	n2, err := s.DeleteExpiredCreateRequests(c, expired.Now, 10)
	must(t, "DeleteExpiredCreateRequests", err)
	if n1 != 1 || n2 != 1 {
		t.Errorf("DeleteExpiredCreateRequests removed %d then %d, want 1 then 1", n1, n2)
	}
	wantErr(t, "CreatedBy(bob) after the sweep", func() error { _, err := s.CreatedBy(c, bob, req.ID, t0); return err }(), store.ErrNotFound)
	if got, err := s.CreatedBy(c, alice, req.ID, expired.Now); err != nil || got != fresh.ID {
		t.Errorf("CreatedBy(alice) after the sweep = %q, %v; want the live record's %q", got, err, fresh.ID)
	}
	for _, eid := range []string{first.ID, bobs.ID, answers[0], fresh.ID} {
		if _, err := s.GetExperiment(c, eid); err != nil {
			t.Errorf("experiment %s after the sweep: %v", eid, err)
		}
	}
}
