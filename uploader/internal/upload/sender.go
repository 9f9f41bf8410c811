package upload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/uploader/internal/client"
)

// sender runs requests: a bounded number at once, each kind paced to the server's
// minimum interval, each call retried under the retry policy. The first permanent
// failure cancels its context, which stops every other request and the upload.
type sender struct {
	ctx   context.Context // outlives an interrupt, so that what was read is flushed
	fail  context.CancelCauseFunc
	retry client.Retry
	prog  *Progress
	slots chan struct{}
	wg    sync.WaitGroup
	pause pause // while a rate limit asked to wait
}

func newSender(parent context.Context, inFlight int, retry client.Retry, prog *Progress) *sender {
	ctx, fail := context.WithCancelCause(context.WithoutCancel(parent))
	return &sender{ctx: ctx, fail: fail, retry: retry, prog: prog, slots: make(chan struct{}, inFlight)}
}

// err is the failure that stopped sending, nil while it goes on.
func (s *sender) err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// start runs send in a goroutine once one of the slots is free, then done with
// its error; a failure stops all sending first.
func (s *sender) start(send func(ctx context.Context) error, done func(err error)) {
	s.wg.Add(1)
	s.slots <- struct{}{}
	go func() {
		defer s.wg.Done()
		err := send(s.ctx)
		if err != nil {
			s.fail(err) // before the slot is free: no request starts after a failure
		}
		<-s.slots
		done(err)
	}()
}

// wait waits for every request started to end. After ctx is done (Ctrl-C) the
// requests get a minute more, then sending is failed.
func (s *sender) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		select {
		case <-done:
		case <-time.After(time.Minute):
			s.fail(errors.New("interrupted before the server acknowledged everything"))
			<-done
		}
	}
}

// call runs one RPC under the retry policy, reporting retries as progress:
// the activity says what is awaited while it is, then what it said before.
func (s *sender) call(ctx context.Context, fn func(ctx context.Context) error) error {
	r := s.retry
	var before, said any
	r.OnRetry = func(err error, wait time.Duration) {
		s.prog.Retries.Add(1)
		why := fmt.Sprintf("waiting for the server (%s)", status.Code(err))
		if where, ok := client.UnreachableAt(err); ok {
			why = where
		}
		if said == nil {
			before = s.prog.activity.Load()
		}
		said = fmt.Sprintf("%s, retrying in %v", why, wait.Round(100*time.Millisecond))
		s.prog.activity.Store(said)
	}
	err := r.Do(ctx, func(ctx context.Context) error {
		if err := s.pause.wait(ctx); err != nil {
			return err
		}
		err := fn(ctx)
		if d, ok := client.RetryDelay(err); ok {
			s.pause.hold(d)
		}
		return err
	})
	if said != nil && before != nil {
		s.prog.activity.CompareAndSwap(said, before)
	}
	return err
}

// rejected reports points the server refused for good (it stores the rest of the
// request) and says whether err was such a refusal. Resending cannot help, so the
// upload goes on and ends with an error that counts them.
func (s *sender) rejected(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return false
	}
	n := 0
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				s.prog.warn("the server rejected %s", v.GetDescription())
				n++
			}
		}
	}
	if n == 0 {
		s.prog.warn("the server rejected a request: %s", st.Message())
		n = 1
	}
	s.prog.Rejected.Add(int64(n))
	return true
}

// pause holds every request of an upload back while the server's rate
// limit asked one of them to wait (RetryInfo): the others would only be
// refused too.
type pause struct {
	mu    sync.Mutex
	until time.Time
}

// hold makes requests wait d from now (or longer, if asked before).
func (p *pause) hold(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at := time.Now().Add(d); at.After(p.until) {
		p.until = at
	}
}

// wait returns once no pause is on, or with ctx's error.
func (p *pause) wait(ctx context.Context) error {
	p.mu.Lock()
	d := time.Until(p.until)
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pacer keeps requests of one kind at least interval apart, as the server asks.
type pacer struct {
	interval time.Duration
	mu       sync.Mutex
	next     time.Time // when the next request may go
}

// wait blocks until the next request may go, and books the slot after it.
func (p *pacer) wait(prog *Progress) {
	if p.interval <= 0 {
		return
	}
	p.mu.Lock()
	now := time.Now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.interval)
	p.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		prog.setActivity(fmt.Sprintf("pacing requests to the server's limit (%v apart)", p.interval))
		time.Sleep(d)
	}
}
