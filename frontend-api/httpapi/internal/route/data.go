// Package route is what every route of the HTTP API is built from: the
// request (its experiment and the context carrying the caller's
// credential), Env (the read service, the samples per plugin) with the
// List*/Read* calls flattened into series, tensor decoding, and the
// answers: JSON as TensorBoard writes it (Float), bodies, blobs, gzip, and
// errors (package httperr's mapping).
package route

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/markdown"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/readhint"
	"google.golang.org/grpc"
)

// This file wraps the read service's calls in the shapes routes use:
// nested maps run → tag → what was listed or read.

// filter returns a RunTagFilter; a nil slice leaves that side absent
// (all), a non-nil one selects exactly its names.
func Filter(runs, tags []string) *datapb.RunTagFilter {
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
func One(run, tag string) *datapb.RunTagFilter {
	return Filter([]string{run}, []string{tag})
}

// Env is what every route reads its data with: the read service, the
// options of every call to it, and how many points per series each
// plugin reads.
type Env struct {
	Data datapb.TensorBoardDataProviderClient
	// CallOpts go with every call to the services.
	CallOpts []grpc.CallOption
	// SamplesPerPlugin overrides the points per series of a plugin
	// (TensorBoard's --samples_per_plugin).
	SamplesPerPlugin map[string]int64
	// Markdown renders descriptions and texts, one for the server.
	Markdown *markdown.Renderer
}

// samples returns how many points per series a plugin route reads.
func (h *Env) Samples(plugin string, def int64) int64 {
	if n, ok := h.SamplesPerPlugin[plugin]; ok {
		return n
	}
	return def
}

// SeriesInfo is what the List* RPCs say about a series, whatever its class.
type SeriesInfo struct {
	Run, Tag    string
	MaxStep     int64
	MaxWallTime float64
	MaxLength   int64
	DisplayName string
	Description string // markdown
	Content     []byte // plugin_data.content
}

// listedMetadata is what the List*Response metadata types share;
// BlobSequenceMetadata also has GetMaxLength.
type listedMetadata interface {
	GetMaxStep() int64
	GetMaxWallTime() float64
	GetSummaryMetadata() *tbpb.SummaryMetadata
}

// listedTag and listedRun are what the List*Response entries share.
type listedTag[M listedMetadata] interface {
	GetTagName() string
	GetMetadata() M
}

type listedRun[T listedTag[M], M listedMetadata] interface {
	GetRunName() string
	GetTags() []T
}

// seriesInfos lists a List* response's series in its (run, tag) order.
func seriesInfos[R listedRun[T, M], T listedTag[M], M listedMetadata](runs []R) []SeriesInfo {
	var out []SeriesInfo
	for _, run := range runs {
		for _, t := range run.GetTags() {
			md := t.GetMetadata()
			sm := md.GetSummaryMetadata()
			info := SeriesInfo{Run: run.GetRunName(), Tag: t.GetTagName(), MaxStep: md.GetMaxStep(), MaxWallTime: md.GetMaxWallTime(),
				DisplayName: sm.GetDisplayName(), Description: sm.GetSummaryDescription(), Content: sm.GetPluginData().GetContent()}
			if b, ok := any(md).(interface{ GetMaxLength() int64 }); ok {
				info.MaxLength = b.GetMaxLength()
			}
			out = append(out, info)
		}
	}
	return out
}

// RunNames lists the experiment's runs by name, in the read service's order.
func (h *Env) RunNames(r *Request) ([]string, error) {
	resp, err := h.Data.ListRuns(r.Ctx, &datapb.ListRunsRequest{ExperimentId: r.EID}, h.CallOpts...)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(resp.GetRuns()))
	for _, run := range resp.GetRuns() {
		names = append(names, run.GetName())
	}
	return names, nil
}

// ListScalars lists plugin's scalar series (all with f nil).
func (h *Env) ListScalars(r *Request, plugin string, f *datapb.RunTagFilter) ([]SeriesInfo, error) {
	resp, err := h.Data.ListScalars(r.Ctx, &datapb.ListScalarsRequest{ExperimentId: r.EID, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f}, h.CallOpts...)
	if err != nil {
		return nil, err
	}
	return seriesInfos(resp.GetRuns()), nil
}

// ListTensors lists plugin's tensor series.
func (h *Env) ListTensors(r *Request, plugin string, f *datapb.RunTagFilter) ([]SeriesInfo, error) {
	resp, err := h.Data.ListTensors(r.Ctx, &datapb.ListTensorsRequest{ExperimentId: r.EID, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f}, h.CallOpts...)
	if err != nil {
		return nil, err
	}
	return seriesInfos(resp.GetRuns()), nil
}

// ListBlobSequences lists plugin's blob sequence series.
func (h *Env) ListBlobSequences(r *Request, plugin string, f *datapb.RunTagFilter) ([]SeriesInfo, error) {
	resp, err := h.Data.ListBlobSequences(r.Ctx, &datapb.ListBlobSequencesRequest{ExperimentId: r.EID, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f}, h.CallOpts...)
	if err != nil {
		return nil, err
	}
	return seriesInfos(resp.GetRuns()), nil
}

// series is one (run, tag)'s points as read; D is ScalarData, TensorData or
// BlobSequenceData.
type Series[D any] struct {
	Run, Tag string
	Data     D
}

type (
	ScalarSeries = Series[*datapb.ScalarData]
	TensorSeries = Series[*datapb.TensorData]
	BlobSeries   = Series[*datapb.BlobSequenceData]
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
func flatten[R runEntry[T, D], T tagEntry[D], D any](runs []R) []Series[D] {
	var out []Series[D]
	for _, run := range runs {
		for _, t := range run.GetTags() {
			out = append(out, Series[D]{run.GetRunName(), t.GetTagName(), t.GetData()})
		}
	}
	return out
}

func (h *Env) ReadScalars(r *Request, plugin string, f *datapb.RunTagFilter, k int64) ([]ScalarSeries, error) {
	return h.readScalars(r.Ctx, r, plugin, f, k)
}

// ReadScalarTails reads, of each series f selects, every point from step
// minStep on at full resolution, by the store's step index; a series with
// more than limit such points fails the call with codes.OutOfRange (read
// it downsampled instead).
func (h *Env) ReadScalarTails(r *Request, plugin string, f *datapb.RunTagFilter, minStep, limit int64) ([]ScalarSeries, error) {
	return h.readScalars(readhint.WithMinStep(r.Ctx, minStep), r, plugin, f, limit)
}

// ReadScalarBuckets reads, of each series f selects, its points in the
// step window [minStep, maxStep] (nil: unbounded) cut into n buckets, of
// each its first, last, lowest, highest and first NaN point
// (readhint.BucketsKey).
func (h *Env) ReadScalarBuckets(r *Request, plugin string, f *datapb.RunTagFilter, n int, minStep, maxStep *int64) ([]ScalarSeries, error) {
	return h.readScalars(readhint.WithBuckets(r.Ctx, n, minStep, maxStep), r, plugin, f, int64(n))
}

func (h *Env) readScalars(ctx context.Context, r *Request, plugin string, f *datapb.RunTagFilter, k int64) ([]ScalarSeries, error) {
	resp, err := h.Data.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: r.EID, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f, Downsample: &datapb.Downsample{NumPoints: k}}, h.CallOpts...)
	if err != nil {
		return nil, err
	}
	return flatten[*datapb.ReadScalarsResponse_RunEntry, *datapb.ReadScalarsResponse_TagEntry](resp.GetRuns()), nil
}

func (h *Env) ReadTensors(r *Request, plugin string, f *datapb.RunTagFilter, k int64) ([]TensorSeries, error) {
	return h.readTensors(r.Ctx, r, plugin, f, k)
}

// ReadTexts is ReadTensors for tensors whose strings are rendered as
// markdown: the read service sends no more of each string than Markdown
// reads (readhint.MaxStringBytesKey), so a long text never travels whole.
func (h *Env) ReadTexts(r *Request, plugin string, f *datapb.RunTagFilter, k int64) ([]TensorSeries, error) {
	return h.readTensors(readhint.WithMaxStringBytes(r.Ctx, h.Markdown.Limits().ReadLimit()), r, plugin, f, k)
}

func (h *Env) readTensors(ctx context.Context, r *Request, plugin string, f *datapb.RunTagFilter, k int64) ([]TensorSeries, error) {
	resp, err := h.Data.ReadTensors(ctx, &datapb.ReadTensorsRequest{ExperimentId: r.EID, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f, Downsample: &datapb.Downsample{NumPoints: k}}, h.CallOpts...)
	if err != nil {
		return nil, err
	}
	return flatten[*datapb.ReadTensorsResponse_RunEntry, *datapb.ReadTensorsResponse_TagEntry](resp.GetRuns()), nil
}

func (h *Env) ReadBlobSequences(r *Request, plugin string, f *datapb.RunTagFilter, k int64) ([]BlobSeries, error) {
	resp, err := h.Data.ReadBlobSequences(r.Ctx, &datapb.ReadBlobSequencesRequest{ExperimentId: r.EID, PluginFilter: &datapb.PluginFilter{PluginName: plugin}, RunTagFilter: f, Downsample: &datapb.Downsample{NumPoints: k}}, h.CallOpts...)
	if err != nil {
		return nil, err
	}
	return flatten[*datapb.ReadBlobSequencesResponse_RunEntry, *datapb.ReadBlobSequencesResponse_TagEntry](resp.GetRuns()), nil
}

// readBlob reads a whole blob.
func (h *Env) ReadBlob(r *Request, key string) ([]byte, error) {
	if key == "" {
		return nil, Errorf(http.StatusBadRequest, "blob_key is required")
	}
	stream, err := h.Data.ReadBlob(r.Ctx, &datapb.ReadBlobRequest{BlobKey: key}, h.CallOpts...)
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
func RequireRunTag(r *Request) (run, tag string, err error) {
	q := r.URL.Query()
	if !q.Has("run") || !q.Has("tag") {
		return "", "", Errorf(http.StatusBadRequest, "both run and tag query parameters are required")
	}
	return q.Get("run"), q.Get("tag"), nil
}

// parallel runs fns at once and returns the first error.
func Parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// downloadFormat is the format query parameter of a download: csv or json.
func DownloadFormat(r *Request, allowed ...string) (string, error) {
	f := r.URL.Query().Get("format")
	if f == "" {
		f = allowed[0]
	}
	for _, a := range allowed {
		if f == a {
			return f, nil
		}
	}
	return "", Errorf(http.StatusBadRequest, "format=%q: want one of %v", f, allowed)
}

// request is what a route handler gets: the experiment of the path and a
// context carrying the caller's credential to the services.
type Request struct {
	*http.Request
	EID string
	Ctx context.Context
}

type Func func(w http.ResponseWriter, r *Request) error

// Default points per series, as TensorBoard's plugins read them.
const (
	SamplesScalars     = 1000
	SamplesHistograms  = 500
	SamplesImages      = 10
	SamplesAudio       = 10
	SamplesText        = 100
	SamplesPRCurves    = 100
	SamplesMesh        = 100
	SamplesTimeSeriesH = 51

	// The histograms and distributions routes show at most this many of
	// the points kept (TensorBoard's SAMPLE_SIZE of each plugin).
	HistogramsRoutePoints    = 51
	DistributionsRoutePoints = 501
)

// Version is reported as TensorBoard's version by data/environment: the
// TensorBoard release whose HTTP API this package follows.
const Version = "2.22.0a0"
