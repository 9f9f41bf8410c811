package browsertest

import (
	"net/url"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// canvasHash is a JavaScript expression: a hash of a canvas's pixels, to
// tell a redrawn view from the one before.
const canvasHash = `(() => { const c = document.querySelector(".mesh-card canvas"); const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
	let h = 0; for (let i = 0; i < d.length; i++) h = (h * 31 + d[i]) | 0; return h; })()`

// The corpus's mesh run (a coloured tetrahedron at steps 0 and 1) opens on
// ?tab=mesh: its tab is selected, the card draws its 4 vertices and 4
// triangles, a drag turns it (other pixels) and a double-click turns it
// back, and the step slider reads the other step.
func TestMeshDashboardDrawsAndTurns(t *testing.T) {
	ctx := tab(t, true)
	run(t, ctx,
		navigate(experimentURL(env.eid, url.Values{"tab": {"mesh"}})),
		waitFor(`document.querySelector('nav.tabs button[data-tab="mesh"]')?.getAttribute("aria-selected") === "true"`),
		waitFor(`document.querySelector(".mesh-card canvas")?.dataset.faces === "4"`),
		waitFor(`(`+paintedCanvases(".mesh-card canvas", 500)+`) === 1`),
	)
	var vertices string
	var colours int
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector(".mesh-card canvas").dataset.vertices`, &vertices),
		// The tetrahedron's vertex colours, not the default grey-blue.
		chromedp.Evaluate(`(() => { const c = document.querySelector(".mesh-card canvas"); const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
			const s = new Set(); for (let i = 0; i < d.length; i += 4) if (d[i + 3] === 255) s.add(d[i] + "," + d[i + 1] + "," + d[i + 2]); return s.size; })()`, &colours),
	)
	if vertices != "4" {
		t.Errorf("mesh canvas holds %s vertices, want 4", vertices)
	}
	if colours < 2 {
		t.Errorf("the mesh is drawn in %d colour(s), want its faces shaded apart", colours)
	}
	screenshot(t, ctx, "mesh")

	var before, turned, reset int
	var box []float64
	run(t, ctx,
		chromedp.Evaluate(canvasHash, &before),
		chromedp.Evaluate(`(() => { const r = document.querySelector(".mesh-card canvas").getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`, &box),
	)
	x, y := box[0]+box[2]/2, box[1]+box[3]/2
	run(t, ctx,
		chromedp.MouseEvent(input.MouseMoved, x, y),
		chromedp.MouseEvent(input.MousePressed, x, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x+40, y+10, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, x+box[2]/4, y+20, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, x+box[2]/4, y+20, chromedp.ButtonLeft),
		chromedp.Evaluate(canvasHash, &turned),
	)
	if turned == before {
		t.Error("dragging across the mesh left its drawing as it was")
	}
	run(t, ctx,
		chromedp.Evaluate(`document.querySelector(".mesh-card canvas").dispatchEvent(new MouseEvent("dblclick", {bubbles: true})); 0`, nil),
		chromedp.Evaluate(canvasHash, &reset),
	)
	if reset != before {
		t.Error("a double-click did not turn the mesh back to its first view")
	}

	// The wheel zooms: the mesh covers more of the canvas.
	var far, near, back int
	const covered = `(() => { const c = document.querySelector(".mesh-card canvas"); const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; })()`
	run(t, ctx,
		chromedp.Evaluate(covered, &far),
		chromedp.Evaluate(`document.querySelector(".mesh-card canvas").dispatchEvent(new WheelEvent("wheel", {deltaY: -300, bubbles: true, cancelable: true})); 0`, nil),
		chromedp.Evaluate(covered, &near),
		chromedp.Evaluate(`document.querySelector(".mesh-card canvas").dispatchEvent(new MouseEvent("dblclick", {bubbles: true})); 0`, nil),
		chromedp.Evaluate(canvasHash, &back),
	)
	if near <= far {
		t.Errorf("zooming in with the wheel: the mesh covers %d pixels, %d before; want more", near, far)
	}
	if back != before {
		t.Error("a double-click after zooming did not go back to the first view")
	}

	var label string
	run(t, ctx,
		chromedp.Evaluate(`(() => { const s = document.querySelector(".mesh-card input[type=range]"); s.value = 0; s.dispatchEvent(new Event("input")); return 0; })()`, nil),
		chromedp.Evaluate(`document.querySelector(".mesh-card .step-label").textContent`, &label),
		waitFor(`document.querySelector(".mesh-card canvas").dataset.faces === "4"`),
	)
	if label != "step 0" {
		t.Errorf("step slider at its start reads %q, want step 0", label)
	}
}
