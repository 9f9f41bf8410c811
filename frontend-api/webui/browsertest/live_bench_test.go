package browsertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BenchmarkLiveFreshness is the time from a scalar point written to a
// logdir that `tbup upload` watches with its default interval (5 s) to the
// point drawn in an open experiment page (the chart's last step), over
// b.N points written one after the other at random moments. It reports
// the median and the slowest. What bounds it: tbup's interval (up to 5 s
// before the point is read), the page's poll (up to 2.5 s, src/live.ts),
// then one read of the card and a draw.
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
		// A training job writes at any moment of tbup's 5 s cycle, not
		// right after the page drew the last point (which follows one of
		// tbup's reads): a random phase, not a wait for a condition.
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
// interval), with no page open, with 100 signed-in viewers (a credential
// each, so the server's response cache is not shared) and with 100
// signed-out viewers of the same experiment made public. Each viewer does
// what the page does (src/live.ts): polls the experiment every 2.5 s and,
// when it changed, reads the plugin listing, the runs, the scalar tags
// and its card's series past the server's response cache.
func BenchmarkLiveManyViewers(b *testing.B) {
	if env.setupErr != nil {
		b.Fatal(env.setupErr)
	}
	if _, err := cpuTicks(env.servePID); err != nil {
		b.Skipf("no CPU time of tbhub serve: %v", err)
	}
	const pages, window, poll = 100, 30 * time.Second, 2500 * time.Millisecond
	l := startLiveUpload(b, "", "--visibility", "public")
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
		}{
			{"none", 0, nil},
			{"signed-in", pages, func(i int) string { return creds[i] }},
			{"signed-out", pages, func(int) string { return "" }},
		} {
			cpu, reqs := liveLoad(b, l, c.pages, c.cred, window, poll)
			b.ReportMetric(cpu, "cores-"+c.name)
			b.ReportMetric(reqs, "req/s-"+c.name)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// liveLoad runs n emulated pages for window while a point is written each
// second, and returns tbhub serve's CPU use in cores and the pages'
// requests per second.
func liveLoad(b *testing.B, l *liveUpload, n int, cred func(int) string, window, poll time.Duration) (cores, reqPerSec float64) {
	b.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests atomic.Int64
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
			p := viewer{eid: l.eid, cred: cred(i), requests: &requests}
			tick := time.NewTicker(poll)
			defer tick.Stop()
			for {
				p.poll()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	step := 1000
	before, err := cpuTicks(env.servePID)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < window {
		l.write(b, step, 1, 1, 0)
		step++
		time.Sleep(time.Second) // the training job's pace, not a wait for a condition
	}
	after, err := cpuTicks(env.servePID)
	elapsed := time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	return float64(after-before) / clockTicks / elapsed, float64(requests.Load()) / elapsed
}

// viewer is one emulated open page (src/live.ts and pages/experiment.ts).
type viewer struct {
	eid, cred string
	seen      string
	fresh     bool // reads past the server's response cache (after a change, as src/api.ts)
	requests  *atomic.Int64
}

func (v *viewer) poll() {
	var meta struct {
		UpdateTime string `json:"updateTime"`
	}
	if v.get("/api/experiments/"+v.eid, &meta) != nil || meta.UpdateTime == v.seen {
		return
	}
	if v.seen == "" { // the page has just read everything
		v.seen = meta.UpdateTime
		return
	}
	v.seen = meta.UpdateTime
	v.fresh = true
	defer func() { v.fresh = false }()
	base := "/experiment/" + v.eid + "/data/"
	v.get(base+"plugins_listing", nil)
	v.get(base+"runs?format=list", nil)
	v.get(base+"plugin/scalars/tags", nil)
	form := url.Values{"tag": {"metrics/tag_00"}, "runs": {"run_000"}, "samples": {"800"}, "format": {"columns"}}
	v.do(http.MethodPost, base+"plugin/scalars/scalars_multirun", strings.NewReader(form.Encode()), nil)
}

func (v *viewer) get(path string, out any) error {
	return v.do(http.MethodGet, path, nil, out)
}

func (v *viewer) do(method, path string, body io.Reader, out any) error {
	v.requests.Add(1)
	req, err := http.NewRequest(method, env.origin+path, body)
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
	return json.NewDecoder(resp.Body).Decode(out)
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
