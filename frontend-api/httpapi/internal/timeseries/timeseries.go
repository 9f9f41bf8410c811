// Package timeseries serves TensorBoard's time-series dashboard (its
// metrics plugin): one tag index for scalars, histograms and images, and
// a batch route reading many series per request.
package timeseries

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/histograms"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/media"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/frontend-api/httperr"
)

// The time-series dashboard's routes (TensorBoard's "metrics" plugin,
// served as timeseries): one tag index for scalars, histograms and images,
// and a batch route reading several series per request.

type runTagInfo struct {
	RunTagInfo      map[string][]string `json:"runTagInfo"`
	TagDescriptions map[string]string   `json:"tagDescriptions"`
}

func (h Plugin) newRunTagInfo(series []route.SeriesInfo) runTagInfo {
	out := runTagInfo{RunTagInfo: map[string][]string{}, TagDescriptions: map[string]string{}}
	for _, s := range series {
		out.RunTagInfo[s.Run] = append(out.RunTagInfo[s.Run], s.Tag)
		if s.Description != "" {
			out.TagDescriptions[s.Tag] = h.Markdown.ToSafeHTML(s.Description)
		}
	}
	return out
}

type sampledInfo struct {
	MaxSamplesPerStep int64 `json:"maxSamplesPerStep"`
}

func (h Plugin) TimeSeriesTags(w http.ResponseWriter, r *route.Request) error {
	var scalars, hists, images []route.SeriesInfo
	err := route.Parallel(
		func() (err error) { scalars, err = h.ListScalars(r, "scalars", nil); return err },
		func() (err error) { hists, err = h.ListTensors(r, "histograms", nil); return err },
		func() (err error) { images, err = h.ListBlobSequences(r, "images", nil); return err },
	)
	if err != nil {
		return err
	}
	imageInfo := struct {
		TagDescriptions   map[string]string                 `json:"tagDescriptions"`
		TagRunSampledInfo map[string]map[string]sampledInfo `json:"tagRunSampledInfo"`
	}{map[string]string{}, map[string]map[string]sampledInfo{}}
	for _, s := range images {
		if imageInfo.TagRunSampledInfo[s.Tag] == nil {
			imageInfo.TagRunSampledInfo[s.Tag] = map[string]sampledInfo{}
		}
		imageInfo.TagRunSampledInfo[s.Tag][s.Run] = sampledInfo{max(s.MaxLength-2, 0)}
		if s.Description != "" {
			imageInfo.TagDescriptions[s.Tag] = h.Markdown.ToSafeHTML(s.Description)
		}
	}
	return route.WriteJSON(w, map[string]any{
		"scalars":    h.newRunTagInfo(scalars),
		"histograms": h.newRunTagInfo(hists),
		"images":     imageInfo,
	})
}

// timeSeriesRequest is one entry of the requests form field.
type timeSeriesRequest struct {
	Plugin string  `json:"plugin"`
	Tag    string  `json:"tag"`
	Run    *string `json:"run,omitempty"`
	Sample *int    `json:"sample,omitempty"`
}

type timeSeriesResponse struct {
	timeSeriesRequest
	RunToSeries map[string]any `json:"runToSeries,omitempty"`
	Error       string         `json:"error,omitempty"`
}

type scalarDatum struct {
	WallTime route.Float `json:"wallTime"`
	Step     int64       `json:"step"`
	Value    route.Float `json:"value"`
}

type histogramBin struct {
	Min   route.Float `json:"min"`
	Max   route.Float `json:"max"`
	Count route.Float `json:"count"`
}

type histogramDatum struct {
	WallTime route.Float    `json:"wallTime"`
	Step     int64          `json:"step"`
	Bins     []histogramBin `json:"bins"`
}

type imageDatum struct {
	WallTime route.Float `json:"wallTime"`
	Step     int64       `json:"step"`
	ImageID  string      `json:"imageId"`
}

func (h Plugin) TimeSeries(w http.ResponseWriter, r *route.Request) error {
	form, err := route.PostForm(r)
	if err != nil {
		return err
	}
	var reqs []timeSeriesRequest
	if err := json.Unmarshal([]byte(form.Get("requests")), &reqs); err != nil {
		return route.Errorf(http.StatusBadRequest, "requests: want a JSON list of {plugin, tag, run?, sample?}: %v", err)
	}
	out := make([]timeSeriesResponse, len(reqs))
	fns := make([]func() error, len(reqs))
	for i, req := range reqs {
		fns[i] = func() error {
			series, err := h.oneTimeSeries(r, req)
			out[i] = timeSeriesResponse{timeSeriesRequest: req, RunToSeries: series}
			if err != nil {
				var he *httperr.Error
				if !errors.As(err, &he) {
					return err
				}
				out[i].RunToSeries, out[i].Error = nil, he.Msg
			}
			return nil
		}
	}
	if err := route.Parallel(fns...); err != nil {
		return err
	}
	return route.WriteJSON(w, out)
}

// oneTimeSeries answers one request of the batch: run → data points. A
// request the client got wrong comes back as an *httperr.Error, reported in
// the entry instead of failing the batch.
func (h Plugin) oneTimeSeries(r *route.Request, req timeSeriesRequest) (map[string]any, error) {
	var runs []string
	if req.Run != nil {
		runs = []string{*req.Run}
	}
	f := route.Filter(runs, []string{req.Tag})
	out := map[string]any{}
	switch req.Plugin {
	case "scalars":
		series, err := h.ReadScalars(r, "scalars", f, h.Samples("scalars", route.SamplesScalars))
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			d := s.Data
			points := make([]scalarDatum, len(d.GetStep()))
			for i, step := range d.GetStep() {
				points[i] = scalarDatum{route.Float(d.GetWallTime()[i]), step, route.Float(d.GetValue()[i])}
			}
			out[s.Run] = points
		}
	case "histograms":
		series, err := h.ReadTensors(r, "histograms", f, h.Samples("histograms", route.SamplesTimeSeriesH))
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			d := s.Data
			points := make([]histogramDatum, 0, len(d.GetStep()))
			for i, step := range d.GetStep() {
				buckets, err := histograms.Buckets(d.GetValue()[i])
				if err != nil {
					return nil, fmt.Errorf("run %q tag %q step %d: %w", s.Run, s.Tag, step, err)
				}
				bins := make([]histogramBin, len(buckets))
				for j, b := range buckets {
					bins[j] = histogramBin{route.Float(b[0]), route.Float(b[1]), route.Float(b[2])}
				}
				points = append(points, histogramDatum{route.Float(d.GetWallTime()[i]), step, bins})
			}
			out[s.Run] = points
		}
	case "images":
		sample := 0
		if req.Sample != nil {
			sample = *req.Sample
		}
		if sample < 0 {
			return nil, route.Errorf(http.StatusBadRequest, "sample must be >= 0")
		}
		series, err := h.ReadBlobSequences(r, "images", f, h.Samples("images", route.SamplesImages))
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			d := s.Data
			points := []imageDatum{}
			for i, step := range d.GetStep() {
				refs := d.GetValues()[i].GetBlobRefs()
				if len(refs) < sample+3 {
					continue
				}
				points = append(points, imageDatum{route.Float(d.GetWallTime()[i]), step, refs[sample+2].GetBlobKey()})
			}
			out[s.Run] = points
		}
	default:
		return nil, route.Errorf(http.StatusBadRequest, "plugin %q: want scalars, histograms or images", req.Plugin)
	}
	return out, nil
}

func (h Plugin) TimeSeriesImageData(w http.ResponseWriter, r *route.Request) error {
	b, err := h.ReadBlob(r, r.URL.Query().Get("imageId"))
	if err != nil {
		return err
	}
	return route.WriteImmutable(w, media.ImageContentType(b), b)
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
