// Package compare serves a comparison: the runs of several experiments
// read as one virtual experiment, under /compare/{id1}+{id2}+…/. Client is
// a TensorBoardDataProvider client over the read service that answers for
// a comparison's ID ("id1+id2+id3") as if it were one experiment: each
// call is fanned out to the member experiments (in parallel, bounded),
// every run is named "label/run" (the label is the experiment's name,
// with a short ID when two would read alike), a run filter is split by
// label, and the answers are merged in the comparison's order. So every
// plugin route works on a comparison as on one experiment.
//
// Each member is read with the caller's credential, so the read service
// authorizes each one as usual. A member the caller may not read (or that
// does not exist: the service answers both alike) is left out; only how
// many were left out is told (Comparison.Hidden), never its name or runs.
package compare

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Sep joins the member experiments' IDs in a comparison's ID.
const Sep = "+"

// Limits bound a comparison.
type Limits struct {
	// MaxMembers is how many experiments one comparison may hold; more
	// is answered 400.
	MaxMembers int
	// MaxParallel is how many member experiments one call reads at once.
	MaxParallel int
}

// DefaultLimits: 10 experiments, 4 read at once.
func DefaultLimits() Limits { return Limits{MaxMembers: 10, MaxParallel: 4} }

// OrDefaults returns l with DefaultLimits for each field that is zero.
func (l Limits) OrDefaults() Limits {
	def := DefaultLimits()
	if l.MaxMembers == 0 {
		l.MaxMembers = def.MaxMembers
	}
	if l.MaxParallel == 0 {
		l.MaxParallel = def.MaxParallel
	}
	return l
}

// Validate reports limits that would leave a comparison unbounded.
func (l Limits) Validate() error {
	if l.MaxMembers <= 0 || l.MaxParallel <= 0 {
		return fmt.Errorf("comparison limits must be positive: %+v", l)
	}
	return nil
}

// Settings describes --compare-max-experiments and
// --compare-max-parallel for an assembly's flag set, defaulting to l's values.
func (l *Limits) Settings() []config.Setting {
	return []config.Setting{
		{Name: "compare-max-experiments", Usage: "experiments one comparison (/compare/ID+ID+…/) may hold; more is answered 400", Value: &l.MaxMembers},
		{Name: "compare-max-parallel", Usage: "member experiments of a comparison one request reads at once", Value: &l.MaxParallel},
	}
}

// ParseID splits a comparison's ID into its members' experiment IDs, in
// order. An empty member, the same experiment twice, or more than max
// members is a 400.
func ParseID(id string, max int) ([]string, error) {
	ids := strings.Split(id, Sep)
	if len(ids) > max {
		return nil, route.Errorf(400, "a comparison holds at most %d experiments; this one names %d", max, len(ids))
	}
	seen := map[string]bool{}
	for _, e := range ids {
		if e == "" {
			return nil, route.Errorf(400, "comparison %q: empty experiment ID (IDs are joined with %q)", id, Sep)
		}
		if seen[e] {
			return nil, route.Errorf(400, "comparison names experiment %s twice", e)
		}
		seen[e] = true
	}
	return ids, nil
}

// Member is an experiment of a comparison that the caller may read.
type Member struct {
	ID   string
	Name string
	// Label names the member's runs: "Label/run".
	Label string
	// Created is the experiment's creation time.
	Created *timestamppb.Timestamp
}

// Comparison is a comparison as one caller sees it.
type Comparison struct {
	ID string
	// Members are the experiments the caller may read, in the ID's order.
	Members []Member
	// Hidden is how many of the ID's experiments the caller may not read
	// (or that do not exist).
	Hidden int
}

// Split returns the member a run of the comparison belongs to and the
// run's name in it; ok is false for a name of no member. Labels are made
// so that at most one member's "label/" starts any name (labels).
func (c *Comparison) Split(run string) (m Member, name string, ok bool) {
	for _, m := range c.Members {
		if rest, found := strings.CutPrefix(run, m.Label+"/"); found {
			return m, rest, true
		}
	}
	return Member{}, "", false
}

// member returns the visible member with experiment ID eid.
func (c *Comparison) member(eid string) (Member, bool) {
	for _, m := range c.Members {
		if m.ID == eid {
			return m, true
		}
	}
	return Member{}, false
}

// labels sets each member's Label: its name (its ID when unnamed), and
// the name with the ID's first characters when two members' labels would
// collide: be equal, or one "label/" start the other (then a run name
// could belong to either).
func labels(ms []Member) {
	base := make([]string, len(ms))
	for i, m := range ms {
		base[i] = strings.TrimSpace(m.Name)
		if base[i] == "" {
			base[i] = m.ID
		}
	}
	clash := func(a, b string) bool { return strings.HasPrefix(a+"/", b+"/") || strings.HasPrefix(b+"/", a+"/") }
	for i := range ms {
		ms[i].Label = base[i]
		for j := range ms {
			if i != j && clash(base[i], base[j]) {
				ms[i].Label = fmt.Sprintf("%s [%s]", base[i], shortID(ms[i].ID, ms[j].ID))
				break
			}
		}
	}
}

// shortID is the shortest prefix of id, at least 6 characters, that other
// does not start with.
func shortID(id, other string) string {
	for n := 6; n < len(id); n++ {
		if !strings.HasPrefix(other, id[:n]) {
			return id[:n]
		}
	}
	return id
}

// hidden reports an error that means the caller may not read an
// experiment: the read service answers a missing and a forbidden one alike.
func hidden(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.PermissionDenied:
		return true
	}
	return false
}

// ErrNoneVisible is the answer for a comparison none of whose experiments
// the caller may read: the same as for one experiment they may not read.
var ErrNoneVisible = status.Error(codes.NotFound, "comparison not found: none of its experiments exists or is visible to you")

type ctxKey struct{}

// With returns ctx carrying c: the Client's calls for c.ID are answered
// for c's members (the HTTP handler resolves the comparison once per
// request of a /compare/ route).
func With(ctx context.Context, c *Comparison) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From returns the comparison ctx carries, if any.
func From(ctx context.Context) (*Comparison, bool) {
	c, ok := ctx.Value(ctxKey{}).(*Comparison)
	return c, ok
}

// parallel runs fn(i) for i in [0, n), at most limit at once, and returns
// the first error by index.
func parallel(n, limit int, fn func(i int) error) error {
	errs := make([]error, n)
	turns := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// of returns the comparison ctx carries when eid is its ID; ok is false
// for a call about one experiment.
func of(ctx context.Context, eid string) (c *Comparison, ok bool) {
	c, ok = From(ctx)
	return c, ok && c.ID == eid
}
