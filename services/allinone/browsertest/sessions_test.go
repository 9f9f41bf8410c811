package browsertest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Browser sign-ins are listed as sessions, apart from API tokens, and
// "Sign out everywhere" ends them all: this browser's and another's.
func TestSessionsApartFromTokensSignOutEverywhere(t *testing.T) {
	// Another browser's session, started as the sign-in page starts one.
	req, err := http.NewRequest(http.MethodPost, env.origin+"/api/session", strings.NewReader(fmt.Sprintf(`{"token":%q}`, env.token)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", env.origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var other *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "tbhub_session" {
			other = c
		}
	}
	if resp.StatusCode != http.StatusOK || other == nil {
		t.Fatalf("signing in another browser: %s, cookie %v", resp.Status, other)
	}
	otherSignedIn := func() bool {
		req, _ := http.NewRequest(http.MethodGet, env.origin+"/api/session", nil)
		req.AddCookie(other)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"signedIn":true`)
	}
	if !otherSignedIn() {
		t.Fatal("the other browser's session does not answer as signed in")
	}

	ctx := tab(t, false)
	var tokens string
	run(t, ctx,
		navigate(env.origin+"/signin"),
		chromedp.SendKeys(`form.signin input[name=token]`, env.token, chromedp.ByQuery),
		chromedp.Click(`form.signin button[type=submit]`, chromedp.ByQuery),
		waitFor(`document.querySelectorAll("table.sessions tr[data-session]").length >= 2`),
		waitFor(`document.querySelector("table.tokens:not(.sessions) tbody") !== null`),
		chromedp.Text(`table.tokens:not(.sessions)`, &tokens, chromedp.ByQuery),
	)
	if strings.Contains(tokens, "web session") {
		t.Errorf("the API tokens table lists web sessions:\n%s", tokens)
	}
	screenshot(t, ctx, "sessions")
	run(t, ctx,
		chromedp.Click(`button.signout-everywhere`, chromedp.ByQuery),
		waitFor(`document.querySelector("form.signin") !== null`),
		waitFor(`fetch("/api/session").then(r => r.json()).then(s => !s.signedIn)`),
	)
	if otherSignedIn() {
		t.Error("after Sign out everywhere, the other browser's session still answers as signed in")
	}
	// The owner's API token, not a session, still works.
	if code, _ := api(t, http.MethodGet, "/api/whoami", env.token, ""); code != http.StatusOK {
		t.Errorf("the owner's API token answers %d after signing out everywhere", code)
	}
}

// The experiment page and the Share dialog have a Copy link button that
// copies the experiment's address.
func TestCopyLink(t *testing.T) {
	ctx := tab(t, true)
	want := env.origin + "/experiment/" + env.publicEID + "/"
	var copied string
	run(t, ctx,
		navigate(experimentURL(env.publicEID, nil)),
		waitFor(`document.querySelector(".exp-head button.copy-link") !== null`),
		chromedp.Click(`.exp-head button.copy-link`, chromedp.ByQuery),
		waitFor(`document.querySelector(".exp-head button.copy-link").dataset.copied !== undefined`),
		chromedp.Evaluate(`document.querySelector(".exp-head button.copy-link").dataset.copied`, &copied),
	)
	if copied != want {
		t.Errorf("Copy link copied %q, want %q", copied, want)
	}
	run(t, ctx,
		waitFor(`document.querySelector(".exp-head button.share") !== null`),
		chromedp.Click(`.exp-head button.share`, chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.share-dialog button.copy-link") !== null`),
		waitFor(`document.querySelector("dialog.share-dialog .visibility-note").textContent.includes("Public: anyone can read it")`),
	)
}
