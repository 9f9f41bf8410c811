package browsertest

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The images toolbar: brightness changes the filter every image is drawn
// with, actual size draws an image at its stored width, and both are kept
// in the URL across a reload.
func TestImagesBrightnessAndActualSize(t *testing.T) {
	ctx := tab(t, true)
	const img = `.image-card[data-tag="gradient/image_summary"] img.sample`
	q := url.Values{"tab": {"images"}, "runFilter": {"^generated/images$"}}
	run(t, ctx,
		chromedp.EmulateViewport(1400, 900),
		navigate(experimentURL(env.eid, q)),
		waitFor(`(() => { const i = document.querySelector('`+img+`'); return i && i.complete && i.naturalWidth > 0; })()`),
	)
	var filter string
	run(t, ctx, chromedp.Evaluate(`getComputedStyle(document.querySelector('`+img+`')).filter`, &filter))
	if filter != "none" {
		t.Errorf("images drawn with filter %q before any change, want none", filter)
	}
	run(t, ctx,
		chromedp.SetValue(`input.image-brightness`, "2.5", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("input.image-brightness").dispatchEvent(new Event("input"))`, nil),
		waitFor(`new URLSearchParams(location.search).get("ibright") === "2.5"`),
		waitFor(`getComputedStyle(document.querySelector('`+img+`')).filter.includes("brightness(2.5)")`),
	)

	// Actual size: the image's drawn width is its natural width (the
	// corpus's images are smaller than the 200 px the card fits them to).
	var fitted, natural float64
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector('`+img+`').getBoundingClientRect().width`, &fitted),
		chromedp.Evaluate(`document.querySelector('`+img+`').naturalWidth`, &natural),
	)
	if fitted == natural {
		t.Fatalf("the fitted image is already %.0f px, its natural width: the test cannot tell actual size apart", natural)
	}
	run(t, ctx,
		chromedp.Click(`input.image-actual`, chromedp.ByQuery),
		waitFor(`new URLSearchParams(location.search).get("iactual") === "1"`),
		waitFor(`(() => { const i = document.querySelector('`+img+`'); return Math.abs(i.getBoundingClientRect().width - i.naturalWidth) < 0.5; })()`),
	)
	screenshot(t, ctx, "images-bright-actual-size")

	run(t, ctx,
		chromedp.Reload(),
		waitFor(`(() => { const i = document.querySelector('`+img+`'); return i && i.complete && i.naturalWidth > 0 && Math.abs(i.getBoundingClientRect().width - i.naturalWidth) < 0.5; })()`),
		waitFor(`getComputedStyle(document.querySelector('`+img+`')).filter.includes("brightness(2.5)")`),
		waitFor(`document.querySelector("input.image-actual").checked && document.querySelector("input.image-brightness").value === "2.5"`),
	)
}

// Clicking an image opens the lightbox, which names the run, tag and step
// shown; → shows the next step, ↓ the step's next image, Escape closes it.
func TestImageLightboxStepsThroughSteps(t *testing.T) {
	ctx := tab(t, true)
	const card = `.image-card[data-tag="gradient/image_summary"]`
	q := url.Values{"tab": {"images"}, "runFilter": {"^generated/images$"}}
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`(() => { const i = document.querySelector('`+card+` img.sample'); return i && i.complete && i.naturalWidth > 0; })()`),
		// Step 0 in the card, so that → has a next step.
		chromedp.SetValue(card+` input[aria-label=step]`, "0", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('`+card+` input[aria-label=step]').dispatchEvent(new Event("input"))`, nil),
		waitFor(`document.querySelector('`+card+` .step-label').textContent === "step 0"`),
	)
	var caption, first string
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector('`+card+` img.sample').click()`, nil),
		waitFor(`(() => { const i = document.querySelector(".lightbox img"); return i && i.complete && i.naturalWidth > 0; })()`),
		chromedp.Text(`.lightbox-caption`, &caption, chromedp.ByQuery),
		chromedp.AttributeValue(`.lightbox img`, "src", &first, nil, chromedp.ByQuery),
	)
	if want := "generated/images · gradient/image_summary · step 0 · image 1 of 2"; caption != want {
		t.Errorf("lightbox caption %q, want %q", caption, want)
	}
	screenshot(t, ctx, "image-lightbox")

	run(t, ctx,
		chromedp.KeyEvent(kb.ArrowRight),
		waitFor(`document.querySelector(".lightbox").dataset.step !== "0"`),
		waitFor(fmt.Sprintf(`(() => { const i = document.querySelector(".lightbox img"); return i.src !== %q && i.complete && i.naturalWidth > 0; })()`, first)),
		chromedp.Text(`.lightbox-caption`, &caption, chromedp.ByQuery),
	)
	var step string
	run(t, ctx, chromedp.Evaluate(`document.querySelector(".lightbox").dataset.step`, &step))
	if want := "generated/images · gradient/image_summary · step " + step + " · image 1 of 2"; caption != want || step == "" {
		t.Errorf("after →: caption %q, want %q", caption, want)
	}
	run(t, ctx,
		chromedp.KeyEvent(kb.ArrowDown),
		waitFor(`document.querySelector(".lightbox").dataset.sample === "1"`),
		waitFor(`document.querySelector(".lightbox-caption").textContent.endsWith("image 2 of 2")`),
		waitFor(`document.querySelector(".lightbox").dataset.step === "`+step+`"`),
		chromedp.KeyEvent(kb.Escape),
		waitFor(`document.querySelector(".lightbox") === null`),
	)
}
