// Package verify compares a logdir with what a tbhub server holds for an
// experiment, series by series: every step, wall time and value, every
// tensor, and every blob's size and CRC32C. The logdir is read as
// `tbup inspect` reads it (package inspect: TensorBoard's migration rules),
// with the last point written at a step winning, and filtered as
// `tbup upload` filters it (the server's plugins and size limits); the server
// is read through TensorBoard's export API, as `tbup export` reads it.
package verify

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/inspect"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// Options say what an upload of the logdir would have sent.
type Options struct {
	// Plugins are the plugins the server takes (an upload skips the others).
	Plugins map[string]bool
	// MaxTensorPointSize and MaxBlobSize are the server's limits, in bytes
	// (negative: none); an upload skips larger tensors and blobs.
	MaxTensorPointSize, MaxBlobSize int64
	// MaxRecordSize caps one event record (as for inspect).
	MaxRecordSize int
}

// Result is what a comparison found.
type Result struct {
	Runs, Series, Points, Blobs int // compared, as read from the logdir
	// Differences counts what differs; each was passed to the report
	// function given to Compare.
	Differences int
	// OverLimit counts points and blobs of the logdir larger than the
	// server takes, which an upload skips (with a warning) and which are
	// therefore not compared.
	OverLimit int
}

// Logdir is the content of a logdir, one digest per (run, tag, step).
type Logdir struct {
	series    map[seriesKey]*localSeries
	overLimit int
	// runs are the logdir's runs with TensorBoard's start time (0 for a
	// run with no event yet).
	runs map[string]float64
}

type seriesKey struct{ run, tag string }

type localSeries struct {
	plugin string
	class  migrate.DataClass
	points map[int64]*digest
	found  bool // the server has the series
	// pluginChecked: the server's metadata was compared (it may come with
	// any of a series' responses).
	pluginChecked bool
}

// digest is what is compared of one point.
type digest struct {
	wall  float64
	value float64 // scalars
	// Tensors: the size and CRC32C of the TensorProto, deterministically
	// serialized.
	size int64
	crc  uint32
	// Blob sequences: one per slot; tooLarge slots are not uploaded.
	blobs []blobDigest
}

type blobDigest struct {
	size     int64
	crc      uint32
	tooLarge bool
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Read reads the logdir as an upload with opts would send it.
func Read(ctx context.Context, src logdir.Source, opts Options) (*Logdir, error) {
	l := &Logdir{series: map[seriesKey]*localSeries{}}
	var mu sync.Mutex
	visit := func(run string, s *migrate.Series, p *migrate.Point) {
		if s.Class() == migrate.ClassUnknown || !opts.Plugins[s.Plugin()] {
			return
		}
		d, ok := opts.digest(s, p)
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			l.overLimit++
			return
		}
		k := seriesKey{run, s.Tag}
		ls := l.series[k]
		if ls == nil {
			ls = &localSeries{plugin: s.Plugin(), class: s.Class(), points: map[int64]*digest{}}
			l.series[k] = ls
		}
		if d != nil {
			ls.points[p.Step] = d // the last write at a step wins
			for _, b := range d.blobs {
				if b.tooLarge {
					l.overLimit++
				}
			}
		}
	}
	rep, err := inspect.Inspect(ctx, src, inspect.Options{MaxRecordSize: opts.MaxRecordSize, Points: visit})
	if err != nil {
		return nil, err
	}
	l.runs = map[string]float64{}
	for run := range rep.Runs {
		start := rep.StartTimes[run]
		if math.IsNaN(start) || math.IsInf(start, 0) {
			start = 0 // the first event tells no time: none is recorded
		}
		l.runs[run] = start
	}
	return l, nil
}

// digest summarizes p as the server should hold it; nil (with ok) for a
// point an upload does not send (a scalar with no valid value); !ok for one
// over the server's limits.
func (o Options) digest(s *migrate.Series, p *migrate.Point) (d *digest, ok bool) {
	d = &digest{wall: p.WallTime}
	switch s.Class() {
	case migrate.ClassScalar:
		v, valid := migrate.ScalarValue(p)
		if !valid {
			return nil, true
		}
		d.value = v
	case migrate.ClassTensor:
		raw := migrate.AppendTensorProto(nil, p)
		if o.MaxTensorPointSize >= 0 && int64(len(raw)) > o.MaxTensorPointSize {
			return nil, false
		}
		var tp tbpb.TensorProto
		if proto.Unmarshal(raw, &tp) != nil {
			return nil, true // an upload skips it too
		}
		d.size, d.crc = tensorDigest(&tp)
	case migrate.ClassBlobSequence:
		migrate.ForEachBlob(s, p, func(b []byte) {
			tooLarge := o.MaxBlobSize >= 0 && int64(len(b)) > o.MaxBlobSize
			d.blobs = append(d.blobs, blobDigest{size: int64(len(b)), crc: crc32.Checksum(b, castagnoli), tooLarge: tooLarge})
		})
	}
	return d, true
}

func tensorDigest(tp *tbpb.TensorProto) (int64, uint32) {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(tp)
	return int64(len(b)), crc32.Checksum(b, castagnoli)
}

// pendingBlob is a blob to fetch once the data stream is done.
type pendingBlob struct {
	where string
	id    string
	want  blobDigest
}

// Compare reads experiment eid from the server and passes the first
// maxReported differences from the logdir to report, one line each: the
// runs (every run of the logdir, with its start time, against runs, the
// server's), then series by series; Result.Differences counts them all.
func Compare(ctx context.Context, l *Logdir, runs []*experimentsv1.RunStart, api servicepb.TensorBoardExporterServiceClient, eid string, report func(string), maxReported int) (*Result, error) {
	res := &Result{OverLimit: l.overLimit, Runs: len(l.runs)}
	for _, ls := range l.series {
		res.Series++
		res.Points += len(ls.points)
		for _, d := range ls.points {
			for _, b := range d.blobs {
				if !b.tooLarge {
					res.Blobs++
				}
			}
		}
	}
	diff := func(format string, args ...any) {
		res.Differences++
		if res.Differences <= maxReported {
			report(fmt.Sprintf(format, args...))
		}
	}
	onServer := map[string]bool{}
	for _, r := range runs {
		onServer[r.GetName()] = true
		start, ok := l.runs[r.GetName()]
		switch {
		case !ok:
			diff("run %s: on the server, not in the logdir", r.GetName())
		case !sameValue(start, r.GetStartTime()):
			diff("run %s: starts at %v on the server, %v in the logdir (the wall time of its first event)", r.GetName(), r.GetStartTime(), start)
		}
	}
	for _, run := range slices.Sorted(maps.Keys(l.runs)) {
		if !onServer[run] {
			diff("run %s: missing on the server", run)
		}
	}
	stream, err := api.StreamExperimentData(ctx, &servicepb.StreamExperimentDataRequest{ExperimentId: eid})
	if err != nil {
		return nil, fmt.Errorf("reading experiment %s: %s", eid, client.Describe(err))
	}
	var blobs []pendingBlob
	serverOnly := map[seriesKey]int{}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading experiment %s: %s", eid, client.Describe(err))
		}
		k := seriesKey{resp.GetRunName(), resp.GetTagName()}
		ls := l.series[k]
		if ls == nil {
			serverOnly[k] += stepsOf(resp)
			continue
		}
		name := k.run + "/" + k.tag
		ls.found = true
		if md := resp.GetTagMetadata(); md != nil && !ls.pluginChecked {
			ls.pluginChecked = true
			if p := md.GetPluginData().GetPluginName(); p != ls.plugin {
				diff("%s: plugin %q on the server, %q in the logdir", name, p, ls.plugin)
			}
		}
		point := func(step int64, wall *timestamppb.Timestamp) *digest {
			d := ls.points[step]
			if d == nil {
				diff("%s: step %d is on the server, not in the logdir", name, step)
				return nil
			}
			delete(ls.points, step) // what is left at the end is missing
			if !sameWallTime(d.wall, wall) {
				diff("%s: step %d: wall time %v on the server, %v in the logdir", name, step, seconds(wall), d.wall)
			}
			return d
		}
		switch data := resp.GetData().(type) {
		case *servicepb.StreamExperimentDataResponse_Points:
			if ls.class != migrate.ClassScalar {
				diff("%s: scalars on the server, %s in the logdir", name, className(ls.class))
				continue
			}
			pts := data.Points
			for i, step := range pts.GetSteps() {
				if d := point(step, at(pts.GetWallTimes(), i)); d != nil {
					if v := pts.GetValues()[i]; !sameValue(v, d.value) {
						diff("%s: step %d: value %v on the server, %v in the logdir", name, step, v, d.value)
					}
				}
			}
		case *servicepb.StreamExperimentDataResponse_Tensors:
			if ls.class != migrate.ClassTensor {
				diff("%s: tensors on the server, %s in the logdir", name, className(ls.class))
				continue
			}
			pts := data.Tensors
			for i, step := range pts.GetSteps() {
				if d := point(step, at(pts.GetWallTimes(), i)); d != nil {
					if size, crc := tensorDigest(pts.GetValues()[i]); size != d.size || crc != d.crc {
						diff("%s: step %d: the tensor differs (%d bytes on the server, %d in the logdir)", name, step, size, d.size)
					}
				}
			}
		case *servicepb.StreamExperimentDataResponse_BlobSequences:
			if ls.class != migrate.ClassBlobSequence {
				diff("%s: blob sequences on the server, %s in the logdir", name, className(ls.class))
				continue
			}
			pts := data.BlobSequences
			for i, step := range pts.GetSteps() {
				d := point(step, at(pts.GetWallTimes(), i))
				if d == nil {
					continue
				}
				entries := pts.GetValues()[i].GetEntries()
				if len(entries) != len(d.blobs) {
					diff("%s: step %d: %d blobs on the server, %d in the logdir", name, step, len(entries), len(d.blobs))
				}
				for j, want := range d.blobs {
					var b *servicepb.Blob
					if j < len(entries) {
						b = entries[j].GetBlob()
					}
					switch {
					case want.tooLarge:
					case b == nil || b.GetState() != servicepb.BlobState_BLOB_STATE_CURRENT:
						diff("%s: step %d: blob %d (%d bytes) is missing on the server", name, step, j, want.size)
					default:
						blobs = append(blobs, pendingBlob{where: fmt.Sprintf("%s: step %d: blob %d", name, step, j), id: b.GetBlobId(), want: want})
					}
				}
			}
		}
	}
	for _, k := range sortedKeys(serverOnly) {
		diff("%s/%s: on the server (%d points), not in the logdir", k.run, k.tag, serverOnly[k])
	}
	for _, k := range sortedKeys(l.series) {
		ls := l.series[k]
		switch {
		case !ls.found && len(ls.points) > 0:
			diff("%s/%s: missing on the server (%d points)", k.run, k.tag, len(ls.points))
		case len(ls.points) > 0:
			steps := make([]int64, 0, len(ls.points))
			for st := range ls.points {
				steps = append(steps, st)
			}
			sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
			for _, st := range steps {
				diff("%s/%s: step %d is missing on the server", k.run, k.tag, st)
			}
		}
	}
	// Blobs are read once the data stream is done (as tbup export does).
	for _, b := range blobs {
		h := crc32.New(castagnoli)
		n, err := client.StreamBlob(ctx, api, b.id, h)
		if err != nil {
			diff("%s: cannot be read: %v", b.where, err)
			continue
		}
		if n != b.want.size || h.Sum32() != b.want.crc {
			diff("%s: %d bytes (CRC32C %08x) on the server, %d bytes (CRC32C %08x) in the logdir", b.where, n, h.Sum32(), b.want.size, b.want.crc)
		}
	}
	return res, nil
}

func stepsOf(resp *servicepb.StreamExperimentDataResponse) int {
	switch d := resp.GetData().(type) {
	case *servicepb.StreamExperimentDataResponse_Points:
		return len(d.Points.GetSteps())
	case *servicepb.StreamExperimentDataResponse_Tensors:
		return len(d.Tensors.GetSteps())
	case *servicepb.StreamExperimentDataResponse_BlobSequences:
		return len(d.BlobSequences.GetSteps())
	}
	return 0
}

func at(ts []*timestamppb.Timestamp, i int) *timestamppb.Timestamp {
	if i < len(ts) {
		return ts[i]
	}
	return nil
}

func seconds(ts *timestamppb.Timestamp) float64 {
	return float64(ts.GetSeconds()) + float64(ts.GetNanos())/1e9
}

// sameWallTime: the upload sends wall times as Timestamps rounded to the
// nanosecond, and NaN as 0.
func sameWallTime(local float64, server *timestamppb.Timestamp) bool {
	if math.IsNaN(local) {
		return server.GetSeconds() == 0 && server.GetNanos() == 0
	}
	return math.Abs(seconds(server)-local) <= 1e-6
}

// sameValue compares scalars bit for bit, any NaN equal to any NaN.
func sameValue(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
}

func className(c migrate.DataClass) string {
	switch c {
	case migrate.ClassScalar:
		return "scalars"
	case migrate.ClassTensor:
		return "tensors"
	case migrate.ClassBlobSequence:
		return "blob sequences"
	}
	return "unknown data"
}

func sortedKeys[V any](m map[seriesKey]V) []seriesKey {
	out := make([]seriesKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].run != out[j].run {
			return out[i].run < out[j].run
		}
		return out[i].tag < out[j].tag
	})
	return out
}
