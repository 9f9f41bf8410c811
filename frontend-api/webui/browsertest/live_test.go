package browsertest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// liveUpload is a continuous `tbup upload` of a logdir tbgen writes into.
type liveUpload struct {
	logdir string
	eid    string
}

// startLiveUpload writes a first run (steps 0..2 of one scalar tag) and
// starts `tbup upload` watching the logdir, polling it every poll; the
// upload stops with the test.
func startLiveUpload(t testing.TB, poll string, extra ...string) *liveUpload {
	t.Helper()
	l := &liveUpload{logdir: t.TempDir()}
	l.write(t, 0, 3, 1, 0)
	args := []string{"upload", "--logdir", l.logdir, "--name", "live " + t.Name()}
	if poll != "" {
		args = append(args, "--poll", poll)
	}
	cmd, err := tbupCommand(env.tbup, t.TempDir(), append(args, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	// tbup names the experiment's URL before it uploads anything.
	re := regexp.MustCompile(`^Experiment: \S+/experiment/([^/\s]+)/`)
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			l.eid = m[1]
			break
		}
	}
	if l.eid == "" {
		t.Fatalf("tbup upload printed no experiment URL:\n%s", seen)
	}
	go io.Copy(io.Discard, stderr)
	return l
}

// write adds steps [first, first+steps) of scalar metrics/tag_00 to runs
// run_000.. (appending to their event files), and images at the first
// steps, as a job still training writes them.
func (l *liveUpload) write(t testing.TB, first, steps, runs, images int) {
	t.Helper()
	out, err := exec.Command(env.tbgen, "--out", l.logdir, "--first-step", strconv.Itoa(first), "--steps", strconv.Itoa(steps),
		"--runs", strconv.Itoa(runs), "--tags", "1", "--images", strconv.Itoa(images), "--image-bytes", "100").CombinedOutput()
	if err != nil {
		t.Fatalf("tbgen: %v\n%s", err, out)
	}
}

// An open experiment page follows a live upload on its own: a new point
// is drawn in the card that is already there (the zoom in the URL and the
// card itself kept), a new run joins the runs list and the card, and a new
// dashboard gets its tab; the header says data is arriving.
func TestLivePageFollowsUpload(t *testing.T) {
	ctx := tab(t, true)
	l := startLiveUpload(t, "200ms")
	const chart = `document.querySelector('.scalar-card[data-tag="metrics/tag_00"] .chart')`
	run(t, ctx,
		navigate(experimentURL(l.eid, map[string][]string{"zoom": {"0,100"}})),
		waitFor(chart+`?.dataset.lastStep === "2"`),
		chromedp.Evaluate(`window.liveChart = `+chart+`; 0`, nil),
	)

	l.write(t, 3, 3, 1, 0)
	run(t, ctx,
		waitFor(chart+`?.dataset.lastStep === "5"`),
		waitFor(`document.querySelector(".live.active")?.textContent.includes("receiving data")`),
	)
	var same bool
	var search string
	run(t, ctx, chromedp.Evaluate(`window.liveChart === `+chart, &same), chromedp.Evaluate(`location.search`, &search))
	if !same {
		t.Error("the scalar card was built again for a new point; want it redrawn in place")
	}
	if want := "?zoom=0%2C100"; search != want {
		t.Errorf("location.search = %q after new data, want %q (the zoom kept)", search, want)
	}

	l.write(t, 6, 2, 2, 0) // run_001 appears
	run(t, ctx,
		waitFor(`document.querySelector('.sidebar li[data-run="run_001"]') !== null`),
		waitFor(chart+`?.dataset.runs === "2"`),
		waitFor(`document.querySelector(".sidebar h2").textContent === "Runs (2)"`),
	)

	var images int
	run(t, ctx, chromedp.Evaluate(`document.querySelectorAll('nav.tabs button[data-tab="images"]').length`, &images))
	if images != 0 {
		t.Fatal("an Images tab before any image was written")
	}
	l.write(t, 8, 1, 1, 1) // the first image: the Images dashboard
	run(t, ctx, waitFor(`document.querySelector('nav.tabs button[data-tab="images"]') !== null`))
	screenshot(t, ctx, "live")
}
