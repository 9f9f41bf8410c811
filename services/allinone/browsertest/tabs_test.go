package browsertest

import (
	"testing"
)

// A tab the URL asks for without data (?tab=images before any image) is
// said to be missing, not silently replaced by Scalars; when a live upload
// brings its first image, the page switches to it.
func TestMissingTabSaysSoUntilItsDataArrives(t *testing.T) {
	ctx := tab(t, true)
	l := startLiveUpload(t, "200ms")
	run(t, ctx,
		navigate(experimentURL(l.eid, map[string][]string{"tab": {"images"}})),
		waitFor(`document.querySelector(".scalar-card") !== null`),
		waitFor(`document.querySelector(".tab-missing")?.textContent === "No Images data in this experiment; showing Scalars."`),
	)
	l.write(t, 3, 1, 1, 1) // the first image
	run(t, ctx,
		waitFor(`document.querySelector('nav.tabs button[data-tab="images"]')?.getAttribute("aria-selected") === "true"`),
		waitFor(`document.querySelector(".image-card") !== null && document.querySelector(".tab-missing") === null`),
	)
}
