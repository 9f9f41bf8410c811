package browsertest

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// The runs pane and the dashboard's toolbar stay in view while the cards
// scroll: scrolled down to the corpus's last scalar card, the runs list's
// heading and filter and the whole toolbar are still inside the window.
func TestRunsPaneAndToolbarStayInViewWhileCardsScroll(t *testing.T) {
	ctx := tab(t, true)
	last := `[...document.querySelectorAll(".scalar-card")].at(-1)`
	var first, sidebar, heading, toolbar rect
	run(t, ctx,
		chromedp.EmulateViewport(1200, 700),
		navigate(experimentURL(env.eid, url.Values{"tab": {"scalars"}})),
		waitFor(`document.querySelectorAll(".scalar-card").length > 20`),
		chromedp.Evaluate(last+`.scrollIntoView({block: "end"})`, nil),
		// Scrolled: the last card's bottom is in the window, the first card far above it.
		waitFor(`(() => { const r = `+last+`.getBoundingClientRect(); return r.bottom <= innerHeight + 1 && r.bottom > 0; })()`),
		chromedp.Evaluate(boxOf(".scalar-card"), &first),
		chromedp.Evaluate(boxOf(".sidebar"), &sidebar),
		chromedp.Evaluate(boxOf(".sidebar input"), &heading),
		chromedp.Evaluate(boxOf(".dashboard .toolbar"), &toolbar),
	)
	// The window as seen (a full-page screenshot would lay the page out again).
	var png []byte
	run(t, ctx, chromedp.CaptureScreenshot(&png))
	if err := os.WriteFile(filepath.Join(env.artifacts, "scrolled-to-last-card.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if first.Bottom > 0 {
		t.Fatalf("the first card is still in view (%+v): the cards did not scroll", first)
	}
	if !heading.inside() {
		t.Errorf("the runs filter at %+v: scrolled out of the window", heading)
	}
	if sidebar.Top < 0 || sidebar.Top > sidebar.VH/2 || sidebar.Bottom < sidebar.VH/2 {
		t.Errorf("the runs pane at %+v: want it filling the window's height", sidebar)
	}
	if !toolbar.inside() {
		t.Errorf("the toolbar at %+v: scrolled out of the window", toolbar)
	}
}
