package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
)

// BenchmarkLiveFreshness is the time from a scalar point written to a
// logdir that `tbup upload` watches with its defaults (file-system
// notifications, a 5 s poll behind them) to the point drawn in an open
// experiment page (the chart's last step), over b.N points written one
// after the other at random moments. It reports the median and the
// slowest. What bounds it: tbup's notification and send, the server's
// shared check of the followed experiment (every --live-check-interval,
// 1 s, that wakes the page's long poll, src/live.ts), then one read of
// the card and a draw.
func BenchmarkLiveFreshness(b *testing.B) {
	if env.setupErr != nil {
		b.Fatal(env.setupErr)
	}
	ctx, cancel := chromedp.NewContext(env.browser)
	defer cancel()
	l := startLiveUpload(b, "")
	const chart = `document.querySelector('.scalar-card[data-tag="metrics/tag_00"] .chart')`
	if err := chromedp.Run(ctx,
		navigate(env.origin+"/static/not-there"),
		chromedp.Evaluate(fmt.Sprintf(`localStorage.setItem("tbhub.token", %q)`, env.token), nil),
		navigate(experimentURL(l.eid, nil)),
		waitFor(chart+`?.dataset.lastStep === "2"`),
	); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		step := 3 + i
		// A training job writes at any moment (of tbup's 5 s poll before
		// it was notified, of the server's check now), not right after the
		// page drew the last point: a random phase, not a wait for a
		// condition.
		time.Sleep(rand.N(5 * time.Second))
		l.write(b, step, 1, 1, 0)
		start := time.Now()
		if err := chromedp.Run(ctx, waitFor(fmt.Sprintf(chart+`?.dataset.lastStep === "%d"`, step))); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(took[len(took)/2].Seconds(), "s-median")
	b.ReportMetric(took[len(took)-1].Seconds(), "s-max")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkLiveManyViewers is what 100 open pages of one live experiment
// cost tbhub serve: its CPU time (user + system, from /proc) over 30 s of
// a live upload (a point written every second, tbup's default 5 s
// interval, to a series of 10,000 points), with no page open, with 100
// signed-in viewers (a credential each, so the server's response cache is
// not shared) and with 100 signed-out viewers of the same experiment made
// public. Each viewer does what the page does (src/live.ts): long-polls
// the experiment (?waitPast=, one shared check per experiment on the
// server) and, when it changed, reads the plugin listing,
// the runs, the scalar tags and its card's series past the server's
// response cache: the points past its last step (scalars_multirun's
// after, as src/dashboards/scalars.ts reads), or, in the "-whole" cases,
// the whole series downsampled to 800 points (the page before it read
// tails). The bytes of the series answers are reported too, and how many
// of them were whole series. The pages open (and read their series) in
// the first 5 s, before the 30 s measured.
func BenchmarkLiveManyViewers(b *testing.B) {
	if env.setupErr != nil {
		b.Fatal(env.setupErr)
	}
	if _, err := cpuTicks(env.servePID); err != nil {
		b.Skipf("no CPU time of tbhub serve: %v", err)
	}
	const pages, window, poll = 100, 30 * time.Second, 2500 * time.Millisecond
	l := startLiveUpload(b, "", "--visibility", "public")
	// A run that has trained a while: 10,000 points, all uploaded before
	// the pages open.
	const history = 10_000
	l.write(b, 3, history-3, 1, 0)
	if err := waitMaxStep(l.eid, history-1, time.Minute); err != nil {
		b.Fatal(err)
	}
	creds := make([]string, pages)
	for i := range creds {
		secret, err := createToken(fmt.Sprintf("viewer %d", i))
		if err != nil {
			b.Fatal(err)
		}
		creds[i] = "Bearer " + secret
	}
	b.ResetTimer()
	for range b.N {
		for _, c := range []struct {
			name  string
			pages int
			cred  func(i int) string
			whole bool
		}{
			{"none", 0, nil, false},
			{"signed-in", pages, func(i int) string { return creds[i] }, false},
			{"signed-in-whole", pages, func(i int) string { return creds[i] }, true},
			{"signed-out", pages, func(int) string { return "" }, false},
			{"signed-out-whole", pages, func(int) string { return "" }, true},
		} {
			cpu, reqs, kbps, wholes := liveLoad(b, l, c.pages, c.cred, c.whole, window, poll)
			b.ReportMetric(cpu, "cores-"+c.name)
			b.ReportMetric(reqs, "req/s-"+c.name)
			b.ReportMetric(kbps, "seriesKB/s-"+c.name)
			b.ReportMetric(wholes, "wholeReads/s-"+c.name)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// liveLoad runs n emulated pages (reading whole series if whole) for
// window while a point is written each second, and returns tbhub serve's
// CPU use in cores, the pages' requests per second and the KB per second
// of their series answers.
func liveLoad(b *testing.B, l *liveUpload, n int, cred func(int) string, whole bool, window, poll time.Duration) (cores, reqPerSec, seriesKBPerSec, wholePerSec float64) {
	b.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, seriesBytes, wholeReads atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Pages opened at different moments poll at different phases.
			first := time.NewTimer(poll * time.Duration(i) / time.Duration(n))
			defer first.Stop()
			select {
			case <-stop:
				return
			case <-first.C:
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { <-stop; cancel() }()
			p := viewer{ctx: ctx, eid: l.eid, cred: cred(i), whole: whole, requests: &requests, seriesBytes: &seriesBytes, wholeReads: &wholeReads}
			for {
				asked := time.Now()
				moved := p.poll()
				// As src/live.ts: at once after a held or moved answer,
				// after poll when the server answered at once (no hold, 429).
				var next <-chan time.Time
				if !moved && time.Since(asked) < time.Second {
					next = time.After(poll)
				} else {
					next = time.After(0)
				}
				select {
				case <-stop:
					return
				case <-next:
				}
			}
		}()
	}
	step := l.next
	write := func() {
		l.write(b, step, 1, 1, 0)
		step++
		time.Sleep(time.Second) // the training job's pace, not a wait for a condition
	}
	// The pages open during the first poll period (each reading its series
	// whole once); what is measured is the steady state after that.
	for opened := time.Now(); time.Since(opened) < 2*poll; {
		write()
	}
	requests.Store(0)
	seriesBytes.Store(0)
	wholeReads.Store(0)
	before, err := cpuTicks(env.servePID)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < window {
		write()
	}
	l.next = step
	after, err := cpuTicks(env.servePID)
	elapsed := time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	return float64(after-before) / clockTicks / elapsed, float64(requests.Load()) / elapsed, float64(seriesBytes.Load()) / 1000 / elapsed,
		float64(wholeReads.Load()) / elapsed
}

// viewer is one emulated open page (src/live.ts and pages/experiment.ts).
type viewer struct {
	ctx         context.Context // ends with the page
	eid, cred   string
	seen        string
	fresh       bool // reads past the server's response cache (after a change, as src/api.ts)
	whole       bool // reads the whole series after a change, not what is new
	held        *heldTail
	requests    *atomic.Int64
	seriesBytes *atomic.Int64
	wholeReads  *atomic.Int64 // series answers without "after"
}

// heldTail is what an emulated page holds of its series: its last point,
// the series' max_wall_time, and the points appended since its last whole
// read (src/dashboards/scalars.ts).
type heldTail struct {
	Step     int64   `json:"step"`
	Wall     float64 `json:"wall_time"`
	Value    float64 `json:"value"`
	MaxWall  float64 `json:"max_wall_time"`
	appended int
}

// poll long-polls the experiment (?waitPast=, as src/live.ts) and reads
// what changed; it says whether the experiment moved.
func (v *viewer) poll() bool {
	var meta struct {
		UpdateTime string `json:"updateTime"`
	}
	path := "/api/experiments/" + v.eid
	if v.seen != "" {
		path += "?waitPast=" + url.QueryEscape(v.seen)
	}
	if v.get(path, &meta) != nil || meta.UpdateTime == v.seen {
		return false
	}
	if v.seen == "" { // the page has just read everything
		v.seen = meta.UpdateTime
		if !v.whole {
			v.readSeries() // what it holds
		}
		return true
	}
	v.seen = meta.UpdateTime
	v.fresh = true
	defer func() { v.fresh = false }()
	base := "/experiment/" + v.eid + "/data/"
	v.get(base+"plugins_listing", nil)
	v.get(base+"runs?format=list", nil)
	v.get(base+"plugin/scalars/tags", nil)
	v.readSeries()
	return true
}

// readSeries reads the card's series: what is new past what the page
// holds, or all of it (whole, or nothing held, or samples points
// appended already).
func (v *viewer) readSeries() {
	const samples = 800
	form := url.Values{"tag": {"metrics/tag_00"}, "runs": {"run_000"}, "samples": {strconv.Itoa(samples)}, "format": {"columns"}}
	if !v.whole && v.held != nil && v.held.appended < samples {
		after, _ := json.Marshal(map[string]*heldTail{"run_000": v.held})
		form.Set("after", string(after))
	}
	var answer map[string]httpapi.ScalarColumns
	if v.do(http.MethodPost, "/experiment/"+v.eid+"/data/plugin/scalars/scalars_multirun", strings.NewReader(form.Encode()), &answer) != nil {
		return
	}
	a, ok := answer["run_000"]
	if !ok {
		return
	}
	if a.After == nil {
		v.wholeReads.Add(1)
	}
	h := heldTail{MaxWall: float64(a.MaxWallTime)}
	if n := len(a.Step); n > 0 {
		h.Step, h.Wall, h.Value = a.Step[n-1], float64(a.WallTimeBase+a.WallTime[n-1]), float64(a.Value[n-1])
	} else if v.held != nil {
		h.Step, h.Wall, h.Value = v.held.Step, v.held.Wall, v.held.Value
	}
	if a.After != nil && v.held != nil {
		h.appended = v.held.appended + len(a.Step)
	}
	v.held = &h
}

func (v *viewer) get(path string, out any) error {
	return v.do(http.MethodGet, path, nil, out)
}

func (v *viewer) do(method, path string, body io.Reader, out any) error {
	v.requests.Add(1)
	req, err := http.NewRequestWithContext(v.ctx, method, env.origin+path, body)
	if err != nil {
		return err
	}
	if v.cred != "" {
		req.Header.Set("Authorization", v.cred)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if v.fresh {
		req.Header.Set("Cache-Control", "no-cache")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if strings.HasSuffix(path, "scalars_multirun") {
		v.seriesBytes.Add(int64(len(data)))
	}
	return json.Unmarshal(data, out)
}

// createToken makes a read token of the owner through the API.
func createToken(name string) (string, error) {
	body, _ := json.Marshal(map[string]any{"name": name, "scopes": []string{"SCOPE_READ"}})
	req, err := http.NewRequest(http.MethodPost, env.origin+"/api/tokens", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+env.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Secret string `json:"secret"`
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("POST /api/tokens: %s %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Secret == "" {
		return "", fmt.Errorf("POST /api/tokens: no secret (%v)", err)
	}
	return out.Secret, nil
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// cpuTicks is a process's user + system CPU time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces), from
	// field 3 on: utime and stime are fields 14 and 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var u, s int64
	if _, err := fmt.Sscan(f[11], &u); err != nil {
		return 0, err
	}
	if _, err := fmt.Sscan(f[12], &s); err != nil {
		return 0, err
	}
	return u + s, nil
}

// waitMaxStep waits until the experiment's run_000 series metrics/tag_00
// holds step, polling its scalars route.
func waitMaxStep(eid string, step int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var pts [][3]any
		v := viewer{ctx: context.Background(), eid: eid, cred: "Bearer " + env.token, fresh: true, requests: new(atomic.Int64), seriesBytes: new(atomic.Int64), wholeReads: new(atomic.Int64)}
		err := v.get("/experiment/"+eid+"/data/plugin/scalars/scalars?run=run_000&tag=metrics%2Ftag_00", &pts)
		if err == nil && len(pts) > 0 && pts[len(pts)-1][1] == float64(step) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("step %d of run_000 not uploaded after %v (%v)", step, timeout, err)
		}
		time.Sleep(500 * time.Millisecond) // polling for a condition, with a deadline
	}
}
