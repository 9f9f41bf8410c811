package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// IdentityBackend is a store that also keeps identities and answers the
// access check's light experiment read.
type IdentityBackend interface {
	store.Store
	store.IdentityStore
	store.AccessReader
}

// RunIdentity is the conformance suite of store.IdentityStore, run like Run.
func RunIdentity(t *testing.T, newStore func(t *testing.T) IdentityBackend) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s IdentityBackend)
	}{
		{"OIDCUsers", testOIDCUsers},
		{"APITokens", testAPITokens},
		{"TokenFamilies", testTokenFamilies},
		{"TokenUsage", testTokenUsage},
		{"Usage", testUsage},
		{"PendingGrants", testPendingGrants},
		{"RunAndGrantUsage", testRunAndGrantUsage},
		{"TokenAndPendingGrantCaps", testTokenAndPendingGrantCaps},
		{"ExperimentAccess", testExperimentAccess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func testOIDCUsers(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	const iss = "https://issuer.example"
	u, err := s.GetOrCreateOIDCUser(ctx, iss, "sub-1", "ada@example.com", "u-ada")
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != "u-ada" || u.Name != "ada@example.com" {
		t.Errorf("new OIDC user = %+v, want id u-ada named by email", u)
	}
	// The same identity is the same user, whatever ID is offered.
	again, err := s.GetOrCreateOIDCUser(ctx, iss, "sub-1", "ada@new.example", "u-other")
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != "u-ada" {
		t.Errorf("second sign-in gave user %q, want u-ada", again.ID)
	}
	id, err := s.GetOIDCIdentity(ctx, "u-ada")
	if err != nil {
		t.Fatal(err)
	}
	if id != (store.OIDCIdentity{Issuer: iss, Subject: "sub-1", UserID: "u-ada", Email: "ada@new.example"}) {
		t.Errorf("identity = %+v, want email refreshed", id)
	}
	// The lookup that writes nothing finds the same user, and no other.
	if got, err := s.GetOIDCUser(ctx, iss, "sub-1"); err != nil || got.ID != "u-ada" || got.Name != "ada@example.com" {
		t.Errorf("GetOIDCUser = %+v, %v, want u-ada", got, err)
	}
	if _, err := s.GetOIDCUser(ctx, iss, "sub-unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetOIDCUser of an unknown subject: %v, want ErrNotFound", err)
	}
	// Another subject with a taken email still gets its own user.
	if err := s.CreateUser(ctx, store.User{ID: "u-local", Name: "bob@example.com"}); err != nil {
		t.Fatal(err)
	}
	bob, err := s.GetOrCreateOIDCUser(ctx, iss, "sub-2", "bob@example.com", "u-bob")
	if err != nil {
		t.Fatal(err)
	}
	if bob.ID != "u-bob" || bob.Name == "bob@example.com" {
		t.Errorf("OIDC user with a taken name = %+v, want its own id and another name", bob)
	}
	// Same subject at another issuer is another user.
	other, err := s.GetOrCreateOIDCUser(ctx, "https://other.example", "sub-1", "", "u-x")
	if err != nil {
		t.Fatal(err)
	}
	if other.ID != "u-x" {
		t.Errorf("same subject, other issuer: user %q, want u-x", other.ID)
	}
	if _, err := s.GetOIDCIdentity(ctx, "u-local"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetOIDCIdentity(local user) = %v, want ErrNotFound", err)
	}
	if _, err := s.GetOrCreateOIDCUser(ctx, "", "s", "", "u-y"); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("GetOrCreateOIDCUser without issuer = %v, want ErrInvalidArgument", err)
	}
}

func testAPITokens(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	u1, u2 := newUser(t, s, "1"), newUser(t, s, "2")
	expire := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tok := store.APIToken{
		ID: "tok1", UserID: u1, Name: "laptop", Scopes: store.ScopeRead,
		Hash: store.HashTokenSecret("secret-1"), SecretPrefix: "tbh_abcd", ExpireTime: expire,
	}
	created, err := s.CreateAPIToken(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if created.CreateTime.IsZero() {
		t.Error("CreateAPIToken did not set CreateTime")
	}
	got, err := s.GetAPITokenByHash(ctx, store.HashTokenSecret("secret-1"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "tok1" || got.UserID != u1 || got.Name != "laptop" || got.Scopes != store.ScopeRead ||
		got.SecretPrefix != "tbh_abcd" || !got.ExpireTime.Equal(expire) || !got.LastUseTime.IsZero() || !got.RevokeTime.IsZero() {
		t.Errorf("GetAPITokenByHash = %+v, want what was created", got)
	}
	if _, err := s.GetAPITokenByHash(ctx, store.HashTokenSecret("secret-2")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown hash: %v, want ErrNotFound", err)
	}
	for _, bad := range []store.APIToken{
		{ID: "tok1", UserID: u1, Scopes: store.ScopeRead, Hash: store.HashTokenSecret("x")},        // ID taken
		{ID: "tok9", UserID: u1, Scopes: store.ScopeRead, Hash: store.HashTokenSecret("secret-1")}, // hash taken
	} {
		if _, err := s.CreateAPIToken(ctx, bad); !errors.Is(err, store.ErrAlreadyExists) {
			t.Errorf("CreateAPIToken(%s) = %v, want ErrAlreadyExists", bad.ID, err)
		}
	}
	if _, err := s.CreateAPIToken(ctx, store.APIToken{ID: "tok8", UserID: "nobody", Scopes: store.ScopeRead, Hash: store.HashTokenSecret("y")}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateAPIToken(unknown user) = %v, want ErrNotFound", err)
	}
	if _, err := s.CreateAPIToken(ctx, store.APIToken{ID: "tok7", UserID: u1, Hash: store.HashTokenSecret("z")}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("CreateAPIToken(no scopes) = %v, want ErrInvalidArgument", err)
	}
	if _, err := s.CreateAPIToken(ctx, store.APIToken{ID: "tok2", UserID: u1, Scopes: store.AllScopes, Hash: store.HashTokenSecret("secret-2")}); err != nil {
		t.Fatal(err)
	}

	// Touch never moves backwards.
	t1 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{t1, t1.Add(-time.Hour)} {
		if err := s.TouchAPIToken(ctx, "tok1", at, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TouchAPIToken(ctx, "no-such-token", t1, 0); err != nil {
		t.Errorf("TouchAPIToken(unknown) = %v, want nil", err)
	}
	got, _ = s.GetAPITokenByHash(ctx, store.HashTokenSecret("secret-1"))
	if !got.LastUseTime.Equal(t1) {
		t.Errorf("LastUseTime = %v, want %v", got.LastUseTime, t1)
	}
	// Within the interval a touch (another instance's) writes nothing;
	// once it has passed, one does.
	for _, c := range []struct {
		at, want time.Time
	}{{t1.Add(59 * time.Second), t1}, {t1.Add(time.Minute), t1.Add(time.Minute)}} {
		if err := s.TouchAPIToken(ctx, "tok1", c.at, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, _ = s.GetAPITokenByHash(ctx, store.HashTokenSecret("secret-1")); !got.LastUseTime.Equal(c.want) {
			t.Errorf("LastUseTime after a touch at %v, once a minute = %v, want %v", c.at, got.LastUseTime, c.want)
		}
	}

	// Revocation: only by the owner, first time kept.
	if err := s.RevokeAPIToken(ctx, u2, "tok1", t1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeAPIToken by another user = %v, want ErrNotFound", err)
	}
	for _, at := range []time.Time{t1, t1.Add(time.Hour)} {
		if err := s.RevokeAPIToken(ctx, u1, "tok1", at); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = s.GetAPITokenByHash(ctx, store.HashTokenSecret("secret-1"))
	if !got.RevokeTime.Equal(t1) || got.Usable(t1) {
		t.Errorf("revoked token: RevokeTime %v usable %v, want %v and false", got.RevokeTime, got.Usable(t1), t1)
	}
	list, err := s.ListAPITokens(ctx, u1)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "tok1" || list[1].ID != "tok2" {
		t.Errorf("ListAPITokens = %+v, want tok1, tok2", list)
	}
	if list, _ := s.ListAPITokens(ctx, u2); len(list) != 0 {
		t.Errorf("ListAPITokens(u2) = %+v, want none", list)
	}
}

// testTokenFamilies: a token records the token it was made with, and
// revoking a token revokes its descendants, whatever their depth, and
// nothing else.
func testTokenFamilies(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	u1 := newUser(t, s, "1")
	// root ─┬─ child ── grandchild
	//       └─ session
	// sibling (no parent)
	for _, tok := range []struct{ id, parent string }{
		{"root", ""}, {"child", "root"}, {"grandchild", "child"}, {"session", "root"}, {"sibling", ""},
	} {
		if _, err := s.CreateAPIToken(ctx, store.APIToken{ID: tok.id, UserID: u1, ParentID: tok.parent, Name: tok.id,
			Scopes: store.ScopeRead, Hash: store.HashTokenSecret("secret-" + tok.id)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetAPITokenByHash(ctx, store.HashTokenSecret("secret-grandchild"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ParentID != "child" {
		t.Errorf("grandchild's ParentID = %q, want child", got.ParentID)
	}
	// A child revoked earlier keeps its own revocation time.
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	if err := s.RevokeAPIToken(ctx, u1, "session", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIToken(ctx, u1, "root", t1); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListAPITokens(ctx, u1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{"root": t1, "child": t1, "grandchild": t1, "session": t0, "sibling": {}}
	for _, tok := range list {
		if !tok.RevokeTime.Equal(want[tok.ID]) {
			t.Errorf("token %s: RevokeTime %v, want %v", tok.ID, tok.RevokeTime, want[tok.ID])
		}
		if tok.ID == "child" && tok.ParentID != "root" {
			t.Errorf("listed child's ParentID = %q, want root", tok.ParentID)
		}
	}
	if len(list) != len(want) {
		t.Errorf("ListAPITokens gave %d tokens, want %d", len(list), len(want))
	}
}

// testTokenUsage: UserUsage counts the user's tokens neither revoked nor
// expired, and the bytes of every token record.
func testTokenUsage(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	u1, u2 := newUser(t, s, "1"), newUser(t, s, "2")
	past, future := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	tokens := []store.APIToken{
		{ID: "live", Name: "laptop"},
		{ID: "expiring", Name: "ci ☃", ExpireTime: future, ParentID: "live"},
		{ID: "expired", Name: "old", ExpireTime: past},
		{ID: "revoked", Name: "", SecretPrefix: "tbh_abcdef"},
	}
	var bytes int64
	for i, tok := range tokens {
		tok.UserID, tok.Scopes, tok.Hash = u1, store.ScopeRead, store.HashTokenSecret(tok.ID)
		if _, err := s.CreateAPIToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		bytes += tokens[i].StoredBytes()
	}
	if err := s.RevokeAPIToken(ctx, u1, "revoked", time.Now()); err != nil {
		t.Fatal(err)
	}
	u, err := s.UserUsage(ctx, u1)
	if err != nil {
		t.Fatal(err)
	}
	if u.Tokens != 2 || u.TokenBytes != bytes || u.StoredBytes() != bytes {
		t.Errorf("UserUsage = %+v (stored bytes %d), want 2 live tokens and %d token bytes, all of the stored bytes", u, u.StoredBytes(), bytes)
	}
	if u, _ := s.UserUsage(ctx, u2); u != (store.Usage{}) {
		t.Errorf("UserUsage(u2) = %+v, want zero", u)
	}
}

func testUsage(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	owner, reader := newUser(t, s, "owner"), newUser(t, s, "reader")
	eids := ownedExperiments(t, s, owner, 3)
	// Summary metadata is stored once per series (the first write's), and
	// its bytes count: a later write's larger metadata is not stored.
	metadata := make([]byte, 1000)
	points := []store.ScalarPoint{{Step: 1, Value: 1}, {Step: 2, Value: 2}}
	for _, eid := range eids {
		for _, md := range [][]byte{metadata, make([]byte, 5000)} {
			if err := s.WriteScalars(ctx, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "t", SummaryMetadata: md}, Points: points}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.WriteTensors(ctx, eids[0], []store.TensorSeries{{Series: store.TimeSeries{Run: "r", Tag: "x", SummaryMetadata: metadata[:10]},
		Points: []store.TensorPoint{{Step: 1, Tensor: []byte{1, 2, 3}}}}}); err != nil {
		t.Fatal(err)
	}
	ts := store.TimeSeries{Run: "r", Tag: "img", SummaryMetadata: metadata[:20]}
	if _, _, err := s.GetOrCreateBlobSequence(ctx, eids[0], ts, 1, 0, 2); err != nil {
		t.Fatal(err)
	}
	for i, state := range []store.BlobState{store.BlobStateCurrent, store.BlobStateUnfinalized} {
		ref := store.BlobRef{Run: "r", Tag: "img", Step: 1, Index: int64(i)}
		if err := s.PutBlob(ctx, eids[0], ref, store.Blob{Index: int64(i), ObjectKey: "k" + string(rune('0'+i)), Size: 100, State: state}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteExperiment(ctx, eids[2]); err != nil {
		t.Fatal(err)
	}
	if err := s.GrantRead(ctx, eids[1], reader); err != nil {
		t.Fatal(err)
	}
	if err := s.GrantRead(ctx, eids[2], reader); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	u, err := s.UserUsage(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	// Two live experiments, 2+2 scalars and 1 tensor; one current blob
	// and one unfinished: both hold stored bytes, so both count; the
	// metadata of 2 scalar series (1000 bytes each), a tensor series (10)
	// and a blob sequence (20); run "r" of both and the reader's grant.
	if want := (store.Usage{Experiments: 2, Points: 5, BlobBytes: 200, MetadataBytes: 2030,
		RunBytes: 2 * store.RowBytes("r"), GrantBytes: store.RowBytes(reader)}); u != want {
		t.Errorf("UserUsage = %+v, want %+v", u, want)
	}
	if u, _ := s.UserUsage(ctx, reader); u != (store.Usage{}) {
		t.Errorf("UserUsage(reader) = %+v, want zero", u)
	}
	ids, err := s.ListGrantedExperiments(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != eids[1] {
		t.Errorf("ListGrantedExperiments = %v, want [%s]", ids, eids[1])
	}
}

func testPendingGrants(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	owner := newUser(t, s, "owner")
	eids := ownedExperiments(t, s, owner, 3)
	const email = "dana@example.com"
	for _, eid := range eids {
		must(t, "AddPendingGrant", s.AddPendingGrant(ctx, eid, email))
	}
	must(t, "AddPendingGrant again", s.AddPendingGrant(ctx, eids[0], email))
	must(t, "AddPendingGrant other", s.AddPendingGrant(ctx, eids[0], "erin@example.com"))
	if err := s.AddPendingGrant(ctx, store.NewExperimentID(), email); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddPendingGrant on a missing experiment: %v, want ErrNotFound", err)
	}
	got, err := s.ListPendingGrants(ctx, eids[0])
	if err != nil || len(got) != 2 || got[0] != email || got[1] != "erin@example.com" {
		t.Errorf("ListPendingGrants = %v, %v", got, err)
	}
	must(t, "RemovePendingGrant", s.RemovePendingGrant(ctx, eids[1], email))
	must(t, "RemovePendingGrant missing", s.RemovePendingGrant(ctx, eids[1], email))
	must(t, "DeleteExperiment", s.DeleteExperiment(ctx, eids[2]))

	// Signing in with the email claims the grants of live experiments.
	u, err := s.GetOrCreateOIDCUser(ctx, "https://issuer.example", "dana", email, "u-dana")
	if err != nil {
		t.Fatal(err)
	}
	granted, err := s.ListGrantedExperiments(ctx, u.ID)
	if err != nil || len(granted) != 1 || granted[0] != eids[0] {
		t.Errorf("granted after sign-in: %v, %v; want [%s]", granted, err, eids[0])
	}
	if got, _ := s.ListPendingGrants(ctx, eids[0]); len(got) != 1 || got[0] != "erin@example.com" {
		t.Errorf("pending after dana signed in: %v, want only erin", got)
	}
	// Another subject with the same email later gets nothing more.
	v, err := s.GetOrCreateOIDCUser(ctx, "https://issuer.example", "dana-2", email, "u-dana2")
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := s.ListGrantedExperiments(ctx, v.ID); len(g) != 0 {
		t.Errorf("second user with the email got %v", g)
	}
}

func testExperimentAccess(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	owner, reader := newUser(t, s, "owner"), newUser(t, s, "reader")
	eid := store.NewExperimentID()
	must(t, "CreateExperiment", s.CreateExperiment(ctx, store.Experiment{ID: eid, Name: "n", Description: "d", Owner: owner, Visibility: store.VisibilityUnlisted}))
	must(t, "GrantRead", s.GrantRead(ctx, eid, reader))
	must(t, "WriteScalars", s.WriteScalars(ctx, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "t"}, Points: []store.ScalarPoint{{Step: 1}}}}))
	full, err := s.GetExperiment(ctx, eid)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetExperimentAccess(ctx, eid)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != eid || got.Name != "n" || got.Description != "d" || got.Owner != owner || got.Visibility != store.VisibilityUnlisted ||
		len(got.Readers) != 1 || got.Readers[0] != reader || !got.CreateTime.Equal(full.CreateTime) {
		t.Errorf("GetExperimentAccess = %+v, want the fields of %+v", got, full)
	}
	must(t, "DeleteExperiment", s.DeleteExperiment(ctx, eid))
	if _, err := s.GetExperimentAccess(ctx, eid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetExperimentAccess of a deleted experiment: %v, want ErrNotFound", err)
	}
	if _, err := s.GetExperimentAccess(ctx, store.NewExperimentID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetExperimentAccess of a missing experiment: %v, want ErrNotFound", err)
	}
}

// Runs and grants are stored bytes: each counts its name's, user ID's or
// email's UTF-8 bytes and store.RowOverheadBytes toward the owner's usage,
// and pending grants are counted; a deleted experiment's count no more.
func testRunAndGrantUsage(t *testing.T, s IdentityBackend) {
	ctx := t.Context()
	owner, reader := newUser(t, s, "owner"), newUser(t, s, "reader")
	eids := ownedExperiments(t, s, owner, 2)
	for _, eid := range eids {
		must(t, "PutRuns", s.PutRuns(ctx, eid, []store.Run{{Name: "a"}, {Name: "été", StartTime: 5}}))
		must(t, "WriteScalars", s.WriteScalars(ctx, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "train", Tag: "loss"},
			Points: []store.ScalarPoint{{Step: 1, Value: 1}}}}))
		must(t, "GrantRead", s.GrantRead(ctx, eid, reader))
		for _, email := range []string{"x@example.com", "someone.else@example.org"} {
			must(t, "AddPendingGrant", s.AddPendingGrant(ctx, eid, email))
		}
	}
	must(t, "DeleteExperiment", s.DeleteExperiment(ctx, eids[1]))
	u, err := s.UserUsage(ctx, owner)
	must(t, "UserUsage", err)
	want := store.Usage{Experiments: 1, Points: 1,
		RunBytes:      store.RowBytes("a") + store.RowBytes("été") + store.RowBytes("train"),
		GrantBytes:    store.RowBytes(reader) + store.RowBytes("x@example.com") + store.RowBytes("someone.else@example.org"),
		PendingGrants: 2}
	if u != want {
		t.Errorf("UserUsage = %+v, want %+v", u, want)
	}
	if want.RunBytes != 3*store.RowOverheadBytes+1+5+5 {
		t.Errorf("RowBytes counts characters, not UTF-8 bytes: runs %d", want.RunBytes)
	}
	if got, want := u.StoredBytes(), want.RunBytes+want.GrantBytes; got != want {
		t.Errorf("StoredBytes = %d, want runs and grants, %d", got, want)
	}
}

// testTokenAndPendingGrantCaps: the live tokens cap and the pending
// grants cap (store.Quotas.Tokens, PendingGrants) are checked in the
// transactions that create them: past one, CreateAPIToken and a new
// AddPendingGrant are refused with a *store.QuotaError and store nothing;
// revoked tokens, removed grants and a grant that exists already do not
// count; creates at once make exactly the cap.
func testTokenAndPendingGrantCaps(t *testing.T, s IdentityBackend) {
	owner := newUser(t, s, "capped-"+store.NewExperimentID())
	c := store.WithQuotas(ctx(t), store.Quotas{Tokens: 2, PendingGrants: 2})
	token := func(user string) (string, error) {
		id := "cap-" + store.NewExperimentID()
		_, err := s.CreateAPIToken(c, store.APIToken{ID: id, UserID: user, Scopes: store.ScopeRead,
			Hash: store.HashTokenSecret(id)})
		return id, err
	}
	first, err := token(owner)
	must(t, "first token", err)
	_, err = token(owner)
	must(t, "second token", err)
	var q *store.QuotaError
	if _, err := token(owner); !errors.As(err, &q) || *q != (store.QuotaError{Quota: store.TokensQuotaName, Limit: 2, Used: 2, Adding: 1}) {
		t.Errorf("a third token under a cap of 2: got %v, want a QuotaError of live API tokens 2, used 2, adding 1", err)
	}
	if toks, err := s.ListAPITokens(ctx(t), owner); err != nil || len(toks) != 2 {
		t.Errorf("tokens after the refusal: %d (%v), want 2", len(toks), err)
	}
	must(t, "RevokeAPIToken", s.RevokeAPIToken(ctx(t), owner, first, time.Now()))
	_, err = token(owner)
	must(t, "a token after one was revoked", err)

	racer := newUser(t, s, "token-racer-"+store.NewExperimentID())
	if made := admittedAtOnce(t, "CreateAPIToken", 8, func(int) error { _, err := token(racer); return err }); made != 2 {
		t.Errorf("8 tokens at once under a cap of 2 made %d, want 2", made)
	}

	eids := ownedExperiments(t, s, owner, 2)
	must(t, "a pending grant", s.AddPendingGrant(c, eids[0], "a@example.com"))
	must(t, "a pending grant on the other experiment", s.AddPendingGrant(c, eids[1], "b@example.com"))
	must(t, "the same grant again, at the cap", s.AddPendingGrant(c, eids[0], "a@example.com"))
	err = s.AddPendingGrant(c, eids[0], "c@example.com")
	if !errors.As(err, &q) || *q != (store.QuotaError{Quota: store.PendingGrantsQuotaName, Limit: 2, Used: 2, Adding: 1}) {
		t.Errorf("a third pending grant under a cap of 2: got %v, want a QuotaError of pending grants 2, used 2, adding 1", err)
	}
	if p, err := s.ListPendingGrants(ctx(t), eids[0]); err != nil || len(p) != 1 {
		t.Errorf("pending grants after the refusal: %q (%v), want a@example.com only", p, err)
	}
	must(t, "RemovePendingGrant", s.RemovePendingGrant(ctx(t), eids[1], "b@example.com"))
	must(t, "a pending grant after one was removed", s.AddPendingGrant(c, eids[0], "c@example.com"))

	grantor := newUser(t, s, "grant-racer-"+store.NewExperimentID())
	eid := ownedExperiments(t, s, grantor, 1)[0]
	made := admittedAtOnce(t, "AddPendingGrant", 8, func(i int) error {
		return s.AddPendingGrant(c, eid, fmt.Sprintf("g%d@example.com", i))
	})
	if p, err := s.ListPendingGrants(ctx(t), eid); made != 2 || err != nil || len(p) != 2 {
		t.Errorf("8 pending grants at once under a cap of 2: %d made, %d stored (%v), want 2", made, len(p), err)
	}
}
