package browsertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	cdruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Sign-in with the OIDC issuer, "My experiments" management and API
// tokens, as a user does them.

func awaitPromise(p *cdruntime.EvaluateParams) *cdruntime.EvaluateParams {
	return p.WithAwaitPromise(true)
}

// api calls tbhub's HTTP API from the test with a bearer token.
func api(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, env.origin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// row is the "My experiments" row of an experiment.
func row(eid string) string { return fmt.Sprintf(`table.experiments tr[data-eid=%q]`, eid) }

func TestMyExperimentsRenameShareDelete(t *testing.T) {
	ctx := tab(t, true)
	eid, err := upload(env.tbup, env.dir, filepath.Join(mustCorpus(t), "generated", "scalars"), "to manage")
	if err != nil {
		t.Fatal(err)
	}
	// Other tests list the owner's experiments: leave none behind.
	t.Cleanup(func() { api(t, http.MethodDelete, "/api/experiments/"+eid, env.token, "") })
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(`document.querySelector('`+row(eid)+`') !== null`),
		chromedp.Click(row(eid)+` button.edit`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.edit-dialog[open]") !== null`),
		chromedp.SetValue(`dialog.edit-dialog input[name=name]`, "renamed", chromedp.ByQuery),
		chromedp.SetValue(`dialog.edit-dialog textarea[name=description]`, "a new description", chromedp.ByQuery),
	)
	screenshot(t, ctx, "my-experiments-edit")
	run(t, ctx,
		chromedp.Click(`dialog.edit-dialog button[type=submit]`, chromedp.ByQuery),
		waitFor(`document.querySelector('`+row(eid)+` td.name a')?.textContent === "renamed"`),
		waitFor(`document.querySelector('`+row(eid)+` td.desc').textContent === "a new description"`),
		waitFor(`document.querySelector("dialog.edit-dialog") === null`),
	)
	var got struct{ Name, Description, Visibility string }
	if code, body := api(t, http.MethodGet, "/api/experiments/"+eid, env.token, ""); code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got.Name != "renamed" || got.Description != "a new description" {
		t.Errorf("after the edit the server has %d %s", code, body)
	}

	// Visibility: the page is drawn again with the server's answer (a new
	// select, without the mark the old one gets).
	setVisibility := func(v string) {
		t.Helper()
		sel := `document.querySelector('` + row(eid) + ` select.visibility')`
		run(t, ctx,
			chromedp.Evaluate(fmt.Sprintf(`(() => { const s = %s; s.dataset.old = "1"; s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, sel, v), nil),
			waitFor(fmt.Sprintf(`(() => { const s = %s; return s !== null && s.dataset.old === undefined && s.value === %q; })()`, sel, v)),
		)
	}
	setVisibility("public")
	if code, _ := api(t, http.MethodGet, "/api/experiments/"+eid, "", ""); code != http.StatusOK {
		t.Errorf("made public in the UI, an anonymous read answers %d", code)
	}
	setVisibility("private")
	if code, _ := api(t, http.MethodGet, "/api/experiments/"+eid+"?after=private", "", ""); code != http.StatusNotFound {
		t.Errorf("made private again, an anonymous read answers %d", code)
	}

	// Share with someone by email, an unknown user name is refused with the
	// server's reason, and the share is withdrawn.
	run(t, ctx,
		chromedp.Click(row(eid)+` button.share`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.share-dialog[open] ul.grants .hint") !== null`),
		chromedp.SendKeys(`dialog.share-dialog input[name=grantee]`, "carol@example.com", chromedp.ByQuery),
		chromedp.Click(`dialog.share-dialog form.share button`, chromedp.ByQuery),
		waitFor(`document.querySelector('dialog.share-dialog li[data-grantee="carol@example.com"]') !== null`),
		chromedp.SendKeys(`dialog.share-dialog input[name=grantee]`, "nobody-by-that-name", chromedp.ByQuery),
		chromedp.Click(`dialog.share-dialog form.share button`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.share-dialog p.error").textContent.includes("no user is named")`),
	)
	screenshot(t, ctx, "my-experiments-share")
	if _, body := api(t, http.MethodGet, "/api/experiments/"+eid+"/grants", env.token, ""); !strings.Contains(body, "carol@example.com") {
		t.Errorf("grants after sharing in the UI: %s", body)
	}
	run(t, ctx,
		chromedp.Click(`dialog.share-dialog li[data-grantee="carol@example.com"] button.revoke`, chromedp.ByQuery),
		waitFor(`document.querySelector('dialog.share-dialog li[data-grantee="carol@example.com"]') === null`),
		chromedp.Click(`dialog.share-dialog .buttons button.done`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.share-dialog") === null`),
	)
	if _, body := api(t, http.MethodGet, "/api/experiments/"+eid+"/grants", env.token, ""); strings.Contains(body, "carol@example.com") {
		t.Errorf("grants after removing in the UI: %s", body)
	}

	// Delete asks first; Cancel keeps it, confirming deletes it.
	run(t, ctx,
		chromedp.Click(row(eid)+` button.delete`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.delete-dialog[open]") !== null`),
		chromedp.Click(`dialog.delete-dialog .buttons button:not(.confirm-delete)`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.delete-dialog") === null`),
	)
	if code, _ := api(t, http.MethodGet, "/api/experiments/"+eid, env.token, ""); code != http.StatusOK {
		t.Fatalf("cancelling the delete dialog deleted the experiment (%d)", code)
	}
	run(t, ctx,
		chromedp.Click(row(eid)+` button.delete`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.delete-dialog[open]") !== null`),
	)
	screenshot(t, ctx, "my-experiments-delete")
	run(t, ctx,
		chromedp.Click(`dialog.delete-dialog button.confirm-delete`, chromedp.ByQuery),
		waitFor(`document.querySelector('`+row(eid)+`') === null && document.querySelector("table.experiments") !== null`),
	)
	if code, _ := api(t, http.MethodGet, "/api/experiments/"+eid, env.token, ""); code != http.StatusNotFound {
		t.Errorf("after deleting in the UI, GET answers %d", code)
	}
}

func TestCreateAPITokenShownOnce(t *testing.T) {
	ctx := tab(t, true)
	var secret string
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(`document.querySelector("form.new-token") !== null`),
		chromedp.SendKeys(`form.new-token input[name=token-name]`, "browser-made", chromedp.ByQuery),
		chromedp.Click(`form.new-token input[name=scope-upload]`, chromedp.ByQuery), // read only
		chromedp.Click(`form.new-token button[type=submit]`, chromedp.ByQuery),
		waitFor(`document.querySelector(".created input.secret")?.value.startsWith("tbh_")`),
		chromedp.Value(`.created input.secret`, &secret, chromedp.ByQuery),
		chromedp.Click(`.created button.copy`, chromedp.ByQuery),
		waitFor(`document.querySelector(".created [role=status]").textContent !== ""`),
	)
	screenshot(t, ctx, "api-token-created")
	code, body := api(t, http.MethodGet, "/api/whoami", secret, "")
	if code != http.StatusOK || !strings.Contains(body, `"SCOPE_READ"`) || strings.Contains(body, "SCOPE_UPLOAD") {
		t.Fatalf("the token made in the browser: %d %s", code, body)
	}
	var tokenID struct{ TokenID string }
	json.Unmarshal([]byte(body), &tokenID)
	// Listed without its secret; revoking it in the UI ends it.
	var listed string
	run(t, ctx,
		waitFor(fmt.Sprintf(`document.querySelector('table.tokens tr[data-token=%q]') !== null`, tokenID.TokenID)),
		chromedp.Text(`table.tokens`, &listed, chromedp.ByQuery),
	)
	if strings.Contains(listed, secret) {
		t.Error("the tokens table shows a secret")
	}
	run(t, ctx,
		chromedp.Click(fmt.Sprintf(`table.tokens tr[data-token=%q] button.revoke-token`, tokenID.TokenID), chromedp.ByQuery),
		waitFor(fmt.Sprintf(`document.querySelector('table.tokens tr[data-token=%q]')?.classList.contains("dead")`, tokenID.TokenID)),
	)
	// (A URI not asked before: the frontend may answer one it has seen from
	// its copy for 2 s, docs/http-api.md.)
	if code, _ := api(t, http.MethodGet, "/api/tokens", secret, ""); code != http.StatusUnauthorized {
		t.Errorf("revoked in the UI, the token still answers %d", code)
	}
}

// A private experiment opened signed out shows the sign-in page; signing
// in with the OIDC issuer comes back to it. Another user who signed in
// that way is refused the owner's actions with the server's reason; signing
// out ends the session.
func TestOIDCSignInReturnsToPrivateExperiment(t *testing.T) {
	// The owner shares the corpus with alice before her first sign-in.
	if code, body := api(t, http.MethodPost, "/api/experiments/"+env.eid+"/grants", env.token, `{"email":"alice@example.com"}`); code != http.StatusOK {
		t.Fatalf("sharing with alice: %d %s", code, body)
	}
	t.Cleanup(func() {
		api(t, http.MethodDelete, "/api/experiments/"+env.eid+"/grants?email=alice@example.com", env.token, "")
	})
	env.issuer.SetUser("alice", "alice@example.com")
	ctx := tab(t, false)
	q := map[string][]string{"tab": {"scalars"}, "runFilter": {"^generated/scalars/"}}
	want := experimentURL(env.eid, q)
	run(t, ctx,
		navigate(want),
		waitFor(`document.querySelector("form.signin a.oidc-signin") !== null`),
	)
	screenshot(t, ctx, "signin-oidc")
	// Following the link leaves for the issuer and comes back: a navigation.
	var href, loc string
	run(t, ctx, chromedp.Evaluate(`document.querySelector("form.signin a.oidc-signin").href`, &href))
	run(t, ctx,
		navigate(href),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 1"),
		chromedp.Location(&loc),
		waitFor(`document.querySelector("header.top .who")?.textContent === "alice@example.com"`),
	)
	if loc != want {
		t.Errorf("after signing in the browser is at %s, want %s", loc, want)
	}

	// alice may read, not change: the server says why.
	var refused struct {
		Status int
		Text   string
	}
	run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`fetch("/api/experiments/%s", {method: "PATCH", headers: {"Content-Type": "application/json"}, body: '{"name":"mine now"}'})
		.then(async r => ({Status: r.status, Text: await r.text()}))`, env.eid), &refused, awaitPromise))
	if refused.Status != http.StatusForbidden || !strings.Contains(refused.Text, "only the experiment's owner") {
		t.Errorf("a grantee renaming: %d %q", refused.Status, refused.Text)
	}

	// Signing out: the session ends and the private experiment asks to sign in again.
	run(t, ctx,
		chromedp.Click(`header.top button.signout`, chromedp.ByQuery),
		waitFor(`document.querySelector("header.top a.signin-link") !== null`),
		navigate(want),
		waitFor(`document.querySelector("form.signin") !== null`),
	)
	if env.issuer.Exchanges() == 0 {
		t.Error("the issuer was never asked for a token")
	}
}

func mustCorpus(t *testing.T) string {
	t.Helper()
	d, err := corpusDir()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The owner shares and publishes an experiment from its own page; other
// viewers see neither control.
func TestShareFromExperimentPage(t *testing.T) {
	eid, err := upload(env.tbup, env.dir, filepath.Join(mustCorpus(t), "generated", "scalars"), "shared from its page")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api(t, http.MethodDelete, "/api/experiments/"+eid, env.token, "") })
	ctx := tab(t, true)
	run(t, ctx,
		navigate(experimentURL(eid, nil)),
		waitFor(`document.querySelector(".exp-head .owner-controls select.visibility")?.value === "private"`),
		choose(".exp-head .owner-controls select.visibility", "unlisted"),
	)
	// Once the server holds it (data-visibility), anyone with the link reads it.
	run(t, ctx, waitFor(`document.querySelector(".exp-head .owner-controls").dataset.visibility === "VISIBILITY_UNLISTED"`))
	if code, body := api(t, http.MethodGet, "/api/experiments/"+eid+"?after=unlisted", "", ""); code != http.StatusOK {
		t.Fatalf("made unlisted on its page, an anonymous read answers %d %s", code, body)
	}
	run(t, ctx,
		chromedp.Click(`.exp-head .owner-controls button.share`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.share-dialog[open] ul.grants .hint") !== null`),
		chromedp.SendKeys(`dialog.share-dialog input[name=grantee]`, "dave@example.com", chromedp.ByQuery),
		chromedp.Click(`dialog.share-dialog form.share button`, chromedp.ByQuery),
		waitFor(`document.querySelector('dialog.share-dialog li[data-grantee="dave@example.com"]') !== null`),
	)
	screenshot(t, ctx, "experiment-share")
	if _, body := api(t, http.MethodGet, "/api/experiments/"+eid+"/grants", env.token, ""); !strings.Contains(body, "dave@example.com") {
		t.Errorf("grants after sharing from the page: %s", body)
	}

	// Signed out, the unlisted experiment opens without the owner's controls.
	other := tab(t, false)
	var controls int
	run(t, other,
		navigate(experimentURL(eid, nil)),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 1"),
		waitFor(`document.querySelector(".exp-head .badge")?.textContent === "unlisted"`),
		chromedp.Evaluate(`document.querySelector(".exp-head .owner-controls").children.length`, &controls),
	)
	if controls != 0 {
		t.Errorf("a signed-out viewer sees %d owner controls", controls)
	}
}
