package browsertest

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// hostileMarkdown must render as markdown and stay inert: a script, an
// event handler and javascript: links (window.pwned would say one ran).
const hostileMarkdown = "A **bold** result.\n\n<script>window.pwned = 'script'</script>\n\n" +
	"<img src=\"x\" onerror=\"window.pwned = 'onerror'\"> [click me](javascript:window.pwned='link') " +
	"<a href=\"javascript:window.pwned='a'\">raw link</a>"

// galleryExperiment creates an experiment of the test user with a name,
// description and visibility; it is deleted when the test ends.
func galleryExperiment(t *testing.T, name, description, visibility string) string {
	t.Helper()
	w, ctx, closeConn, err := writerClient()
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	resp, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: name, Description: description})
	if err != nil {
		t.Fatal(err)
	}
	eid := resp.GetExperimentId()
	t.Cleanup(func() { api(t, http.MethodDelete, "/api/experiments/"+eid, env.token, "") })
	if code, body := api(t, http.MethodPatch, "/api/experiments/"+eid, env.token, fmt.Sprintf(`{"visibility":%q}`, visibility)); code != http.StatusOK {
		t.Fatalf("PATCH visibility %s: %d %s", visibility, code, body)
	}
	return eid
}

// galleryItem is the gallery's entry of an experiment.
func galleryItem(eid string) string {
	return fmt.Sprintf(`section.gallery li.gallery-item[data-eid=%q]`, eid)
}

// A signed-out visitor opens the site and sees the public gallery (with
// signing in beside it): the public experiments, never an unlisted or
// private one; searches; opens one. Descriptions render as markdown and
// hostile markup in them does nothing.
func TestPublicGallerySignedOut(t *testing.T) {
	word := "gallery" + strings.ToLower(rand.Text()[:8]) // names only this test uses
	// More than a page (20) of public experiments with the word, made
	// first so that the ones below are the latest updated.
	for i := range 20 {
		galleryExperiment(t, fmt.Sprintf("%s extra %d", word, i), "", "public")
	}
	public := galleryExperiment(t, word+" alpha", hostileMarkdown, "public")
	other := galleryExperiment(t, word+" beta", "plain", "public")
	unlisted := galleryExperiment(t, word+" unlisted", "", "unlisted")
	private := galleryExperiment(t, word+" private", "", "private")

	ctx := tab(t, false)
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(`document.querySelector(".landing form.signin") !== null`),
		waitFor(fmt.Sprintf(`document.querySelector(%q) !== null`, galleryItem(public))),
	)
	screenshot(t, ctx, "gallery-signed-out")
	absent := func(where string) {
		t.Helper()
		var shown []string
		run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`[%q, %q].filter(id => document.querySelector('li.gallery-item[data-eid="' + id + '"]'))`, unlisted, private), &shown))
		if len(shown) > 0 {
			t.Errorf("%s: the gallery lists %v (unlisted or private)", where, shown)
		}
	}
	absent("landing page")

	// The description: bold renders bold; the script, the handler and the
	// javascript: links are inert.
	var desc struct {
		Bold        string
		Scripts     int
		Handlers    int
		JSLinks     int
		Pwned       any
		ScriptAsTxt bool
	}
	run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const d = document.querySelector(%q);
		return {
			Bold: d.querySelector("strong")?.textContent ?? "",
			Scripts: d.querySelectorAll("script").length,
			Handlers: [...d.querySelectorAll("*")].filter(e => [...e.attributes].some(a => a.name.startsWith("on"))).length,
			JSLinks: [...d.querySelectorAll("a, img")].filter(e => /^\s*javascript:/i.test(e.getAttribute("href") ?? e.getAttribute("src") ?? "")).length,
			Pwned: window.pwned ?? null,
			ScriptAsTxt: d.textContent.includes("<script>"),
		};
	})()`, galleryItem(public)+" .desc"), &desc))
	if desc.Bold != "bold" || desc.Scripts != 0 || desc.Handlers != 0 || desc.JSLinks != 0 || desc.Pwned != nil || !desc.ScriptAsTxt {
		t.Errorf("gallery description: %+v; want bold rendered, the script shown as text, no handlers or javascript: links, nothing run", desc)
	}
	// Clicking the neutered links does nothing either.
	run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll(%q).forEach(a => a.click())`, galleryItem(public)+" .desc a"), nil))
	var pwned any
	run(t, ctx, chromedp.Evaluate(`window.pwned ?? null`, &pwned))
	if pwned != nil {
		t.Errorf("a description link ran script: window.pwned = %v", pwned)
	}

	// Search: the word names 24 experiments, 22 of them public: a page of
	// 20, the latest first, then More for the other two; never the
	// unlisted or private ones. "alpha" narrows to one. The search goes
	// into the URL.
	run(t, ctx,
		chromedp.SendKeys(`input.gallery-search`, word, chromedp.ByQuery),
		// The landing page's list already shows these 20 and a More button:
		// wait for the search's own answer (it puts the word in the URL,
		// then loads with More disabled) before reading the list or
		// clicking More, or the click lands on the disabled button of a
		// load still under way (a CI run on a busy machine lost it so).
		waitFor(fmt.Sprintf(`new URL(location.href).searchParams.get("q") === %q`, word)),
		waitFor(`(() => {
			const more = document.querySelector("section.gallery button.more");
			return !more.hidden && !more.disabled && document.querySelector("section.gallery p.status").textContent === "";
		})()`),
		waitFor(fmt.Sprintf(`document.querySelectorAll("li.gallery-item").length === 20 && document.querySelector(%q) && document.querySelector(%q)`,
			galleryItem(public), galleryItem(other))),
		chromedp.Click(`section.gallery button.more`, chromedp.ByQuery),
		waitFor(`document.querySelectorAll("li.gallery-item").length === 22 && document.querySelector("section.gallery button.more").hidden`),
	)
	var names []string
	run(t, ctx, chromedp.Evaluate(`[...document.querySelectorAll("li.gallery-item h2")].map(e => e.textContent)`, &names))
	if len(names) != 22 || names[0] != word+" beta" || names[1] != word+" alpha" || names[21] != word+" extra 0" {
		t.Errorf("search for %s lists %q; want beta, alpha, then the extras newest first", word, names)
	}
	absent("search")
	run(t, ctx,
		chromedp.SendKeys(`input.gallery-search`, " ALPHA", chromedp.ByQuery),
		waitFor(fmt.Sprintf(`document.querySelectorAll("li.gallery-item").length === 1 && document.querySelector(%q) !== null`, galleryItem(public))),
	)
	var owner string
	run(t, ctx, chromedp.Text(galleryItem(public)+" .owner", &owner, chromedp.ByQuery))
	if owner == "" || owner == "unknown owner" {
		t.Errorf("gallery owner = %q", owner)
	}
	screenshot(t, ctx, "gallery-search")

	// Opening it: the experiment page, signed out, with the description
	// rendered in its header.
	run(t, ctx,
		chromedp.Click(galleryItem(public)+" h2 a", chromedp.ByQuery),
		waitFor(fmt.Sprintf(`location.pathname === "/experiment/%s/"`, public)),
		waitFor(`document.querySelector(".exp-head .desc strong")?.textContent === "bold"`),
		waitFor(`document.querySelectorAll(".exp-head .desc script").length === 0 && (window.pwned ?? null) === null`),
	)

	// The header leads to the gallery from every page; a search in its URL
	// is the one shown.
	run(t, ctx,
		chromedp.Click(`header.top a.gallery-link`, chromedp.ByQuery),
		waitFor(`location.pathname === "/gallery" && document.querySelector("section.gallery") !== null && document.readyState === "complete"`),
	)
	run(t, ctx,
		navigate(env.origin+"/gallery?q="+word+"%20beta"),
		waitFor(fmt.Sprintf(`document.querySelectorAll("li.gallery-item").length === 1 && document.querySelector(%q) !== null`, galleryItem(other))),
		waitFor(fmt.Sprintf(`document.querySelector("input.gallery-search").value === %q`, word+" beta")),
	)
	// The sign-in page leads there too.
	run(t, ctx,
		navigate(env.origin+"/signin"),
		waitFor(`document.querySelector("form.signin a.gallery-link[href='/gallery']") !== null`),
	)
}

// Signed in: My experiments renders descriptions as markdown, and the
// Share dialog of a public experiment says it is in the public gallery.
func TestDescriptionsRenderAndShareSaysGallery(t *testing.T) {
	word := "described" + strings.ToLower(rand.Text()[:8])
	public := galleryExperiment(t, word, hostileMarkdown, "public")
	unlisted := galleryExperiment(t, word+" unlisted", "*quiet*", "unlisted")
	ctx := tab(t, true)
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(fmt.Sprintf(`document.querySelector(%q)?.textContent === "bold"`, row(public)+" td.desc strong")),
		waitFor(fmt.Sprintf(`document.querySelector(%q)?.textContent === "quiet"`, row(unlisted)+" td.desc em")),
	)
	var pwned any
	run(t, ctx, chromedp.Evaluate(`window.pwned ?? null`, &pwned))
	if pwned != nil {
		t.Errorf("My experiments ran a description's script: window.pwned = %v", pwned)
	}
	var note string
	run(t, ctx,
		chromedp.Click(row(public)+" button.share", chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.share-dialog[open] .visibility-note") !== null`),
		chromedp.Text(`dialog.share-dialog .visibility-note`, &note, chromedp.ByQuery),
	)
	if !strings.Contains(note, "listed in the public gallery") {
		t.Errorf("Share dialog of a public experiment says %q", note)
	}
	screenshot(t, ctx, "share-public")
	run(t, ctx,
		chromedp.Click(`dialog.share-dialog .buttons button.done`, chromedp.ByQuery),
		chromedp.Click(row(unlisted)+" button.share", chromedp.ByQuery),
		waitFor(`document.querySelector("dialog.share-dialog[open] .visibility-note") !== null`),
		chromedp.Text(`dialog.share-dialog .visibility-note`, &note, chromedp.ByQuery),
	)
	if !strings.Contains(note, "not listed") {
		t.Errorf("Share dialog of an unlisted experiment says %q", note)
	}
}

// The owner chooses a display name on "My experiments": until then the
// field shows the handle (never an email) as its placeholder; a name the
// server refuses shows its reason; a saved one is what the gallery shows
// as the owner of their public experiment.
func TestDisplayNameShowsInGallery(t *testing.T) {
	ctx := tab(t, true)
	t.Cleanup(func() { api(t, http.MethodPatch, "/api/whoami", env.token, `{"displayName":""}`) })
	field := `document.querySelector("section.display-name input[name=display-name]")`
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(field+`?.placeholder.startsWith("user-") && `+field+`.value === ""`),
		waitFor(`document.querySelector("section.display-name p.hint").textContent.includes("until you choose")`),
		chromedp.SetValue(`section.display-name input[name=display-name]`, "<b>Grace</b>", chromedp.ByQuery),
		chromedp.Click(`section.display-name button[type=submit]`, chromedp.ByQuery),
		waitFor(`document.querySelector("section.display-name p.error").textContent.includes("not '<'")`),
		chromedp.SetValue(`section.display-name input[name=display-name]`, "Grace H.", chromedp.ByQuery),
		chromedp.Click(`section.display-name button[type=submit]`, chromedp.ByQuery),
		waitFor(`document.querySelector("section.display-name p.hint").textContent === "Others see you as “Grace H.”." && document.querySelector("section.display-name p.error").textContent === ""`),
	)
	screenshot(t, ctx, "display-name")
	run(t, ctx,
		navigate(env.origin+"/gallery?q="+"grace%20h."),
		waitFor(fmt.Sprintf(`document.querySelector(%q)?.textContent === "Grace H."`, galleryItem(env.publicEID)+" .owner")),
	)
}
