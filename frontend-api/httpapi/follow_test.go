package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
)

// liveExperiment is an experiment service holding one experiment whose
// update time a test moves, counting the reads of it by credential.
type liveExperiment struct {
	experimentsv1.ExperimentServiceClient
	mu      sync.Mutex
	updated time.Time
	reads   map[string]int
}

func (e *liveExperiment) GetExperiment(ctx context.Context, req *experimentsv1.GetExperimentRequest, _ ...grpc.CallOption) (*experimentsv1.GetExperimentResponse, error) {
	md, _ := metadata.FromOutgoingContext(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reads[fmt.Sprint(md.Get("authorization"))]++
	return &experimentsv1.GetExperimentResponse{Experiment: &experimentsv1.Experiment{ExperimentId: req.GetExperimentId(), UpdateTime: timestamppb.New(e.updated)}}, nil
}

func (e *liveExperiment) move(d time.Duration) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updated = e.updated.Add(d)
	return e.updated.Format(time.RFC3339Nano)
}

func (e *liveExperiment) readsBy() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.reads {
		out[k] = v
	}
	return out
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if dl, ok := t.Deadline(); ok && time.Until(dl) < 5*time.Second {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLivePagesShareOneCheck is issue 23's push: pages following an
// experiment long-poll its metadata (?waitPast=its update time). While
// nothing changes they are held, and the experiment is read by one shared
// check (one viewer's credential), not once per viewer; when it changes,
// every viewer gets the new update time.
func TestLivePagesShareOneCheck(t *testing.T) {
	exp := &liveExperiment{updated: time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC), reads: map[string]int{}}
	_, h, srv := startHandler(t, httpapi.Config{Experiments: exp, Live: httpapi.LiveLimits{Check: 5 * time.Millisecond, Wait: time.Hour}})
	t0 := exp.move(0)
	const path = "/api/experiments/e1"
	const viewers = 5
	got := make(chan string, viewers)
	for i := range viewers {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path+"?waitPast="+t0, nil)
			req.Header.Set("Authorization", fmt.Sprintf("Bearer viewer%d", i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				got <- err.Error()
				return
			}
			defer resp.Body.Close()
			var body struct{ UpdateTime string }
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
				got <- fmt.Sprintf("status %d, %v", resp.StatusCode, err)
				return
			}
			got <- body.UpdateTime
		}()
	}
	waitCond(t, "every viewer held", func() bool { return httpapi.LiveWaiting(h, path) == viewers })
	before := exp.readsBy()
	total := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	waitCond(t, "20 checks", func() bool { return total(exp.readsBy()) >= total(before)+20 })
	select {
	case g := <-got:
		t.Fatalf("a viewer was answered (%s) with nothing changed", g)
	default:
	}
	checkers := 0
	for cred, n := range exp.readsBy() {
		if n > before[cred] {
			checkers++
		}
	}
	if checkers != 1 {
		t.Errorf("the checks read with %d viewers' credentials, want one shared check", checkers)
	}

	t1 := exp.move(time.Second)
	for range viewers {
		if g := <-got; g != t1 {
			t.Errorf("a viewer got %q, want the new update time %q", g, t1)
		}
	}
}

// TestLivePollsPerClientAreCapped: one credential holds at most
// --live-max-waits-per-client long polls; the next is answered 429 (the
// page then polls), and another viewer is not affected.
func TestLivePollsPerClientAreCapped(t *testing.T) {
	exp := &liveExperiment{updated: time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC), reads: map[string]int{}}
	_, h, srv := startHandler(t, httpapi.Config{Experiments: exp, Live: httpapi.LiveLimits{Check: time.Hour, Wait: time.Hour, PerClient: 2}})
	url := srv.URL + "/api/experiments/e1?waitPast=" + exp.move(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer alice")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitCond(t, "alice's two polls held", func() bool { return httpapi.LiveWaiting(h, "/api/experiments/e1") == 2 })
	resp, _ := get(t, url, "Authorization", "Bearer alice")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("alice's third poll: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer bob")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitCond(t, "bob's poll held beside alice's", func() bool { return httpapi.LiveWaiting(h, "/api/experiments/e1") == 3 })
}

// TestStopLiveAnswersHeldPolls: a stopping process answers the long polls
// it holds (the page asks again, at another instance) rather than its
// drain waiting for them, and holds no new one.
func TestStopLiveAnswersHeldPolls(t *testing.T) {
	exp := &liveExperiment{updated: time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC), reads: map[string]int{}}
	_, h, srv := startHandler(t, httpapi.Config{Experiments: exp, Live: httpapi.LiveLimits{Check: time.Hour, Wait: time.Hour}})
	url := srv.URL + "/api/experiments/e1?waitPast=" + exp.move(0)
	done := make(chan int, 1)
	go func() {
		resp, _ := get(t, url)
		done <- resp.StatusCode
	}()
	waitCond(t, "the poll held", func() bool { return httpapi.LiveWaiting(h, "/api/experiments/e1") == 1 })
	h.StopLive()
	if code := <-done; code != http.StatusOK {
		t.Errorf("the held poll was answered %d, want 200", code)
	}
	if resp, _ := get(t, url); resp.StatusCode != http.StatusOK {
		t.Errorf("a poll after StopLive: %d, want 200 at once", resp.StatusCode)
	}
}
