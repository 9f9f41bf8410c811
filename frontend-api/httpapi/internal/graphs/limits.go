package graphs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/frontend-api/httperr"
	"github.com/tbhub/tbhub/schemas/pbtxt"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// A graph answer is text computed from a blob anyone who may read the
// experiment stored, served to anyone it is shared with, anonymous
// readers of a public experiment included, and the text can be far larger
// than the blob: indentation grows with the square of nesting (a 50 KB
// GraphDef whose attribute nests 3,000 deep is 216 MB of text), and a
// Keras model's conversion repeats its scope name in every node name and
// input (a 150 KB config with a 100 KiB name and 1,000 layers is 205 MB).
// Limits says how far one answer may go; the Plugin applies them:
//
//   - Bytes: the text stops being written once it would pass
//     MaxAnswerBytes, and the answer is 413 (so is a Keras conversion
//     whose node names and inputs alone pass it). An ordinary large graph
//     fits: a 100 MB GraphDef of ResNet weights is 282 MB of text.
//   - Nesting: a message nested deeper than MaxDepth in the text (real
//     graphs stay near 10 levels), or a Keras model nested deeper than
//     MaxDepth in models, is 413 before anything deeper is read or written.
//   - Names: a Keras node's name under the scopes of its models longer than
//     MaxNameBytes is 413.
//   - Work per blob: answers (and the 413s) are kept by blob key (which
//     changes whenever the blob's content can) and the query that shaped
//     them, up to MaxCacheBytes, oldest dropped first; readers asking for
//     an answer being computed wait for it, so N readers of one graph cost
//     one conversion. At most MaxConversions run at once; the others wait
//     for a turn while their request lasts.
type Limits struct {
	MaxAnswerBytes int
	MaxDepth       int
	MaxNameBytes   int
	MaxCacheBytes  int
	MaxConversions int
}

// DefaultLimits: 320 MiB per answer, 100 levels, 4 KiB names, 128 MiB of
// cache, 2 conversions at once.
func DefaultLimits() Limits {
	return Limits{MaxAnswerBytes: 320 << 20, MaxDepth: 100, MaxNameBytes: 4 << 10, MaxCacheBytes: 128 << 20, MaxConversions: 2}
}

// OrDefaults is l with DefaultLimits' value for each field that is zero.
func (l Limits) OrDefaults() Limits {
	def := DefaultLimits()
	for _, f := range []struct{ v, def *int }{
		{&l.MaxAnswerBytes, &def.MaxAnswerBytes}, {&l.MaxDepth, &def.MaxDepth}, {&l.MaxNameBytes, &def.MaxNameBytes},
		{&l.MaxCacheBytes, &def.MaxCacheBytes}, {&l.MaxConversions, &def.MaxConversions},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return l
}

// Settings describes --graph-max-answer-bytes, --graph-max-depth,
// --graph-max-name-bytes, --graph-cache-bytes and --graph-max-conversions
// for an assembly's flag set, defaulting to l's values.
func (l *Limits) Settings() []config.Setting {
	return []config.Setting{
		{Name: "graph-max-answer-bytes", Usage: "bytes of one graph's text (graphs/graph, graphs/run_metadata); a larger one is answered 413", Value: &l.MaxAnswerBytes},
		{Name: "graph-max-depth", Usage: "nesting of messages in a graph's text, and of models in a Keras model; deeper is answered 413", Value: &l.MaxDepth},
		{Name: "graph-max-name-bytes", Usage: "bytes of a Keras layer's name under its models' scopes; longer is answered 413", Value: &l.MaxNameBytes},
		{Name: "graph-cache-bytes", Usage: "bytes of graph answers kept for later readers of the same graph", Value: &l.MaxCacheBytes},
		{Name: "graph-max-conversions", Usage: "graphs converted to text at once; other readers wait for a turn", Value: &l.MaxConversions},
	}
}

// Validate reports limits that would leave graph answers unbounded.
func (l Limits) Validate() error {
	if l.MaxAnswerBytes <= 0 || l.MaxDepth <= 0 || l.MaxNameBytes <= 0 || l.MaxCacheBytes <= 0 || l.MaxConversions <= 0 {
		return fmt.Errorf("graph limits must be positive: %+v", l)
	}
	return nil
}

// tooLarge is the answer for a graph past its limits: what passed which.
func tooLarge(format string, args ...any) error {
	return route.Errorf(http.StatusRequestEntityTooLarge, format, args...)
}

// text writes m as text-format within l.
func (l Limits) text(m proto.Message, what string) ([]byte, error) {
	b, err := pbtxt.MarshalLimited(m, pbtxt.Limits{MaxBytes: l.MaxAnswerBytes, MaxDepth: l.MaxDepth})
	switch {
	case errors.Is(err, pbtxt.ErrTooLarge):
		return nil, tooLarge("the text of %s is larger than %d bytes, this server's limit", what, l.MaxAnswerBytes)
	case errors.Is(err, pbtxt.ErrTooDeep):
		return nil, tooLarge("%s nests messages deeper than %d levels, this server's limit", what, l.MaxDepth)
	}
	return b, err
}

// answers holds the graph answers computed from blobs (see Limits): each
// key's answer is computed once while it stays cached, however many
// readers ask for it.
type answers struct {
	maxBytes int
	turns    chan struct{} // a conversion holds one

	mu      sync.Mutex
	done    map[string]answer
	order   []string // keys of done, oldest first
	total   int      // bytes of done
	running map[string]*pending
}

// answer is a text, or the client error (*httperr.Error) computing it
// ended with; other errors (a failed call, a caller gone) are not kept.
type answer struct {
	body []byte
	err  error
}

func (a answer) size(key string) int {
	n := len(key) + len(a.body)
	if a.err != nil {
		n += len(a.err.Error())
	}
	return n
}

type pending struct {
	done chan struct{}
	answer
}

func newAnswers(l Limits) *answers {
	return &answers{maxBytes: l.MaxCacheBytes, turns: make(chan struct{}, l.MaxConversions),
		done: map[string]answer{}, running: map[string]*pending{}}
}

// get returns key's answer: the kept one, the one being computed (waited
// for while ctx lasts), or compute's, run when a turn is free.
func (a *answers) get(ctx context.Context, key string, compute func() ([]byte, error)) ([]byte, error) {
	for {
		a.mu.Lock()
		if e, ok := a.done[key]; ok {
			a.mu.Unlock()
			return e.body, e.err
		}
		p, ok := a.running[key]
		if !ok {
			p = &pending{done: make(chan struct{})}
			a.running[key] = p
			a.mu.Unlock()
			p.body, p.err = a.run(ctx, compute)
			a.finish(key, p)
			return p.body, p.err
		}
		a.mu.Unlock()
		select {
		case <-p.done:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		if keep(p.err) {
			return p.body, p.err
		}
		// It failed for its own caller (gone, or a call failed): try again.
	}
}

// run runs compute in a turn.
func (a *answers) run(ctx context.Context, compute func() ([]byte, error)) ([]byte, error) {
	select {
	case a.turns <- struct{}{}:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-a.turns }()
	return compute()
}

// keep says whether an answer ending with err is kept: an answer, or a
// client error of the blob's content.
func keep(err error) bool {
	var e *httperr.Error
	return err == nil || errors.As(err, &e)
}

// finish keeps p's answer if it may be kept and fits, dropping the oldest
// answers to make room, and wakes p's waiters.
func (a *answers) finish(key string, p *pending) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.running, key)
	close(p.done)
	n := p.size(key)
	if !keep(p.err) || n > a.maxBytes {
		return
	}
	for a.total+n > a.maxBytes && len(a.order) > 0 {
		old := a.order[0]
		a.order = a.order[1:]
		a.total -= a.done[old].size(old)
		delete(a.done, old)
	}
	a.done[key] = p.answer
	a.order = append(a.order, key)
	a.total += n
}
