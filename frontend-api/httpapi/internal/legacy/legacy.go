// Package legacy serves the routes of TensorBoard's original HTTP API
// document (data/scalars, histograms, compressedHistograms, images,
// audio), kept for scripts written against it.
package legacy

import (
	"math"

	"net/http"
	"strconv"
	"strings"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/histograms"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/media"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// The routes of TensorBoard's original HTTP API document
// (data/scalars, data/histograms, ...), in that document's shapes. They
// read the same series as the plugin routes; where the document promises
// something the data provider cannot give exactly, the comment says what
// is served instead.

// legacyScalars serves data/scalars: one series with run and tag (JSON or
// CSV), or without them every scalar series sampled to sample_count
// points.
func (h Plugin) LegacyScalars(w http.ResponseWriter, r *route.Request) error {
	q := r.URL.Query()
	if q.Has("run") || q.Has("tag") {
		run, tag, err := route.RequireRunTag(r)
		if err != nil {
			return err
		}
		d, err := h.OneScalarSeries(r, "scalars", run, tag, h.Samples("scalars", route.SamplesScalars))
		if err != nil {
			return err
		}
		if q.Get("format") == "csv" {
			return route.WriteBody(w, "text/csv; charset=utf-8", route.ScalarCSV("Wall time,step,value", d))
		}
		return route.WriteBody(w, "application/json", route.AppendScalarJSON(nil, d))
	}
	count := 10
	if s := q.Get("sample_count"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			return route.Errorf(http.StatusBadRequest, "sample_count=%q: want an integer >= 2", s)
		}
		count = n
	}
	// The document samples uniformly with the first and last value
	// included. The series are read downsampled as the scalars dashboard
	// reads them (the latest point always kept), then sampled uniformly by
	// position, keeping the first and last of what was read.
	series, err := h.ReadScalars(r, "scalars", nil, max(int64(count), h.Samples("scalars", route.SamplesScalars)))
	if err != nil {
		return err
	}
	out := map[string]map[string]route.ScalarJSON{}
	for _, s := range series {
		if out[s.Run] == nil {
			out[s.Run] = map[string]route.ScalarJSON{}
		}
		out[s.Run][s.Tag] = route.ScalarJSON{D: uniformSample(s.Data, count)}
	}
	return route.WriteJSON(w, out)
}

// uniformSample keeps count points of d at evenly spaced positions,
// including the first and the last.
func uniformSample(d *datapb.ScalarData, count int) *datapb.ScalarData {
	n := len(d.GetStep())
	if n <= count {
		return d
	}
	out := &datapb.ScalarData{}
	for i := range count {
		j := int(math.Round(float64(i) * float64(n-1) / float64(count-1)))
		out.Step = append(out.Step, d.Step[j])
		out.WallTime = append(out.WallTime, d.WallTime[j])
		out.Value = append(out.Value, d.Value[j])
	}
	return out
}

// legacyHistograms serves data/histograms: [wall_time, step, [min, max,
// num, sum, sum_squares, bucket_limit, bucket]]. Stored histograms keep
// only (left, right, count) buckets, so min and max are the outer edges
// and sum and sum_squares are estimated from bucket midpoints.
func (h Plugin) LegacyHistograms(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	points, err := histograms.Plugin{Env: h.Env}.ReadHistograms(r, run, tag, h.Samples("histograms", route.SamplesHistograms))
	if err != nil {
		return err
	}
	out := make([][]any, 0, len(points))
	for _, p := range points {
		var lo, hi, num, sum, sumSq float64
		limits, counts := []route.Float{}, []route.Float{}
		if len(p.Buckets) > 0 {
			lo, hi = p.Buckets[0][0], p.Buckets[len(p.Buckets)-1][1]
		}
		for _, b := range p.Buckets {
			mid := (b[0] + b[1]) / 2
			num += b[2]
			sum += b[2] * mid
			sumSq += b[2] * mid * mid
			limits = append(limits, route.Float(b[1]))
			counts = append(counts, route.Float(b[2]))
		}
		out = append(out, []any{route.Float(p.WallTime), p.Step, []any{route.Float(lo), route.Float(hi), route.Float(num), route.Float(sum), route.Float(sumSq), limits, counts}})
	}
	return route.WriteJSON(w, out)
}

func (h Plugin) LegacyCompressedHistograms(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	points, err := histograms.Plugin{Env: h.Env}.ReadHistograms(r, run, tag, h.Samples("histograms", route.SamplesHistograms))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, histograms.CompressedPoints(points))
}

type legacyImageEntry struct {
	Width    int         `json:"width"`
	Height   int         `json:"height"`
	WallTime route.Float `json:"wall_time"`
	Step     int64       `json:"step"`
	Query    string      `json:"query"`
}

// legacyImages serves data/images: the first image of each sampled step,
// with its size (the datum's first two blobs).
func (h Plugin) LegacyImages(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	series, err := h.ReadBlobSequences(r, "images", route.One(run, tag), h.Samples("images", route.SamplesImages))
	if err != nil {
		return err
	}
	out := []legacyImageEntry{}
	var sizes [][2]string // per entry, the keys of its width and height
	for _, s := range series {
		d := s.Data
		for i, step := range d.GetStep() {
			refs := d.GetValues()[i].GetBlobRefs()
			if len(refs) < 3 {
				continue
			}
			out = append(out, legacyImageEntry{WallTime: route.Float(d.GetWallTime()[i]), Step: step, Query: media.BlobQuery(refs[2].GetBlobKey())})
			sizes = append(sizes, [2]string{refs[0].GetBlobKey(), refs[1].GetBlobKey()})
		}
	}
	fns := make([]func() error, 0, 2*len(out))
	for i := range out {
		e := &out[i]
		fns = append(fns,
			func() (err error) { e.Width, err = h.blobInt(r, sizes[i][0]); return err },
			func() (err error) { e.Height, err = h.blobInt(r, sizes[i][1]); return err })
	}
	if err := route.Parallel(fns...); err != nil {
		return err
	}
	return route.WriteJSON(w, out)
}

// blobInt reads a blob holding an ASCII decimal (an image dimension); 0
// if it holds something else.
func (h Plugin) blobInt(r *route.Request, key string) (int, error) {
	b, err := h.ReadBlob(r, key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, nil
	}
	return n, nil
}

type legacyAudioEntry struct {
	WallTime    route.Float `json:"wall_time"`
	Step        int64       `json:"step"`
	ContentType string      `json:"content_type"`
	Query       string      `json:"query"`
}

func (h Plugin) LegacyAudio(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	entries, err := media.Plugin{Env: h.Env}.ReadAudio(r, run, tag, 0)
	if err != nil {
		return err
	}
	out := make([]legacyAudioEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, legacyAudioEntry{e.WallTime, e.Step, e.ContentType, e.Query})
	}
	return route.WriteJSON(w, out)
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
