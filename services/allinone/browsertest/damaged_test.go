package browsertest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The corpus holds three damaged event files (EXPECTED.json's errors): the
// experiment page says so, with the files, as tbup reported them.
func TestDamagedRecordsOnTheExperimentPage(t *testing.T) {
	ctx := tab(t, true)
	var summary string
	var files []string
	run(t, ctx,
		navigate(experimentURL(env.eid, nil)),
		waitFor(`document.querySelector(".damaged summary") !== null`),
		chromedp.Text(`.damaged summary`, &summary, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(".damaged").open = true`, nil),
		chromedp.Evaluate(`[...document.querySelectorAll(".damaged-files li")].map(l => l.textContent)`, &files),
	)
	if summary != "⚠ 3 damaged records skipped in 3 files" {
		t.Errorf("damaged note %q, want 3 records in 3 files", summary)
	}
	const file = "events.out.tfevents.1795331773.vm.22642.6"
	want := []string{"generated/damaged/bad_data_crc/" + file, "generated/damaged/truncated_header/" + file, "generated/damaged/truncated_mid_record/" + file}
	if strings.Join(files, "|") != strings.Join(want, "|") {
		t.Errorf("damaged files %q, want %q", files, want)
	}
	screenshot(t, ctx, "damaged-records")
}
