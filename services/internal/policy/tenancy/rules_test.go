package tenancy

import (
	"testing"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// A private experiment must look exactly like a missing one to every
// caller who is neither its owner nor a grantee, for every operation.
func TestPrivateIsIndistinguishableFromMissing(t *testing.T) {
	t.Parallel()
	private := &store.Experiment{ID: "e", Owner: "owner", Visibility: store.VisibilityPrivate}
	callers := map[string]*auth.Principal{
		"anonymous":  nil,
		"other":      {UserID: "x", Scopes: store.AllScopes},
		"other-read": {UserID: "x", Scopes: store.ScopeRead},
	}
	for op := range rules {
		for name, p := range callers {
			if a, b := Decide(op, p, private), Decide(op, p, nil); a != b {
				t.Errorf("%v by %s: private gives %v, missing gives %v", op, name, a, b)
			}
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	owner := &auth.Principal{UserID: "owner", Scopes: store.AllScopes}
	ownerRead := &auth.Principal{UserID: "owner", Scopes: store.ScopeRead}
	reader := &auth.Principal{UserID: "reader", Scopes: store.AllScopes}
	other := &auth.Principal{UserID: "other", Scopes: store.AllScopes}
	exp := func(v store.Visibility) *store.Experiment {
		return &store.Experiment{Owner: "owner", Readers: []string{"reader"}, Visibility: v}
	}
	for _, tc := range []struct {
		op   Op
		p    *auth.Principal
		vis  store.Visibility
		want Outcome
	}{
		{OpWrite, owner, store.VisibilityPrivate, Allow},
		{OpWrite, ownerRead, store.VisibilityPrivate, PermissionDenied},
		{OpWrite, reader, store.VisibilityPrivate, PermissionDenied},
		{OpWrite, other, store.VisibilityPrivate, NotFound},
		{OpWrite, other, store.VisibilityPublic, PermissionDenied},
		{OpWrite, nil, store.VisibilityPublic, Unauthenticated},
		{OpRead, nil, store.VisibilityPrivate, NotFound},
		{OpRead, nil, store.VisibilityUnlisted, Allow},
		{OpRead, other, store.VisibilityUnlisted, Allow},
		{OpRead, reader, store.VisibilityPrivate, Allow},
		{OpRead, ownerRead, store.VisibilityPrivate, Allow},
		{OpRead, &auth.Principal{UserID: "owner", Scopes: store.ScopeUpload}, store.VisibilityPrivate, PermissionDenied},
	} {
		if got := Decide(tc.op, tc.p, exp(tc.vis)); got != tc.want {
			t.Errorf("Decide(%v, %+v, %s) = %v, want %v", tc.op, tc.p, tc.vis, got, tc.want)
		}
	}
	for _, tc := range []struct {
		op   Op
		p    *auth.Principal
		want Outcome
	}{
		{OpCreate, nil, Unauthenticated},
		{OpCreate, other, Allow},
		{OpCreate, ownerRead, PermissionDenied},
		{OpList, ownerRead, Allow},
		{OpList, nil, Unauthenticated},
		{OpAccount, &auth.Principal{UserID: "u", Scopes: store.ScopeRead}, Allow},
		{OpBrowse, nil, Allow},
		{OpBrowse, &auth.Principal{UserID: "u", Scopes: store.ScopeUpload}, Allow},
		// Credentials need the tokens scope: neither a read-only nor an
		// upload+read token may create, list or revoke them.
		{OpCredentials, nil, Unauthenticated},
		{OpCredentials, ownerRead, PermissionDenied},
		{OpCredentials, &auth.Principal{UserID: "u", Scopes: store.ScopeUpload | store.ScopeRead}, PermissionDenied},
		{OpCredentials, &auth.Principal{UserID: "u", Scopes: store.ScopeTokens}, Allow},
		{OpCredentials, other, Allow},
		{Op(99), other, PermissionDenied},
	} {
		if got := Decide(tc.op, tc.p, nil); got != tc.want {
			t.Errorf("Decide(%v, %+v, none) = %v, want %v", tc.op, tc.p, got, tc.want)
		}
	}
}
