package browsertest

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// At a phone's width (390 × 844): the runs list folds under its heading
// instead of filling half the page and opens when tapped; the tab bar says
// there are more tabs to scroll to; My experiments' buttons are on screen;
// no page scrolls sideways.
func TestPhoneLayout(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	var sidebar, height float64
	run(t, ctx,
		navigate(experimentURL(env.eid, nil)),
		waitFor(`document.querySelectorAll("nav.tabs .tab").length > 5`),
		waitFor(`document.querySelector("nav.tabs").classList.contains("more")`),
		chromedp.Evaluate(`document.querySelector(".sidebar").getBoundingClientRect().height`, &sidebar),
		chromedp.Evaluate(`innerHeight`, &height),
	)
	if sidebar > height/8 {
		t.Errorf("folded runs list is %.0f px of a %.0f px screen", sidebar, height)
	}
	screenshot(t, ctx, "phone-experiment")
	run(t, ctx,
		chromedp.Click(`.sidebar h2`, chromedp.ByQuery),
		waitFor(`document.querySelector(".sidebar ul.runs").getBoundingClientRect().height > 50`),
		waitFor(`document.documentElement.scrollWidth <= innerWidth`),
		// Scrolled to its end, the tab bar no longer hints at more.
		chromedp.Evaluate(`(() => { const n = document.querySelector("nav.tabs"); n.scrollLeft = n.scrollWidth; return 0; })()`, nil),
		waitFor(`!document.querySelector("nav.tabs").classList.contains("more")`),
	)

	var offscreen []string
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(`document.querySelectorAll("table.experiments.owned td.actions button").length > 0`),
		chromedp.Evaluate(`[...document.querySelectorAll("table.experiments.owned td.actions button, table.experiments.owned select")]
			.filter(b => { const r = b.getBoundingClientRect(); return r.left < 0 || r.right > innerWidth; }).map(b => b.textContent || b.getAttribute("aria-label"))`, &offscreen),
	)
	if len(offscreen) > 0 {
		t.Errorf("My experiments at phone width: %d controls off screen: %q", len(offscreen), offscreen)
	}
	var wide bool
	run(t, ctx, chromedp.Evaluate(`document.documentElement.scrollWidth > innerWidth`, &wide))
	if wide {
		t.Error("My experiments scrolls sideways at phone width")
	}
	screenshot(t, ctx, "phone-my-experiments")
}

// At a phone's width, a tab chosen in the URL (?tab=mesh, the last tab) is
// scrolled into the tab bar's view, not selected off screen.
func TestPhoneSelectedTabInView(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	const selected = `document.querySelector('nav.tabs button[aria-selected="true"]')`
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"mesh"}})),
		waitFor(selected+`?.dataset.tab === "mesh"`),
		waitFor(`(() => { const b = document.querySelector("nav.tabs").getBoundingClientRect(), r = `+selected+`.getBoundingClientRect();
			return r.left >= b.left - 1 && r.right <= b.right + 1; })()`),
	)
	screenshot(t, ctx, "phone-mesh-tab")
}

// At a phone's width (390 × 844) the top bar is one line: no link or name
// wraps, every item is on the same row, and nothing runs off the screen.
func TestPhoneHeaderOnOneLine(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	var problems []string
	run(t, ctx,
		navigate(experimentURL(env.eid, nil)),
		waitFor(`document.querySelector("header.top .signout") !== null`),
		chromedp.Evaluate(`(() => {
			const bar = document.querySelector("header.top");
			const items = [...bar.querySelectorAll("a, .who, button")].filter(e => e.getClientRects().length);
			const out = [];
			const mid = r => (r.top + r.bottom) / 2;
			const row = mid(items[0].getBoundingClientRect());
			for (const e of items) {
				const r = e.getBoundingClientRect(), name = e.textContent.trim();
				const lines = [...e.getClientRects()].length > 1 || e.scrollHeight > e.clientHeight + 1 && getComputedStyle(e).display !== "inline";
				if (lines) out.push(name + ": wraps");
				if (Math.abs(mid(r) - row) > 4) out.push(name + ": on another row");
				if (r.left < 0 || r.right > innerWidth) out.push(name + ": off screen");
			}
			if (bar.scrollWidth > bar.clientWidth) out.push("the bar scrolls sideways");
			if (bar.getBoundingClientRect().height > 48) out.push("the bar is " + bar.getBoundingClientRect().height + " px tall");
			return out;
		})()`, &problems),
	)
	screenshot(t, ctx, "phone-header")
	if len(problems) > 0 {
		t.Errorf("phone header: %q", problems)
	}
}
