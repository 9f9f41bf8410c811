// Package inspect reports what an upload of a logdir would send, without a server:
// runs, series, point counts, step ranges, value sums, tensor shapes, blob counts
// and the errors met on the way. Its JSON form has the keys and meaning of the
// corpus's EXPECTED.json.
//
// Memory stays bounded however large the logdir: a series whose steps only grow (the
// usual case) is summarized as it streams by. When a step repeats or goes back (a
// restarted job rewriting steps, last write wins), that run is read a second time
// with the affected series kept point by point, so the answer is exact either way.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/tbhub/tbhub/uploader/internal/event"
	"github.com/tbhub/tbhub/uploader/internal/eventfile"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// Options tune an inspection.
type Options struct {
	// MaxRecordSize caps one record's size (eventfile.DefaultMaxRecordSize if 0).
	MaxRecordSize int
	// Workers is how many runs are read at once (GOMAXPROCS if 0).
	Workers int
	// Points, if set, is called with every point of every series (unknown
	// classes included), in file order, as migrated: a rewritten step
	// comes again, later. Runs are read in parallel, so calls for different
	// runs may be concurrent; the point is valid only during the call.
	Points func(run string, s *migrate.Series, p *migrate.Point)
}

// Error reasons, as in EXPECTED.json.
const (
	ReasonTruncated      = "truncated_record"
	ReasonBadLengthCRC   = "bad_length_crc"
	ReasonBadDataCRC     = "bad_data_crc"
	ReasonUnparsable     = "unparsable_event"
	ReasonUnreadable     = "unreadable_file"
	ReasonRecordTooLarge = "record_too_large"
)

// FileError is a problem met reading one event file.
type FileError struct {
	Run    string `json:"run"`
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Series summarizes one known-class time series.
type Series struct {
	Plugin    string
	DataClass migrate.DataClass
	Points    int
	MinStep   int64
	MaxStep   int64
	Dropped   int

	// Scalars.
	Sum                 float64
	NaN, PosInf, NegInf int
	Invalid             int
	Last                float64
	LastValid           bool
	// Tensors: the dtype and shape of the point at MaxStep.
	Shape migrate.TensorShape
	// Blob sequences.
	Blobs     int
	BlobBytes int64
	MaxLength int
}

// UnknownSeries is a series whose data class is unknown: it is not uploaded.
type UnknownSeries struct {
	Run    string `json:"run"`
	Tag    string `json:"tag"`
	Plugin string `json:"plugin"`
	Points int    `json:"points"`
}

// Totals sums a report.
type Totals struct {
	Runs                  int   `json:"runs"`
	Series                int   `json:"series"`
	ScalarPoints          int   `json:"scalar_points"`
	TensorPoints          int   `json:"tensor_points"`
	BlobSequencePoints    int   `json:"blob_sequence_points"`
	Blobs                 int   `json:"blobs"`
	BlobBytes             int64 `json:"blob_bytes"`
	EventFiles            int   `json:"event_files"`
	Records               int   `json:"records"`
	Errors                int   `json:"errors"`
	DroppedPluginMismatch int   `json:"dropped_plugin_mismatch"`
	UnknownSeries         int   `json:"unknown_series"`
	UnknownPoints         int   `json:"unknown_points"`
}

// Report is the result of an inspection.
type Report struct {
	Logdir        string
	Runs          map[string]map[string]*Series
	UnknownSeries []UnknownSeries
	Errors        []FileError
	Totals        Totals
	// StartTimes are TensorBoard's run start times: the wall time of each
	// run's first event (the file_version event, usually), for the runs
	// whose files hold one. Not part of the JSON (EXPECTED.json has none).
	StartTimes map[string]float64
}

// Inspect reads every event file of the logdir.
func Inspect(ctx context.Context, src logdir.Source, opts Options) (*Report, error) {
	runs, err := src.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return inspectRuns(ctx, src, runs, opts)
}

// inspectRuns reads the runs of a scanned logdir.
func inspectRuns(ctx context.Context, src logdir.Source, runs []logdir.Run, opts Options) (*Report, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	results := make([]*runResult, len(runs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, max(len(runs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker reuses one read buffer and one decoded event (whose
			// slices grow to the largest summary seen) for all its files.
			var buf []byte
			var ev event.Event
			for i := range next {
				var res *runResult
				res, buf = inspectRun(ctx, src, runs[i], opts, nil, buf, &ev)
				if len(res.rewritten) > 0 {
					res, buf = inspectRun(ctx, src, runs[i], opts, res.rewritten, buf, &ev)
				}
				results[i] = res
			}
		}()
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return assemble(src, results), nil
}

func assemble(src logdir.Source, results []*runResult) *Report {
	rep := &Report{Logdir: path.Base(strings.TrimRight(src.String(), "/")), Runs: map[string]map[string]*Series{}, StartTimes: map[string]float64{}}
	t := &rep.Totals
	for _, res := range results {
		t.Runs++
		t.EventFiles += res.eventFiles
		t.Records += res.records
		rep.Errors = append(rep.Errors, res.errors...)
		tags := map[string]*Series{}
		rep.Runs[res.name] = tags
		if res.started {
			rep.StartTimes[res.name] = res.startTime
		}
		for _, st := range res.series {
			s := st.finish()
			t.DroppedPluginMismatch += s.Dropped
			if s.DataClass == migrate.ClassUnknown {
				rep.UnknownSeries = append(rep.UnknownSeries, UnknownSeries{Run: res.name, Tag: st.series.Tag, Plugin: s.Plugin, Points: s.Points})
				t.UnknownSeries++
				t.UnknownPoints += s.Points
				continue
			}
			tags[st.series.Tag] = s
			t.Series++
			switch s.DataClass {
			case migrate.ClassScalar:
				t.ScalarPoints += s.Points
			case migrate.ClassTensor:
				t.TensorPoints += s.Points
			case migrate.ClassBlobSequence:
				t.BlobSequencePoints += s.Points
				t.Blobs += s.Blobs
				t.BlobBytes += s.BlobBytes
			}
		}
	}
	t.Errors = len(rep.Errors)
	sort.Slice(rep.Errors, func(i, j int) bool {
		a, b := rep.Errors[i], rep.Errors[j]
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Offset < b.Offset
	})
	sort.Slice(rep.UnknownSeries, func(i, j int) bool {
		a, b := rep.UnknownSeries[i], rep.UnknownSeries[j]
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		return a.Tag < b.Tag
	})
	return rep
}

type runResult struct {
	name       string
	series     []*seriesStats
	errors     []FileError
	records    int
	eventFiles int
	// rewritten names series whose steps did not only grow: they need an exact pass.
	rewritten map[string]bool
	// startTime is the wall time of the run's first event, if started.
	startTime float64
	started   bool
}

// inspectRun reads one run's files in order. Series named in exact are kept point by
// point; the others are summarized as they stream.
// buf is a read buffer to reuse (nil: allocate one sized to the files); the buffer
// used, possibly grown, is returned for the next run. ev is scratch space for decoding.
func inspectRun(ctx context.Context, src logdir.Source, run logdir.Run, opts Options, exact map[string]bool, buf []byte, ev *event.Event) (*runResult, []byte) {
	res := &runResult{name: run.Name}
	mr := migrate.NewRun()
	var stats []*seriesStats
	emit := func(s *migrate.Series, p *migrate.Point) {
		if s.Index == len(stats) { // a new series: they are numbered as they appear
			stats = append(stats, newSeriesStats(s, exact[s.Tag]))
		}
		stats[s.Index].add(p)
		if opts.Points != nil && exact == nil { // the exact pass reads the same points again
			opts.Points(run.Name, s, p)
		}
	}
	maxRecord := opts.MaxRecordSize
	if maxRecord <= 0 {
		maxRecord = eventfile.DefaultMaxRecordSize
	}
	for _, f := range run.Files {
		if ctx.Err() != nil {
			return res, buf
		}
		if len(buf) < readBufferSize && (f.Size < 0 || int64(len(buf)) < f.Size+16) {
			size := int64(readBufferSize)
			if f.Size >= 0 {
				size = min(size, max(f.Size+16, 4096))
			}
			buf = make([]byte, size)
		}
		res.eventFiles++
		fileErr := func(off int64, reason, detail string) {
			res.errors = append(res.errors, FileError{Run: run.Name, File: f.Name, Offset: off, Reason: reason, Detail: detail})
		}
		rc, err := src.Open(ctx, f.Path, 0)
		if err != nil {
			fileErr(0, ReasonUnreadable, err.Error())
			continue
		}
		rd := eventfile.NewReader(rc, 0, eventfile.WithMaxRecordSize(maxRecord), eventfile.WithBuffer(buf))
	records:
		for {
			rec, err := rd.Next()
			switch {
			case err == nil:
			case err == io.EOF:
				break records
			case errors.Is(err, eventfile.ErrBadDataCRC):
				fileErr(rec.Offset, ReasonBadDataCRC, "")
				continue
			case errors.Is(err, eventfile.ErrTooLarge):
				fileErr(rec.Offset, ReasonRecordTooLarge, err.Error())
				continue
			case errors.Is(err, eventfile.ErrTruncated):
				fileErr(rec.Offset, ReasonTruncated, "")
				break records
			case errors.Is(err, eventfile.ErrBadLengthCRC):
				fileErr(rec.Offset, ReasonBadLengthCRC, "")
				break records
			default:
				fileErr(rec.Offset, ReasonUnreadable, err.Error())
				break records
			}
			if err := event.Decode(rec.Data, ev); err != nil {
				fileErr(rec.Offset, ReasonUnparsable, err.Error())
				break records
			}
			if !res.started {
				res.started, res.startTime = true, ev.WallTime
			}
			res.records++
			mr.Add(ev, emit)
		}
		rc.Close()
		buf = rd.Buffer()
	}
	res.series = stats
	for _, st := range stats {
		if st.rewritten {
			if res.rewritten == nil {
				res.rewritten = map[string]bool{}
			}
			res.rewritten[st.series.Tag] = true
		}
	}
	return res, buf
}

// readBufferSize is the largest read buffer allocated up front; records larger than
// the buffer grow it.
const readBufferSize = 256 << 10

// pointSummary is what the exact pass keeps of each step.
type pointSummary struct {
	value     float64
	valid     bool
	blobs     int32
	blobBytes int64
}

type seriesStats struct {
	series *migrate.Series
	class  migrate.DataClass

	n                int
	minStep, maxStep int64
	rewritten        bool // a step repeated or went back (streaming mode only)
	exact            map[int64]pointSummary
	atMax            pointSummary // the point at maxStep
	shape            migrate.TensorShape
	dims             []int64
	sum              fsum
	nan, pinf, ninf  int
	invalid          int
	blobs, maxLength int
	blobBytes        int64
}

func newSeriesStats(s *migrate.Series, exact bool) *seriesStats {
	st := &seriesStats{series: s, class: s.Class()}
	if exact {
		st.exact = map[int64]pointSummary{}
	}
	return st
}

func (st *seriesStats) summarize(p *migrate.Point) pointSummary {
	switch st.class {
	case migrate.ClassScalar:
		v, ok := migrate.ScalarValue(p)
		return pointSummary{value: v, valid: ok}
	case migrate.ClassBlobSequence:
		c, b := migrate.BlobStats(st.series, p)
		return pointSummary{blobs: int32(c), blobBytes: b}
	}
	return pointSummary{}
}

func (st *seriesStats) add(p *migrate.Point) {
	if st.rewritten {
		return
	}
	step := p.Step
	if st.exact == nil && st.n > 0 && step <= st.maxStep {
		st.rewritten = true
		return
	}
	ps := st.summarize(p)
	if st.n == 0 || step >= st.maxStep {
		if st.class == migrate.ClassTensor {
			st.shape = migrate.TensorInfo(p, st.dims)
			st.dims = st.shape.Dims
		}
		st.atMax = ps
	}
	if st.exact != nil {
		if st.n == 0 || step > st.maxStep {
			st.maxStep = step
		}
		if st.n == 0 || step < st.minStep {
			st.minStep = step
		}
		st.n = 1 // marks "seen"; the count comes from the map
		st.exact[step] = ps
		return
	}
	if st.n == 0 {
		st.minStep = step
	}
	st.maxStep = step
	st.n++
	st.count(ps)
}

func (st *seriesStats) count(ps pointSummary) {
	switch st.class {
	case migrate.ClassScalar:
		switch v := ps.value; {
		case !ps.valid:
			st.invalid++
		case math.IsNaN(v):
			st.nan++
		case math.IsInf(v, 1):
			st.pinf++
		case math.IsInf(v, -1):
			st.ninf++
		default:
			st.sum.add(v)
		}
	case migrate.ClassBlobSequence:
		st.blobs += int(ps.blobs)
		st.blobBytes += ps.blobBytes
		st.maxLength = max(st.maxLength, int(ps.blobs))
	}
}

func (st *seriesStats) finish() *Series {
	if st.exact != nil {
		st.n = len(st.exact)
		for _, ps := range st.exact {
			st.count(ps)
		}
	}
	s := &Series{
		Plugin:    st.series.Plugin(),
		DataClass: st.class,
		Points:    st.n,
		MinStep:   st.minStep,
		MaxStep:   st.maxStep,
		Dropped:   st.series.Dropped,
		Sum:       st.sum.value(),
		NaN:       st.nan,
		PosInf:    st.pinf,
		NegInf:    st.ninf,
		Invalid:   st.invalid,
		Last:      st.atMax.value,
		LastValid: st.atMax.valid,
		Shape:     st.shape,
		Blobs:     st.blobs,
		BlobBytes: st.blobBytes,
		MaxLength: st.maxLength,
	}
	return s
}

// String is a one-line description of a file error.
func (e FileError) String() string {
	s := fmt.Sprintf("%s/%s at byte %d: %s", e.Run, e.File, e.Offset, e.Reason)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}
