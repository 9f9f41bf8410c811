package browsertest

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// Every page has an icon: an SVG that the browser decodes.
func TestFaviconIsAnSVG(t *testing.T) {
	ctx := tab(t, false)
	var icon struct {
		Type  string
		Width int
	}
	run(t, ctx,
		navigate(env.origin+"/gallery"),
		chromedp.Evaluate(`(async () => {
			const l = document.querySelector('link[rel="icon"]');
			if (!l) return {Type: "", Width: 0};
			const img = new Image();
			img.src = l.href;
			try { await img.decode(); } catch { return {Type: l.type, Width: 0}; }
			return {Type: l.type, Width: img.naturalWidth};
		})()`, &icon, awaitPromise),
	)
	if icon.Type != "image/svg+xml" || icon.Width == 0 {
		t.Errorf("icon %+v: want an SVG that decodes", icon)
	}
}
