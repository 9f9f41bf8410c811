// Package runstable serves tbhub's runs table route (the web UI's Runs
// tab): per run of an experiment, its hparams as the hparams plugin's
// session start info gives them, and for the scalar tags asked for, the
// last point's value and step and the series' minimum and maximum.
package runstable

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/hparams"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/schemas/readhint"

	"github.com/tbhub/tbhub/services/serverkit/config"
)

// Limits bound one answer: MaxSeries is the most runs × tags it reads
// (one series each, twice: its last point and its extremes).
type Limits struct {
	MaxSeries int
}

// DefaultLimits: 20,000 series (1,000 runs × 20 tags).
func DefaultLimits() Limits { return Limits{MaxSeries: 20_000} }

// OrDefaults is l with DefaultLimits' value for each field that is zero.
func (l Limits) OrDefaults() Limits {
	if l.MaxSeries == 0 {
		l.MaxSeries = DefaultLimits().MaxSeries
	}
	return l
}

// Validate refuses a negative limit.
func (l Limits) Validate() error {
	if l.MaxSeries < 0 {
		return fmt.Errorf("--runs-table-max-series=%d: must be positive", l.MaxSeries)
	}
	return nil
}

// Settings describes --runs-table-max-series for an assembly's flag set, defaulting to l's value.
func (l *Limits) Settings() []config.Setting {
	return []config.Setting{
		{Name: "runs-table-max-series", Usage: "runs × tags one runs table answer reads; more is answered 400", Value: &l.MaxSeries},
	}
}

// extremesPoints is how many points per series the extremes read asks
// for; with the bucketed read (withBuckets: one bucket over the whole
// series) the answer is its first, last, lowest, highest and first NaN
// points, so the series' own extremes are among them whatever the count.
const extremesPoints = 100

// withBuckets returns ctx asking the read service for the whole series as
// one bucket (readhint.BucketsKey).
func withBuckets(ctx context.Context) context.Context {
	return readhint.WithBuckets(ctx, 1, nil, nil)
}

// Metric is one series' summary in the table.
type Metric struct {
	Last route.Float `json:"last"`
	Step int64       `json:"step"`
	Min  route.Float `json:"min"`
	Max  route.Float `json:"max"`
}

// Row is one run.
type Row struct {
	Run string `json:"run"`
	// HParams by name: numbers, strings and booleans; absent when the
	// run belongs to no hparams session.
	HParams map[string]any `json:"hparams,omitempty"`
	// Metrics by tag, for the tags asked for that the run has.
	Metrics map[string]Metric `json:"metrics,omitempty"`
}

// Plugin serves the route.
type Plugin struct {
	*route.Env
	Limits Limits
}

// RunsTable answers GET .../data/runs_table?tag=T&tag=U: {"runs": [Row,
// ...]} with every run of the experiment in name order. A request for more
// runs × tags than Limits.MaxSeries is 400 before anything is read but the
// runs list.
func (h Plugin) RunsTable(w http.ResponseWriter, r *route.Request) error {
	tags := slices.Compact(slices.Sorted(slices.Values(r.URL.Query()["tag"])))
	runs, err := h.RunNames(r)
	if err != nil {
		return err
	}
	slices.Sort(runs)
	if n := len(runs) * len(tags); n > h.Limits.MaxSeries {
		return route.Errorf(http.StatusBadRequest, "%d runs × %d tags is %d series; a runs table reads at most %d: choose fewer tags", len(runs), len(tags), n, h.Limits.MaxSeries)
	}
	var (
		hp             map[string]map[string]any
		last, extremes []route.ScalarSeries
	)
	reads := []func() error{func() error {
		byRun, err := hparams.Plugin{Env: h.Env}.RunHParams(r, runs)
		hp = map[string]map[string]any{}
		for run, values := range byRun {
			hp[run] = map[string]any{}
			for name, v := range values {
				hp[run][name] = v.AsInterface()
			}
		}
		return err
	}}
	if len(tags) > 0 {
		f := route.Filter(nil, tags)
		reads = append(reads,
			func() (err error) {
				// Downsampling always keeps a series' latest point.
				last, err = h.ReadScalars(r, "scalars", f, 1)
				return err
			},
			func() (err error) {
				extremes, err = h.ReadScalars(&route.Request{Request: r.Request, EID: r.EID, Ctx: withBuckets(r.Ctx)}, "scalars", f, extremesPoints)
				return err
			})
	}
	if err := route.Parallel(reads...); err != nil {
		return err
	}
	rows := make([]Row, len(runs))
	index := map[string]int{}
	for i, run := range runs {
		rows[i] = Row{Run: run, HParams: hp[run]}
		index[run] = i
	}
	metric := func(run, tag string) (*Metric, bool) {
		i, ok := index[run]
		if !ok {
			return nil, false
		}
		if rows[i].Metrics == nil {
			rows[i].Metrics = map[string]Metric{}
		}
		m := rows[i].Metrics[tag]
		return &m, true
	}
	for _, s := range last {
		steps := s.Data.GetStep()
		if len(steps) == 0 {
			continue
		}
		m, ok := metric(s.Run, s.Tag)
		if !ok {
			continue
		}
		j := len(steps) - 1
		m.Last, m.Step = route.Float(s.Data.GetValue()[j]), steps[j]
		m.Min, m.Max = m.Last, m.Last
		rows[index[s.Run]].Metrics[s.Tag] = *m
	}
	for _, s := range extremes {
		m, ok := metric(s.Run, s.Tag)
		if !ok {
			continue
		}
		if _, had := rows[index[s.Run]].Metrics[s.Tag]; !had {
			continue // no last point: written between the reads
		}
		lo, hi := float64(m.Min), float64(m.Max)
		for _, v := range s.Data.GetValue() {
			if f := float64(v); !math.IsNaN(f) {
				lo, hi = nanMin(lo, f), nanMax(hi, f)
			}
		}
		m.Min, m.Max = route.Float(lo), route.Float(hi)
		rows[index[s.Run]].Metrics[s.Tag] = *m
	}
	return route.WriteJSON(w, map[string]any{"runs": rows})
}

// nanMin and nanMax are min and max where a NaN (a series whose only
// points so far are NaN) gives way to a number.
func nanMin(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return math.Min(a, b)
}

func nanMax(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return math.Max(a, b)
}
