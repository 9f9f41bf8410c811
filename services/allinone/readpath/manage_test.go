package readpath_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The management routes of the HTTP API (frontend-api/httpapi/manage.go)
// through the whole stack of `tbhub serve`, so that who may do what is
// decided by the real tenancy guard: the owner may, a stranger finds a
// private experiment missing and is refused an unlisted one, a grantee may
// read but not change, anonymous callers are asked to sign in.

// send makes one request with a JSON body ("" for none) and bearer token
// ("" for none).
func (s *server) send(t *testing.T, method, path, token, body string) response {
	t.Helper()
	if body == "" {
		return s.doBody(t, method, path, token, "", "")
	}
	return s.doBody(t, method, path, token, "application/json", body)
}

// ownedExperiment creates a private experiment of the server's user.
func ownedExperiment(t *testing.T, s *server) string {
	t.Helper()
	ctx := context.Background()
	owner, err := s.st.GetUserByName(ctx, "researcher")
	if err != nil {
		t.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := s.st.CreateExperiment(ctx, store.Experiment{ID: eid, Name: "before", Owner: owner.ID, Visibility: store.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
	return eid
}

// expect checks a response's status and that its body contains want.
func expect(t *testing.T, what string, r response, status int, want string) {
	t.Helper()
	if r.status != status || !strings.Contains(string(r.body), want) {
		t.Errorf("%s: %d %s, want %d with %q", what, r.status, strings.TrimSpace(string(r.body)), status, want)
	}
}

func TestManageExperimentRoutes(t *testing.T) {
	// No response cache: it may answer a caller whose access just changed
	// from its copy for one TTL (TestManageChangesShowThroughTheCache).
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	eid := ownedExperiment(t, s)
	bob, err := serve.IssueUserToken(context.Background(), s.st, s.srv.Authenticator(), "bob", "test")
	if err != nil {
		t.Fatal(err)
	}
	exp := "/api/experiments/" + eid
	var got struct{ Name, Description, Visibility string }

	// Signed out: sign in first. A stranger: a private experiment is missing.
	expect(t, "anonymous rename", s.send(t, http.MethodPatch, exp, "", `{"name":"x"}`), http.StatusUnauthorized, "")
	expect(t, "stranger renames private", s.send(t, http.MethodPatch, exp, bob, `{"name":"x"}`), http.StatusNotFound, "experiment not found")
	expect(t, "stranger deletes private", s.send(t, http.MethodDelete, exp, bob, ""), http.StatusNotFound, "experiment not found")
	expect(t, "stranger shares private", s.send(t, http.MethodPost, exp+"/grants", bob, `{"userName":"bob"}`), http.StatusNotFound, "experiment not found")

	// The owner renames, re-describes and publishes in one call.
	r := s.send(t, http.MethodPatch, exp, s.token, `{"name":"after","description":"*new*","visibility":"unlisted"}`)
	expect(t, "owner updates", r, http.StatusOK, `"name":"after"`)
	s.getJSON(t, exp, &got)
	if got.Name != "after" || got.Description != "*new*" || got.Visibility != "VISIBILITY_UNLISTED" {
		t.Errorf("after PATCH, GET answers %+v", got)
	}
	// Only the description: the name stays.
	expect(t, "owner re-describes", s.send(t, http.MethodPatch, exp, s.token, `{"description":""}`), http.StatusOK, `"name":"after"`)

	// Unlisted: a stranger reads it, but owner-only actions are refused
	// with a reason.
	expect(t, "stranger reads unlisted", s.send(t, http.MethodGet, exp, bob, ""), http.StatusOK, `"name":"after"`)
	expect(t, "stranger renames unlisted", s.send(t, http.MethodPatch, exp, bob, `{"name":"x"}`), http.StatusForbidden, "only the experiment's owner")
	expect(t, "stranger changes visibility", s.send(t, http.MethodPatch, exp, bob, `{"visibility":"public"}`), http.StatusForbidden, "only the experiment's owner")
	expect(t, "stranger lists grants", s.send(t, http.MethodGet, exp+"/grants", bob, ""), http.StatusForbidden, "only the experiment's owner")
	expect(t, "stranger deletes unlisted", s.send(t, http.MethodDelete, exp, bob, ""), http.StatusForbidden, "only the experiment's owner")

	// Bad requests.
	expect(t, "empty patch", s.send(t, http.MethodPatch, exp, s.token, `{}`), http.StatusBadRequest, "nothing to change")
	expect(t, "unknown field", s.send(t, http.MethodPatch, exp, s.token, `{"owner":"bob"}`), http.StatusBadRequest, "malformed JSON")
	expect(t, "bad visibility", s.send(t, http.MethodPatch, exp, s.token, `{"visibility":"everyone"}`), http.StatusBadRequest, "private, unlisted or public")
	expect(t, "name too long", s.send(t, http.MethodPatch, exp, s.token, `{"name":"`+strings.Repeat("n", 101)+`"}`), http.StatusBadRequest, "")

	// Sharing a private experiment with bob by user name, then withdrawing it.
	expect(t, "owner makes it private", s.send(t, http.MethodPatch, exp, s.token, `{"visibility":"private"}`), http.StatusOK, "VISIBILITY_PRIVATE")
	expect(t, "grant to nobody", s.send(t, http.MethodPost, exp+"/grants", s.token, `{"userName":"nobody"}`), http.StatusNotFound, `no user is named "nobody"`)
	expect(t, "grant without a user", s.send(t, http.MethodPost, exp+"/grants", s.token, `{}`), http.StatusBadRequest, "userName")
	expect(t, "grant to bob", s.send(t, http.MethodPost, exp+"/grants", s.token, `{"userName":"bob"}`), http.StatusOK, `"userName":"bob"`)
	expect(t, "grant to an email", s.send(t, http.MethodPost, exp+"/grants", s.token, `{"email":"eve@example.com"}`), http.StatusOK, "eve@example.com")
	var grants struct {
		Grants []struct {
			UserName string
			Grantee  struct{ UserID, Email string }
		}
	}
	s.getJSON(t, exp+"/grants", &grants)
	if len(grants.Grants) != 2 || grants.Grants[0].UserName != "bob" || grants.Grants[1].Grantee.Email != "eve@example.com" {
		t.Errorf("grants = %+v, want bob (by name) and eve@example.com (pending)", grants)
	}
	expect(t, "grantee reads", s.send(t, http.MethodGet, exp, bob, ""), http.StatusOK, `"name":"after"`)
	expect(t, "grantee renames", s.send(t, http.MethodPatch, exp, bob, `{"name":"x"}`), http.StatusForbidden, "only the experiment's owner")
	expect(t, "grantee shares on", s.send(t, http.MethodPost, exp+"/grants", bob, `{"email":"x@example.com"}`), http.StatusForbidden, "only the experiment's owner")
	expect(t, "revoke needs one grantee", s.send(t, http.MethodDelete, exp+"/grants?user_name=bob&email=e@x", s.token, ""), http.StatusBadRequest, "exactly one")
	expect(t, "grantee revokes", s.send(t, http.MethodDelete, exp+"/grants?user_name=bob", bob, ""), http.StatusForbidden, "only the experiment's owner")
	expect(t, "owner revokes bob", s.send(t, http.MethodDelete, exp+"/grants?user_id="+grants.Grants[0].Grantee.UserID, s.token, ""), http.StatusNoContent, "")
	expect(t, "owner revokes eve", s.send(t, http.MethodDelete, exp+"/grants?email=eve@example.com", s.token, ""), http.StatusNoContent, "")
	expect(t, "bob after revoke", s.send(t, http.MethodGet, exp, bob, ""), http.StatusNotFound, "")
	grants.Grants = nil
	s.getJSON(t, exp+"/grants", &grants)
	if len(grants.Grants) != 0 {
		t.Errorf("grants after revoking both = %+v", grants)
	}

	// Delete: the experiment is gone for everyone, its owner included.
	expect(t, "owner deletes", s.send(t, http.MethodDelete, exp, s.token, ""), http.StatusNoContent, "")
	expect(t, "GET after delete", s.send(t, http.MethodGet, exp, s.token, ""), http.StatusNotFound, "")
	expect(t, "delete again", s.send(t, http.MethodDelete, exp, s.token, ""), http.StatusNotFound, "")
}

// The frontend keeps GET answers for a short time per credential; a
// change drops the caller's copies, so the page that made it sees it at
// once.
func TestManageChangesShowThroughTheCache(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: time.Hour})
	exp := "/api/experiments/" + ownedExperiment(t, s)
	var list struct{ Experiments []struct{ Name string } }
	s.getJSON(t, "/api/experiments", &list)
	expect(t, "owner renames", s.send(t, http.MethodPatch, exp, s.token, `{"name":"after"}`), http.StatusOK, `"name":"after"`)
	s.getJSON(t, "/api/experiments", &list)
	if len(list.Experiments) != 1 || list.Experiments[0].Name != "after" {
		t.Errorf("listed after the rename: %+v", list.Experiments)
	}
	expect(t, "owner deletes", s.send(t, http.MethodDelete, exp, s.token, ""), http.StatusNoContent, "")
	list.Experiments = nil
	s.getJSON(t, "/api/experiments", &list)
	if len(list.Experiments) != 0 {
		t.Errorf("listed after the delete: %+v", list.Experiments)
	}
}

func TestTokenRoutes(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	expect(t, "anonymous whoami", s.send(t, http.MethodGet, "/api/whoami", "", ""), http.StatusUnauthorized, "")
	expect(t, "anonymous tokens", s.send(t, http.MethodGet, "/api/tokens", "", ""), http.StatusUnauthorized, "")
	expect(t, "anonymous create", s.send(t, http.MethodPost, "/api/tokens", "", `{"name":"x","scopes":["SCOPE_READ"]}`), http.StatusUnauthorized, "")
	expect(t, "bad token", s.send(t, http.MethodGet, "/api/whoami", "tbh_not-a-token", ""), http.StatusUnauthorized, "")
	expect(t, "whoami", s.send(t, http.MethodGet, "/api/whoami", s.token, ""), http.StatusOK, `"userName":"researcher"`)

	r := s.send(t, http.MethodPost, "/api/tokens", s.token, `{"name":"ci","scopes":["SCOPE_READ"]}`)
	expect(t, "create", r, http.StatusOK, `"secret":"tbh_`)
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("a new token's answer has Cache-Control %q, want no-store", cc)
	}
	var created struct {
		Token  struct{ TokenID string }
		Secret string
	}
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	expect(t, "whoami with the new token", s.send(t, http.MethodGet, "/api/whoami", created.Secret, ""), http.StatusOK, `"SCOPE_READ"`)
	expect(t, "read token mints an upload token", s.send(t, http.MethodPost, "/api/tokens", created.Secret, `{"name":"x","scopes":["SCOPE_UPLOAD"]}`), http.StatusForbidden, "scopes")
	expect(t, "no scopes", s.send(t, http.MethodPost, "/api/tokens", s.token, `{"name":"x"}`), http.StatusBadRequest, "at least one scope")

	list := s.send(t, http.MethodGet, "/api/tokens", s.token, "")
	expect(t, "list", list, http.StatusOK, `"name":"ci"`)
	if strings.Contains(string(list.body), created.Secret) {
		t.Error("the token list shows a secret")
	}
	// Another user cannot revoke it.
	bob, err := serve.IssueUserToken(context.Background(), s.st, s.srv.Authenticator(), "bob", "test")
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "bob revokes it", s.send(t, http.MethodDelete, "/api/tokens/"+created.Token.TokenID, bob, ""), http.StatusNotFound, "")
	expect(t, "still works", s.send(t, http.MethodGet, "/api/whoami", created.Secret, ""), http.StatusOK, "")
	expect(t, "owner revokes it", s.send(t, http.MethodDelete, "/api/tokens/"+created.Token.TokenID, s.token, ""), http.StatusNoContent, "")
	expect(t, "revoked", s.send(t, http.MethodGet, "/api/whoami", created.Secret, ""), http.StatusUnauthorized, "")
}

// newToken creates a token with token's credential through POST
// /api/tokens and returns its ID and secret.
func newToken(t *testing.T, s *server, token, scopes string) (id, secret string) {
	t.Helper()
	r := s.send(t, http.MethodPost, "/api/tokens", token, `{"name":"t","scopes":[`+scopes+`]}`)
	var created struct {
		Token  struct{ TokenID string }
		Secret string
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &created) != nil {
		t.Fatalf("POST /api/tokens %s: %d %s", scopes, r.status, r.body)
	}
	return created.Token.TokenID, created.Secret
}

// Listing, creating and revoking tokens needs the tokens scope (issue 20
// #5): a read-only token listed and revoked every token of its user,
// upload tokens included, and minted more; an upload token minted too.
func TestTokenRoutesNeedTheTokensScope(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	_, ro := newToken(t, s, s.token, `"SCOPE_READ"`)
	uploadID, upload := newToken(t, s, s.token, `"SCOPE_UPLOAD","SCOPE_READ"`)
	for _, cred := range []struct{ name, token string }{{"read-only", ro}, {"upload+read", upload}} {
		expect(t, cred.name+" lists tokens", s.send(t, http.MethodGet, "/api/tokens", cred.token, ""), http.StatusForbidden, "tokens scope")
		expect(t, cred.name+" creates a token", s.send(t, http.MethodPost, "/api/tokens", cred.token, `{"name":"x","scopes":["SCOPE_READ"]}`), http.StatusForbidden, "tokens scope")
		expect(t, cred.name+" revokes the upload token", s.send(t, http.MethodDelete, "/api/tokens/"+uploadID, cred.token, ""), http.StatusForbidden, "tokens scope")
	}
	expect(t, "the upload token after the refused revocations", s.send(t, http.MethodGet, "/api/whoami", upload, ""), http.StatusOK, "")
	_, manager := newToken(t, s, s.token, `"SCOPE_READ","SCOPE_TOKENS"`)
	expect(t, "a token with the tokens scope lists", s.send(t, http.MethodGet, "/api/tokens", manager, ""), http.StatusOK, `"SCOPE_TOKENS"`)
}

// PATCH /api/whoami sets the caller's display name, which GET
// /api/experiments/{eid} then shows a reader who is not the owner, without
// the owner's user name (here an email, as an OIDC user's is); the owner
// still sees their own.
func TestDisplayNameRoute(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	ctx := context.Background()
	carol, err := serve.IssueUserToken(ctx, s.st, s.srv.Authenticator(), "carol@example.com", "test")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := s.st.GetUserByName(ctx, "carol@example.com")
	if err != nil {
		t.Fatal(err)
	}
	eid := store.NewExperimentID()
	if err := s.st.CreateExperiment(ctx, store.Experiment{ID: eid, Name: "mnist", Owner: owner.ID, Visibility: store.VisibilityUnlisted}); err != nil {
		t.Fatal(err)
	}

	expect(t, "anonymous", s.send(t, http.MethodPatch, "/api/whoami", "", `{"displayName":"x"}`), http.StatusUnauthorized, "")
	expect(t, "markup", s.send(t, http.MethodPatch, "/api/whoami", carol, `{"displayName":"<b>Carol</b>"}`), http.StatusBadRequest, "not '<'")
	expect(t, "too long", s.send(t, http.MethodPatch, "/api/whoami", carol, `{"displayName":"`+strings.Repeat("c", 65)+`"}`), http.StatusBadRequest, "at most 64")
	expect(t, "malformed", s.send(t, http.MethodPatch, "/api/whoami", carol, `{"displayName":`), http.StatusBadRequest, "malformed JSON")
	expect(t, "not yet chosen", s.send(t, http.MethodGet, "/api/experiments/"+eid, s.token, ""), http.StatusOK,
		`"ownerDisplayName":"`+store.Handle(owner.ID)+`"`)
	expect(t, "set", s.send(t, http.MethodPatch, "/api/whoami", carol, `{"displayName":"Carol D."}`), http.StatusOK, `{"displayName":"Carol D."}`)
	expect(t, "whoami", s.send(t, http.MethodGet, "/api/whoami", carol, ""), http.StatusOK, `"displayName":"Carol D."`)

	other := s.send(t, http.MethodGet, "/api/experiments/"+eid, s.token, "")
	expect(t, "another reader", other, http.StatusOK, `"ownerDisplayName":"Carol D."`)
	if strings.Contains(string(other.body), "@") {
		t.Errorf("another reader's answer holds the owner's email: %s", other.body)
	}
	expect(t, "the owner", s.send(t, http.MethodGet, "/api/experiments/"+eid, carol, ""), http.StatusOK, `"ownerName":"carol@example.com"`)
}
