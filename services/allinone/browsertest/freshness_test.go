package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A rename, a new description or visibility moves the experiment's update
// time, but no data arrived: the header does not say "receiving data",
// neither on a page opened just after nor on one open during the change.
func TestMetadataChangeIsNotReceivingData(t *testing.T) {
	eid := writeScalars(t, "no data since", "r", map[string][]float64{"loss": {3, 2, 1}})
	patch := func(body string) int64 {
		t.Helper()
		code, resp := api(t, http.MethodPatch, "/api/experiments/"+eid, env.token, body)
		var e struct{ UpdateTime time.Time }
		if err := json.Unmarshal([]byte(resp), &e); code != http.StatusOK || err != nil {
			t.Fatalf("PATCH %s: %d %s (%v)", body, code, resp, err)
		}
		return e.UpdateTime.UnixMilli()
	}
	patch(`{"name": "renamed", "description": "a new description"}`)

	ctx := tab(t, true)
	var live string
	run(t, ctx,
		navigate(experimentURL(eid, nil)),
		waitFor(`document.querySelector(".exp-head .live")?.textContent`),
		chromedp.Evaluate(`document.querySelector(".exp-head .live").textContent`, &live),
	)
	if strings.Contains(live, "receiving") {
		t.Errorf("opened after a rename, the header says %q", live)
	}

	changed := patch(`{"visibility": "unlisted"}`)
	run(t, ctx,
		// The page has polled an answer made after the change.
		waitFor(fmt.Sprintf(`Number(document.querySelector(".exp-head .live").dataset.latest) >= %d`, changed)),
		chromedp.Evaluate(`document.querySelector(".exp-head .live").textContent`, &live),
	)
	if strings.Contains(live, "receiving") {
		t.Errorf("after a visibility change seen while open, the header says %q", live)
	}
}
