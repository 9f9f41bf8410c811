package browsertest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cdruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// signInAs opens a tab signed in through the OIDC issuer as user (a
// session of their own, not the owner's token) at path.
func signInAs(t *testing.T, user, path string) context.Context {
	t.Helper()
	env.issuer.SetUser(user, user+"@example.com")
	ctx := tab(t, false)
	run(t, ctx,
		navigate(env.origin+"/auth/login?next="+url.QueryEscape(path)),
		waitFor(fmt.Sprintf(`document.querySelector("header.top .who")?.textContent === %q`, user+"@example.com")),
	)
	return ctx
}

// uploadToken mints a read and upload token for the user signed in on ctx.
func uploadToken(t *testing.T, ctx context.Context) string {
	t.Helper()
	var secret string
	run(t, ctx, chromedp.Evaluate(`fetch("/api/tokens", {method: "POST", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({name: "compare test", scopes: ["SCOPE_READ", "SCOPE_UPLOAD"]})}).then(r => r.json()).then(b => b.secret || "")`, &secret, awaitPromise))
	if secret == "" {
		t.Fatal("no token minted for the signed-in user")
	}
	return secret
}

// synthLogdir writes a small logdir of scalar runs named prefix_000,
// prefix_001…, and with pictures a run "pictures" holding the corpus's
// images (tbgen's image bytes are no PNGs).
func synthLogdir(t *testing.T, name, prefix string, runs int, seed string, pictures bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	tbgen(t, dir, "--runs", fmt.Sprint(runs), "--tags", "2", "--steps", "40", "--seed", seed)
	if pictures {
		src := filepath.Join(mustCorpus(t), "generated", "images")
		files, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "pictures"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(src, f.Name()))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "pictures", f.Name()), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if prefix != "run" {
		for i := range runs {
			old := filepath.Join(dir, fmt.Sprintf("run_%03d", i))
			if err := os.Rename(old, filepath.Join(dir, fmt.Sprintf("%s_%03d", prefix, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// The comparison: runs of three experiments of two owners,
// started from My experiments and Add experiment, shared by its URL, and
// opened by a third user who may read only two of them. They see the two
// experiments' runs named experiment/run, the scalars and images
// dashboards draw, and the third experiment's name and runs appear
// nowhere (the page's text, any answer the page read); the page says one
// experiment is hidden.
func TestComparisonSharedByURL(t *testing.T) {
	// The owner's two experiments: one shared with carol, one private.
	alpha, err := upload(env.tbup, env.dir, synthLogdir(t, "alpha", "run", 2, "1", true), "cmp-alpha")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api(t, http.MethodDelete, "/api/experiments/"+alpha, env.token, "") })
	secret, err := upload(env.tbup, env.dir, synthLogdir(t, "secret", "classified_trial", 1, "3", false), "cmp-classified")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api(t, http.MethodDelete, "/api/experiments/"+secret, env.token, "") })
	if code, body := api(t, http.MethodPost, "/api/experiments/"+alpha+"/grants", env.token, `{"email":"carol@example.com"}`); code != http.StatusOK {
		t.Fatalf("sharing alpha with carol: %d %s", code, body)
	}
	// bob's experiment, public.
	bobCtx := signInAs(t, "bob", "/")
	bobToken := uploadToken(t, bobCtx)
	bravo, err := uploadAs(env.tbup, env.dir, bobToken, synthLogdir(t, "bravo", "run", 2, "2", true), "cmp-bravo", "--visibility", "public")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api(t, http.MethodDelete, "/api/experiments/"+bravo, bobToken, "") })

	// The owner checks alpha and the secret one in My experiments,
	// compares them, and adds bob's from Add experiment.
	ctx := tab(t, true)
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(`document.querySelector('`+row(alpha)+` input.compare-check') !== null`),
		chromedp.Click(row(alpha)+` input.compare-check`, chromedp.ByQuery),
		chromedp.Click(row(secret)+` input.compare-check`, chromedp.ByQuery),
		waitFor(`!document.querySelector(".compare-bar button.compare").disabled`),
		chromedp.Click(`.compare-bar button.compare`, chromedp.ByQuery),
		waitFor(`location.pathname.startsWith("/compare/")`),
		waitFor(`document.querySelector(".exp-head button.add-experiment") !== null`),
		chromedp.Click(`.exp-head button.add-experiment`, chromedp.ByQuery),
		waitFor(fmt.Sprintf(`document.querySelector('dialog.add-dialog li[data-eid=%q] button.choose') !== null`, bravo)),
		chromedp.Click(fmt.Sprintf(`dialog.add-dialog li[data-eid=%q] button.choose`, bravo), chromedp.ByQuery),
		waitFor(`document.querySelectorAll(".exp-head li.member").length === 3`),
	)
	var path string
	run(t, ctx, chromedp.Evaluate(`location.pathname`, &path))
	if want := "/compare/" + alpha + "+" + secret + "+" + bravo + "/"; path != want {
		t.Fatalf("the owner's comparison is at %s, want %s", path, want)
	}
	screenshot(t, ctx, "compare-owner")

	// carol opens the link.
	ctx = signInAs(t, "carol", path+"?tab=scalars")
	run(t, ctx,
		waitFor(`document.querySelector(".exp-head .hidden-note") !== null`),
		waitFor(`document.querySelectorAll("aside.sidebar li[data-run]").length === 6`),
		waitFor(paintedCanvases(".scalar-card canvas", 200)+" >= 2"),
	)
	var runs []string
	var note string
	run(t, ctx,
		chromedp.Evaluate(`[...document.querySelectorAll("aside.sidebar li[data-run]")].map(li => li.dataset.run)`, &runs),
		chromedp.Evaluate(`document.querySelector(".exp-head .hidden-note").textContent`, &note),
	)
	if want := "cmp-alpha/pictures,cmp-alpha/run_000,cmp-alpha/run_001,cmp-bravo/pictures,cmp-bravo/run_000,cmp-bravo/run_001"; strings.Join(runs, ",") != want {
		t.Errorf("carol's runs = %q, want %s", runs, want)
	}
	if note != "1 experiment of 3 is not visible to you" {
		t.Errorf("note = %q", note)
	}
	screenshot(t, ctx, "compare-scalars")
	run(t, ctx,
		chromedp.Click(`nav.tabs button[data-tab="images"]`, chromedp.ByQuery),
		waitFor(`[...document.querySelectorAll(".dash-images img")].filter(i => i.complete && i.naturalWidth > 0).length >= 2`),
	)
	screenshot(t, ctx, "compare-images")

	// Nothing of the hidden experiment: not in the page, not in any answer
	// the page read (read again, with carol's session).
	var answers []struct{ URL, Body string }
	run(t, ctx, chromedp.Evaluate(`Promise.all(performance.getEntriesByType("resource").map(e => e.name)
		.filter(u => u.startsWith(location.origin) && !u.includes("/static/"))
		.map(u => fetch(u).then(r => r.text()).then(body => ({URL: u, Body: body}))))`, &answers, awaitPromise))
	var text string
	run(t, ctx, chromedp.Evaluate(`document.documentElement.outerHTML`, &text))
	answers = append(answers, struct{ URL, Body string }{"the page", text})
	if len(answers) < 5 {
		t.Fatalf("only %d answers read", len(answers))
	}
	for _, a := range answers {
		for _, leak := range []string{"cmp-classified", "classified_trial"} {
			if strings.Contains(a.Body, leak) {
				t.Errorf("%s names the hidden experiment (%q)", a.URL, leak)
			}
		}
	}
	// The comparison's own answer agrees.
	var info struct {
		Members []struct{ ExperimentID string }
		Hidden  int
	}
	for _, a := range answers {
		if strings.HasSuffix(a.URL, "/data/comparison") {
			if err := json.Unmarshal([]byte(a.Body), &info); err != nil {
				t.Fatal(err)
			}
		}
	}
	if info.Hidden != 1 || len(info.Members) != 2 {
		t.Errorf("comparison answer: %+v", info)
	}
}

// consoleErrors collects what the tab's pages write with console.error;
// call the function it returns to read them.
func consoleErrors(ctx context.Context) func() []string {
	var mu sync.Mutex
	var errs []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*cdruntime.EventConsoleAPICalled); ok && e.Type == cdruntime.APITypeError {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			mu.Lock()
			errs = append(errs, strings.Join(parts, " "))
			mu.Unlock()
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// Every dashboard works on a comparison as on one experiment: a
// comparison of the corpus (every plugin) and the public scalars, each
// tab drawing its data, with no page error and no console error.
func TestEveryDashboardOfAComparison(t *testing.T) {
	ctx := tab(t, true)
	thrown, logged := pageErrors(ctx), consoleErrors(ctx)
	cmp := env.origin + "/compare/" + env.eid + "+" + env.publicEID + "/"
	tabs := openEveryTab(t, ctx, cmp, "compare-tab-", func(id string) {
		// Runs are named experiment/run on every tab that lists them.
		var names []string
		run(t, ctx, chromedp.Evaluate(`[...document.querySelectorAll("aside.sidebar li[data-run]:not([hidden])")].map(li => li.dataset.run)`, &names))
		for _, n := range names {
			if !strings.HasPrefix(n, "corpus/") && !strings.HasPrefix(n, "public scalars/") {
				t.Errorf("tab %s: run %q is not named experiment/run", id, n)
			}
		}
	})
	if len(tabs) != len(tabDraws) {
		t.Errorf("tabs of the comparison = %q, want all %d dashboards", tabs, len(tabDraws))
	}
	noPageErrors(t, thrown, logged)
}

// A signed-out visitor starts a comparison from the public gallery: two
// public experiments checked, Compare, and the page shows both
// experiments' runs named experiment/run.
func TestGalleryStartsAComparison(t *testing.T) {
	word := "cmpgallery" + strings.ToLower(rand.Text()[:8])
	// An empty public experiment, and setup's public scalars.
	other := galleryExperiment(t, word, "", "public")
	ctx := tab(t, false)
	search := env.origin + "/gallery?q=" + url.QueryEscape(word)
	run(t, ctx,
		navigate(search),
		waitFor(fmt.Sprintf(`document.querySelector('%s input.compare-check') !== null`, galleryItem(other))),
		chromedp.Click(galleryItem(other)+` input.compare-check`, chromedp.ByQuery),
		// A new search keeps what was checked.
		chromedp.SetValue(`input.gallery-search`, "public scalars", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("input.gallery-search").dispatchEvent(new KeyboardEvent("keydown", {key: "Enter"}))`, nil),
		waitFor(fmt.Sprintf(`document.querySelector('%s input.compare-check') !== null`, galleryItem(env.publicEID))),
		chromedp.Click(galleryItem(env.publicEID)+` input.compare-check`, chromedp.ByQuery),
		waitFor(`document.querySelector(".compare-bar button.compare").textContent === "Compare 2 selected"`),
		chromedp.Click(`.compare-bar button.compare`, chromedp.ByQuery),
		waitFor(`location.pathname.startsWith("/compare/")`),
		waitFor(`document.querySelectorAll(".exp-head li.member").length === 2`),
		waitFor(`document.querySelectorAll("aside.sidebar li[data-run]").length > 0`),
	)
	var path string
	var runs []string
	run(t, ctx,
		chromedp.Evaluate(`location.pathname`, &path),
		chromedp.Evaluate(`[...document.querySelectorAll("aside.sidebar li[data-run]")].map(li => li.dataset.run)`, &runs),
	)
	if want := "/compare/" + other + "+" + env.publicEID + "/"; path != want {
		t.Errorf("the comparison is at %s, want %s", path, want)
	}
	for _, r := range runs {
		if !strings.HasPrefix(r, "public scalars/") {
			t.Errorf("run %q is not named experiment/run", r)
		}
	}
	screenshot(t, ctx, "compare-from-gallery")
}

// At a phone's width a comparison's header (members, note, buttons)
// wraps: the page does not scroll sideways.
func TestComparisonOnAPhone(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		navigate(env.origin+"/compare/"+env.eid+"+"+env.publicEID+"+"+strings.Repeat("A", 22)+"/"),
		waitFor(`document.querySelector(".exp-head .hidden-note") !== null`),
		waitFor(`document.querySelectorAll("nav.tabs .tab").length > 5`),
		waitFor(`document.documentElement.scrollWidth <= innerWidth`),
	)
	screenshot(t, ctx, "phone-comparison")
}
