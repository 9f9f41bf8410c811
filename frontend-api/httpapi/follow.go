package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/live"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
)

// LiveLimits bound the long polls of live pages (?waitPast= on an
// experiment's or a comparison's metadata route): how often the one check
// per followed experiment runs, how long a poll is held, and how many one
// client holds (docs/operations.md). Settings lists their flags.
type LiveLimits = live.Limits

// DefaultLiveLimits: a check every second, 25 s per poll, 128 per client.
func DefaultLiveLimits() LiveLimits { return live.DefaultLimits() }

// waitParam asks a metadata route to answer once the update time differs
// from the value given, or after LiveLimits.Wait (a long poll).
const waitParam = "waitPast"

// followable is fn (a route answering JSON with an updateTime: one
// experiment's, a comparison's) made able to long-poll: with ?waitPast=T
// the answer is held while the caller's own read says T and the shared
// check (package live) sees no change. The answer is always the caller's
// own read, with its credential, so what is shared between viewers is only
// when to read.
func (h *Handler) followable(fn route.Func) route.Func {
	return func(w http.ResponseWriter, r *route.Request) error {
		past, ok := r.URL.Query()[waitParam]
		if !ok {
			return fn(w, r)
		}
		// The request's own context (its credential, a comparison's
		// members) without its deadline: the hold outlasts CallTimeout.
		base := context.WithoutCancel(r.Ctx)
		read := func(parent context.Context) (*bufferedAnswer, error) {
			ctx, cancel := context.WithTimeout(base, h.cfg.CallTimeout)
			defer cancel()
			defer context.AfterFunc(parent, cancel)()
			b := newBufferedAnswer()
			err := fn(b, &route.Request{Request: r.Request, EID: r.EID, Ctx: ctx})
			return b, err
		}
		ans, err := read(r.Context())
		if err != nil || ans.updateTime() != past[0] {
			return ans.send(w, err)
		}
		version := func(ctx context.Context) (string, error) {
			a, err := read(ctx)
			if err == nil && a.code >= 300 {
				err = errors.New(http.StatusText(a.code))
			}
			return a.updateTime(), err
		}
		moved, err := h.live.Wait(r.Context(), r.URL.Path, h.liveClient(r), past[0], version)
		if errors.Is(err, live.ErrTooMany) {
			w.Header().Set("Retry-After", "5")
			return route.Errorf(http.StatusTooManyRequests, "too many live pages open (--live-max-waits-per-client): poll instead")
		}
		if !moved || r.Context().Err() != nil {
			return ans.send(w, nil) // as it stands: the page asks again
		}
		ans, err = read(r.Context())
		return ans.send(w, err)
	}
}

// StopLive answers every held long poll and holds no more, for a process
// that is stopping: its drain does not wait for them (lifecycle OnStop).
func (h *Handler) StopLive() { h.live.Close() }

// liveClient names the caller for LiveLimits.PerClient: its credential, or
// signed out its address.
func (h *Handler) liveClient(r *route.Request) string {
	if cred, err := h.creds(r.Request); err == nil && cred != "" {
		return "cred " + cred
	}
	if a, ok := clientaddr.FromContext(r.Context()); ok {
		return "addr " + a.String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr " + host
}

// bufferedAnswer is a route's answer kept to be sent later, or not.
type bufferedAnswer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func newBufferedAnswer() *bufferedAnswer {
	return &bufferedAnswer{header: http.Header{}, code: http.StatusOK}
}

func (b *bufferedAnswer) Header() http.Header         { return b.header }
func (b *bufferedAnswer) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedAnswer) WriteHeader(code int)        { b.code = code }

// updateTime is the answer's updateTime field, "" if it has none.
func (b *bufferedAnswer) updateTime() string {
	var v struct {
		UpdateTime string `json:"updateTime"`
	}
	if b.code >= 300 || json.Unmarshal(b.body.Bytes(), &v) != nil {
		return ""
	}
	return v.UpdateTime
}

// send writes the answer to w, or returns err for the caller to answer.
func (b *bufferedAnswer) send(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.code)
	_, werr := w.Write(b.body.Bytes())
	return werr
}
