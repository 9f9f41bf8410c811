package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// This file wraps the read service's calls in the shapes routes use:
// nested maps run → tag → what was listed or read.

// filter returns a RunTagFilter; a nil slice leaves that side absent
// (all), a non-nil one selects exactly its names.
func filter(runs, tags []string) *datapb.RunTagFilter {
	f := &datapb.RunTagFilter{}
	if runs != nil {
		f.Runs = &datapb.RunFilter{Names: runs}
	}
	if tags != nil {
		f.Tags = &datapb.TagFilter{Names: tags}
	}
	return f
}

// one returns the filter for a single (run, tag).
func one(run, tag string) *datapb.RunTagFilter {
	return filter([]string{run}, []string{tag})
}

// seriesInfo is what the List* RPCs say about a series, whatever its class.
type seriesInfo struct {
	run, tag    string
	maxStep     int64
	maxWallTime float64
	maxLength   int64
	displayName string
	description string // markdown
	content     []byte // plugin_data.content
}

func (h *Handler) listScalars(r *request, plugin string, f *datapb.RunTagFilter) ([]seriesInfo, error) {
	resp, err := h.data.ListScalars(r.ctx, &datapb.ListScalarsRequest{ExperimentId: r.eid, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f}, h.callOpts...)
	if err != nil {
		return nil, err
	}
	var out []seriesInfo
	for _, run := range resp.GetRuns() {
		for _, t := range run.GetTags() {
			md := t.GetMetadata()
			sm := md.GetSummaryMetadata()
			out = append(out, seriesInfo{run: run.GetRunName(), tag: t.GetTagName(), maxStep: md.GetMaxStep(), maxWallTime: md.GetMaxWallTime(),
				displayName: sm.GetDisplayName(), description: sm.GetSummaryDescription(), content: sm.GetPluginData().GetContent()})
		}
	}
	return out, nil
}

func (h *Handler) listTensors(r *request, plugin string, f *datapb.RunTagFilter) ([]seriesInfo, error) {
	resp, err := h.data.ListTensors(r.ctx, &datapb.ListTensorsRequest{ExperimentId: r.eid, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f}, h.callOpts...)
	if err != nil {
		return nil, err
	}
	var out []seriesInfo
	for _, run := range resp.GetRuns() {
		for _, t := range run.GetTags() {
			md := t.GetMetadata()
			sm := md.GetSummaryMetadata()
			out = append(out, seriesInfo{run: run.GetRunName(), tag: t.GetTagName(), maxStep: md.GetMaxStep(), maxWallTime: md.GetMaxWallTime(),
				displayName: sm.GetDisplayName(), description: sm.GetSummaryDescription(), content: sm.GetPluginData().GetContent()})
		}
	}
	return out, nil
}

func (h *Handler) listBlobSequences(r *request, plugin string, f *datapb.RunTagFilter) ([]seriesInfo, error) {
	resp, err := h.data.ListBlobSequences(r.ctx, &datapb.ListBlobSequencesRequest{ExperimentId: r.eid, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f}, h.callOpts...)
	if err != nil {
		return nil, err
	}
	var out []seriesInfo
	for _, run := range resp.GetRuns() {
		for _, t := range run.GetTags() {
			md := t.GetMetadata()
			sm := md.GetSummaryMetadata()
			out = append(out, seriesInfo{run: run.GetRunName(), tag: t.GetTagName(), maxStep: md.GetMaxStep(), maxWallTime: md.GetMaxWallTime(), maxLength: md.GetMaxLength(),
				displayName: sm.GetDisplayName(), description: sm.GetSummaryDescription(), content: sm.GetPluginData().GetContent()})
		}
	}
	return out, nil
}

// series is one (run, tag)'s points as read; D is ScalarData, TensorData or
// BlobSequenceData.
type series[D any] struct {
	run, tag string
	data     D
}

type (
	scalarSeries = series[*datapb.ScalarData]
	tensorSeries = series[*datapb.TensorData]
	blobSeries   = series[*datapb.BlobSequenceData]
)

// tagEntry and runEntry are what the three Read*Response types' entries share.
type tagEntry[D any] interface {
	GetTagName() string
	GetData() D
}

type runEntry[T tagEntry[D], D any] interface {
	GetRunName() string
	GetTags() []T
}

// flatten lists a Read* response's series in its (run, tag) order.
func flatten[R runEntry[T, D], T tagEntry[D], D any](runs []R) []series[D] {
	var out []series[D]
	for _, run := range runs {
		for _, t := range run.GetTags() {
			out = append(out, series[D]{run.GetRunName(), t.GetTagName(), t.GetData()})
		}
	}
	return out
}

func (h *Handler) readScalars(r *request, plugin string, f *datapb.RunTagFilter, k int64) ([]scalarSeries, error) {
	resp, err := h.data.ReadScalars(r.ctx, &datapb.ReadScalarsRequest{ExperimentId: r.eid, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f, Downsample: &datapb.Downsample{NumPoints: k}}, h.callOpts...)
	if err != nil {
		return nil, err
	}
	return flatten[*datapb.ReadScalarsResponse_RunEntry, *datapb.ReadScalarsResponse_TagEntry](resp.GetRuns()), nil
}

func (h *Handler) readTensors(r *request, plugin string, f *datapb.RunTagFilter, k int64) ([]tensorSeries, error) {
	resp, err := h.data.ReadTensors(r.ctx, &datapb.ReadTensorsRequest{ExperimentId: r.eid, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f, Downsample: &datapb.Downsample{NumPoints: k}}, h.callOpts...)
	if err != nil {
		return nil, err
	}
	return flatten[*datapb.ReadTensorsResponse_RunEntry, *datapb.ReadTensorsResponse_TagEntry](resp.GetRuns()), nil
}

func (h *Handler) readBlobSequences(r *request, plugin string, f *datapb.RunTagFilter, k int64) ([]blobSeries, error) {
	resp, err := h.data.ReadBlobSequences(r.ctx, &datapb.ReadBlobSequencesRequest{ExperimentId: r.eid, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f, Downsample: &datapb.Downsample{NumPoints: k}}, h.callOpts...)
	if err != nil {
		return nil, err
	}
	return flatten[*datapb.ReadBlobSequencesResponse_RunEntry, *datapb.ReadBlobSequencesResponse_TagEntry](resp.GetRuns()), nil
}

// readBlob reads a whole blob.
func (h *Handler) readBlob(r *request, key string) ([]byte, error) {
	if key == "" {
		return nil, errorf(http.StatusBadRequest, "blob_key is required")
	}
	stream, err := h.data.ReadBlob(r.ctx, &datapb.ReadBlobRequest{BlobKey: key}, h.callOpts...)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		buf.Write(m.GetData())
	}
}

// requireRunTag returns the run and tag query parameters, both required.
func requireRunTag(r *request) (run, tag string, err error) {
	q := r.URL.Query()
	if !q.Has("run") || !q.Has("tag") {
		return "", "", errorf(http.StatusBadRequest, "both run and tag query parameters are required")
	}
	return q.Get("run"), q.Get("tag"), nil
}
