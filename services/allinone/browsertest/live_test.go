package browsertest

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// liveUpload is a continuous `tbup upload` of a logdir tbgen writes into.
type liveUpload struct {
	logdir string
	eid    string
	next   int // the next step a benchmark writes
}

// startLiveUpload writes a first run (steps 0..2 of one scalar tag) and
// starts `tbup upload` watching the logdir, polling it every poll; the
// upload stops with the test.
func startLiveUpload(t testing.TB, poll string, extra ...string) *liveUpload {
	t.Helper()
	l := &liveUpload{logdir: t.TempDir(), next: 10_000}
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
	l.writeSeed(t, first, steps, runs, images, 1)
}

// writeSeed is write with tbgen's --seed: another seed writes other values
// at the same steps and wall times.
func (l *liveUpload) writeSeed(t testing.TB, first, steps, runs, images int, seed int64) {
	t.Helper()
	tbgen(t, l.logdir, "--first-step", strconv.Itoa(first), "--steps", strconv.Itoa(steps),
		"--runs", strconv.Itoa(runs), "--tags", "1", "--images", strconv.Itoa(images), "--image-bytes", "100",
		"--seed", strconv.FormatInt(seed, 10))
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

// recordMultirun makes the page keep every scalars_multirun answer it
// receives in window.multirun: the "after" it sent, the answer's size and
// the answer.
const recordMultirun = `(() => {
	window.multirun = [];
	const f = window.fetch;
	window.fetch = async (input, init) => {
		const r = await f(input, init);
		if (String(input).includes("scalars_multirun")) {
			const after = new URLSearchParams(String(init?.body ?? "")).get("after");
			const text = await r.clone().text();
			window.multirun.push({ after, bytes: text.length, answer: JSON.parse(text) });
		}
		return r;
	};
	return 0;
})()`

// multirunRead is one scalars_multirun answer the page received.
type multirunRead struct {
	After  *string `json:"after"`
	Bytes  int     `json:"bytes"`
	Answer map[string]struct {
		After *int64    `json:"after"`
		Step  []int64   `json:"step"`
		Value []float64 `json:"value"`
	} `json:"answer"`
}

// A live page reads only what is new: the scalars_multirun answers that
// follow appended points hold exactly those points, past the last step the
// card had, and the card draws them after its own (no step twice). A step
// it holds rewritten with other values brings the whole series again.
func TestLivePageReadsOnlyNewPoints(t *testing.T) {
	ctx := tab(t, true)
	l := startLiveUpload(t, "200ms")
	const chart = `document.querySelector('.scalar-card[data-tag="metrics/tag_00"] .chart')`
	run(t, ctx,
		navigate(experimentURL(l.eid, nil)),
		waitFor(chart+`?.dataset.lastStep === "2"`),
		chromedp.Evaluate(recordMultirun, nil),
	)
	reads := func() []multirunRead {
		var rs []multirunRead
		run(t, ctx, chromedp.Evaluate(`window.multirun`, &rs))
		return rs
	}

	l.write(t, 3, 3, 1, 0)
	run(t, ctx,
		waitFor(chart+`?.dataset.lastStep === "5"`),
		waitFor(`window.multirun.some((r) => r.answer.run_000?.step.includes(5))`),
	)
	var got []int64
	for _, r := range reads() {
		a, ok := r.Answer["run_000"]
		if r.After == nil || !ok || a.After == nil {
			t.Fatalf("a read after appended points sent after=%v and was answered %+v; want a tail (after) both ways", r.After, r.Answer)
		}
		if len(got) == 0 && *a.After != 2 || len(got) > 0 && *a.After != got[len(got)-1] {
			t.Errorf("a tail after step %d; the card's last step was %v", *a.After, got)
		}
		got = append(got, a.Step...)
		t.Logf("tail after step %d: %d points, %d bytes", *a.After, len(a.Step), r.Bytes)
	}
	if !slices.Equal(got, []int64{3, 4, 5}) {
		t.Errorf("the page read steps %v after 3 were appended, want [3 4 5]", got)
	}
	var points string
	run(t, ctx, chromedp.Evaluate(chart+`.dataset.points`, &points))
	if points != "6" {
		t.Errorf("the card holds %s points after steps 0–5, want 6", points)
	}

	// Steps 1–5 written again with other values (same wall times): the
	// page's last point changed, so the whole series comes back.
	run(t, ctx, chromedp.Evaluate(`window.multirun = []; 0`, nil))
	l.writeSeed(t, 1, 5, 1, 0, 2)
	run(t, ctx, waitFor(`window.multirun.some((r) => r.answer.run_000 && r.answer.run_000.after === undefined)`))
	var full multirunRead
	for _, r := range reads() {
		if a := r.Answer["run_000"]; a.After == nil {
			full = r
		}
	}
	a := full.Answer["run_000"]
	if !slices.Equal(a.Step, []int64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("the whole series after a rewrite: steps %v, want 0–5", a.Step)
	}
	run(t, ctx,
		waitFor(chart+`?.dataset.points === "6" && `+chart+`.dataset.lastStep === "5"`),
	)
}
