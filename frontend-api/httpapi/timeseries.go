package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/markdown"
	"github.com/tbhub/tbhub/frontend-api/httperr"
)

// The time-series dashboard's routes (TensorBoard's "metrics" plugin,
// served as timeseries): one tag index for scalars, histograms and images,
// and a batch route reading several series per request.

type runTagInfo struct {
	RunTagInfo      map[string][]string `json:"runTagInfo"`
	TagDescriptions map[string]string   `json:"tagDescriptions"`
}

func newRunTagInfo(series []seriesInfo) runTagInfo {
	out := runTagInfo{RunTagInfo: map[string][]string{}, TagDescriptions: map[string]string{}}
	for _, s := range series {
		out.RunTagInfo[s.run] = append(out.RunTagInfo[s.run], s.tag)
		if s.description != "" {
			out.TagDescriptions[s.tag] = markdown.ToSafeHTML(s.description)
		}
	}
	return out
}

type sampledInfo struct {
	MaxSamplesPerStep int64 `json:"maxSamplesPerStep"`
}

func (h *Handler) timeSeriesTags(w http.ResponseWriter, r *request) error {
	var scalars, hists, images []seriesInfo
	err := parallel(
		func() (err error) { scalars, err = h.listScalars(r, "scalars", nil); return err },
		func() (err error) { hists, err = h.listTensors(r, "histograms", nil); return err },
		func() (err error) { images, err = h.listBlobSequences(r, "images", nil); return err },
	)
	if err != nil {
		return err
	}
	imageInfo := struct {
		TagDescriptions   map[string]string                 `json:"tagDescriptions"`
		TagRunSampledInfo map[string]map[string]sampledInfo `json:"tagRunSampledInfo"`
	}{map[string]string{}, map[string]map[string]sampledInfo{}}
	for _, s := range images {
		if imageInfo.TagRunSampledInfo[s.tag] == nil {
			imageInfo.TagRunSampledInfo[s.tag] = map[string]sampledInfo{}
		}
		imageInfo.TagRunSampledInfo[s.tag][s.run] = sampledInfo{max(s.maxLength-2, 0)}
		if s.description != "" {
			imageInfo.TagDescriptions[s.tag] = markdown.ToSafeHTML(s.description)
		}
	}
	return writeJSON(w, map[string]any{
		"scalars":    newRunTagInfo(scalars),
		"histograms": newRunTagInfo(hists),
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
	WallTime Float `json:"wallTime"`
	Step     int64 `json:"step"`
	Value    Float `json:"value"`
}

type histogramBin struct {
	Min   Float `json:"min"`
	Max   Float `json:"max"`
	Count Float `json:"count"`
}

type histogramDatum struct {
	WallTime Float          `json:"wallTime"`
	Step     int64          `json:"step"`
	Bins     []histogramBin `json:"bins"`
}

type imageDatum struct {
	WallTime Float  `json:"wallTime"`
	Step     int64  `json:"step"`
	ImageID  string `json:"imageId"`
}

func (h *Handler) timeSeries(w http.ResponseWriter, r *request) error {
	form, err := postForm(r)
	if err != nil {
		return err
	}
	var reqs []timeSeriesRequest
	if err := json.Unmarshal([]byte(form.Get("requests")), &reqs); err != nil {
		return errorf(http.StatusBadRequest, "requests: want a JSON list of {plugin, tag, run?, sample?}: %v", err)
	}
	out := make([]timeSeriesResponse, len(reqs))
	fns := make([]func() error, len(reqs))
	for i, req := range reqs {
		fns[i] = func() error {
			series, err := h.oneTimeSeries(r, req)
			out[i] = timeSeriesResponse{timeSeriesRequest: req, RunToSeries: series}
			if err != nil {
				he, ok := err.(*httperr.Error)
				if !ok {
					return err
				}
				out[i].RunToSeries, out[i].Error = nil, he.Msg
			}
			return nil
		}
	}
	if err := parallel(fns...); err != nil {
		return err
	}
	return writeJSON(w, out)
}

// oneTimeSeries answers one request of the batch: run → data points. A
// request the client got wrong comes back as an *httperr.Error, reported in
// the entry instead of failing the batch.
func (h *Handler) oneTimeSeries(r *request, req timeSeriesRequest) (map[string]any, error) {
	var runs []string
	if req.Run != nil {
		runs = []string{*req.Run}
	}
	f := filter(runs, []string{req.Tag})
	out := map[string]any{}
	switch req.Plugin {
	case "scalars":
		series, err := h.readScalars(r, "scalars", f, h.samples("scalars", samplesScalars))
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			d := s.data
			points := make([]scalarDatum, len(d.GetStep()))
			for i, step := range d.GetStep() {
				points[i] = scalarDatum{Float(d.GetWallTime()[i]), step, Float(d.GetValue()[i])}
			}
			out[s.run] = points
		}
	case "histograms":
		series, err := h.readTensors(r, "histograms", f, h.samples("histograms", samplesTimeSeriesH))
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			d := s.data
			points := make([]histogramDatum, 0, len(d.GetStep()))
			for i, step := range d.GetStep() {
				buckets, err := histogramBuckets(d.GetValue()[i])
				if err != nil {
					return nil, fmt.Errorf("run %q tag %q step %d: %w", s.run, s.tag, step, err)
				}
				bins := make([]histogramBin, len(buckets))
				for j, b := range buckets {
					bins[j] = histogramBin{Float(b[0]), Float(b[1]), Float(b[2])}
				}
				points = append(points, histogramDatum{Float(d.GetWallTime()[i]), step, bins})
			}
			out[s.run] = points
		}
	case "images":
		sample := 0
		if req.Sample != nil {
			sample = *req.Sample
		}
		if sample < 0 {
			return nil, errorf(http.StatusBadRequest, "sample must be >= 0")
		}
		series, err := h.readBlobSequences(r, "images", f, h.samples("images", samplesImages))
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			d := s.data
			points := []imageDatum{}
			for i, step := range d.GetStep() {
				refs := d.GetValues()[i].GetBlobRefs()
				if len(refs) < sample+3 {
					continue
				}
				points = append(points, imageDatum{Float(d.GetWallTime()[i]), step, refs[sample+2].GetBlobKey()})
			}
			out[s.run] = points
		}
	default:
		return nil, errorf(http.StatusBadRequest, "plugin %q: want scalars, histograms or images", req.Plugin)
	}
	return out, nil
}

func (h *Handler) timeSeriesImageData(w http.ResponseWriter, r *request) error {
	b, err := h.readBlob(r, r.URL.Query().Get("imageId"))
	if err != nil {
		return err
	}
	return writeImmutable(w, imageContentType(b), b)
}
