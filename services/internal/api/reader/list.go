package reader

import (
	"cmp"
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// GetExperiment returns the experiment's name, description, creation time
// and where it can be viewed.
func (s *Server) GetExperiment(ctx context.Context, req *datapb.GetExperimentRequest) (*datapb.GetExperimentResponse, error) {
	e, err := s.experiment(ctx, req.GetExperimentId())
	if err != nil {
		return nil, err
	}
	resp := &datapb.GetExperimentResponse{
		DataLocation: s.dataLocation(e.ID),
		Name:         e.Name,
		Description:  e.Description,
	}
	if !e.CreateTime.IsZero() {
		resp.CreationTime = timestamppb.New(e.CreateTime)
	}
	return resp, nil
}

func (s *Server) dataLocation(eid string) string {
	if s.cfg.PublicOrigin == "" {
		return "tbhub experiment " + eid
	}
	return s.cfg.PublicOrigin + "/experiment/" + eid + "/"
}

// ListPlugins returns the plugins owning at least one series.
func (s *Server) ListPlugins(ctx context.Context, req *datapb.ListPluginsRequest) (*datapb.ListPluginsResponse, error) {
	e, err := s.experiment(ctx, req.GetExperimentId())
	if err != nil {
		return nil, err
	}
	names, err := s.st.ListPlugins(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	resp := &datapb.ListPluginsResponse{Plugins: make([]*datapb.Plugin, 0, len(names))}
	for _, n := range names {
		resp.Plugins = append(resp.Plugins, &datapb.Plugin{Name: n})
	}
	return resp, nil
}

// ListRuns returns the runs by start time (earliest first, then by name);
// runs whose start time is unknown come last. At most MaxListedRuns.
func (s *Server) ListRuns(ctx context.Context, req *datapb.ListRunsRequest) (*datapb.ListRunsResponse, error) {
	e, err := s.experiment(ctx, req.GetExperimentId())
	if err != nil {
		return nil, err
	}
	total, _, err := s.st.CountRuns(ctx, e.ID, nil)
	if err != nil {
		return nil, err
	}
	if total > s.cfg.MaxListedRuns {
		return nil, rpcerr.New(codes.OutOfRange, "the experiment has %d runs; at most %d are listed", total, s.cfg.MaxListedRuns)
	}
	runs, err := s.st.ListRuns(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	SortRuns(runs)
	resp := &datapb.ListRunsResponse{Runs: make([]*datapb.Run, 0, len(runs))}
	for _, r := range runs {
		resp.Runs = append(resp.Runs, &datapb.Run{Name: r.Name, StartTime: r.StartTime})
	}
	return resp, nil
}

// SortRuns orders runs as TensorBoard lists them: by start time, unknown
// (zero) start times last, then by name.
func SortRuns(runs []store.Run) {
	slices.SortStableFunc(runs, func(a, b store.Run) int {
		if (a.StartTime == 0) != (b.StartTime == 0) {
			if a.StartTime == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(a.Name, b.Name))
	})
}

// seriesFilter turns a request's plugin and run/tag filters into the
// store's: an absent runs or tags submessage matches all (nil), a present
// one exactly its names (non-nil, possibly empty: none).
func seriesFilter(pf *datapb.PluginFilter, rtf *datapb.RunTagFilter) (store.Filter, error) {
	if pf.GetPluginName() == "" {
		return store.Filter{}, rpcerr.New(codes.InvalidArgument, "plugin_filter.plugin_name is required")
	}
	f := store.Filter{Plugins: []string{pf.GetPluginName()}}
	if r := rtf.GetRuns(); r != nil {
		f.Runs = append([]string{}, r.GetNames()...)
	}
	if t := rtf.GetTags(); t != nil {
		f.Tags = append([]string{}, t.GetNames()...)
	}
	return f, nil
}

// listSeries returns the series of class c matching the request's filters,
// without those holding no point (TensorBoard lists only series with data).
func (s *Server) listSeries(ctx context.Context, eid string, c store.DataClass, pf *datapb.PluginFilter, rtf *datapb.RunTagFilter) (store.Experiment, []store.SeriesSummary, error) {
	e, err := s.experiment(ctx, eid)
	if err != nil {
		return e, nil, err
	}
	f, err := seriesFilter(pf, rtf)
	if err != nil {
		return e, nil, err
	}
	if f.Empty() {
		return e, nil, nil
	}
	all, err := s.st.ListSeries(ctx, e.ID, c, f)
	if err != nil {
		return e, nil, err
	}
	kept := all[:0]
	for _, ss := range all {
		if ss.PointCount > 0 {
			kept = append(kept, ss)
		}
	}
	return e, kept, nil
}

// summaryMetadata returns the series' SummaryMetadata: the stored one, with
// what the store keeps beside it filled in when the stored bytes lack it.
func summaryMetadata(ts *store.TimeSeries) *tbpb.SummaryMetadata {
	md := &tbpb.SummaryMetadata{}
	if len(ts.SummaryMetadata) > 0 {
		if err := proto.Unmarshal(ts.SummaryMetadata, md); err != nil {
			md = &tbpb.SummaryMetadata{}
		}
	}
	if md.PluginData == nil {
		md.PluginData = &tbpb.SummaryMetadata_PluginData{PluginName: ts.PluginName}
	}
	if md.DisplayName == "" {
		md.DisplayName = ts.DisplayName
	}
	if md.SummaryDescription == "" {
		md.SummaryDescription = ts.Description
	}
	if md.DataClass == tbpb.DataClass_DATA_CLASS_UNKNOWN {
		md.DataClass = tbpb.DataClass(ts.DataClass)
	}
	return md
}

// byRun walks series sorted by run, starting a run entry (newRun) whenever the
// run changes and adding each series to the current one (addTag).
func byRun[R any](series []store.SeriesSummary, newRun func(name string) R, addTag func(R, *store.SeriesSummary)) {
	var run R
	for i := range series {
		if i == 0 || series[i].Run != series[i-1].Run {
			run = newRun(series[i].Run)
		}
		addTag(run, &series[i])
	}
}

// ListScalars lists scalar series of one plugin.
func (s *Server) ListScalars(ctx context.Context, req *datapb.ListScalarsRequest) (*datapb.ListScalarsResponse, error) {
	_, series, err := s.listSeries(ctx, req.GetExperimentId(), store.DataClassScalar, req.GetPluginFilter(), req.GetRunTagFilter())
	if err != nil {
		return nil, err
	}
	resp := &datapb.ListScalarsResponse{}
	byRun(series, func(name string) *datapb.ListScalarsResponse_RunEntry {
		run := &datapb.ListScalarsResponse_RunEntry{RunName: name}
		resp.Runs = append(resp.Runs, run)
		return run
	}, func(run *datapb.ListScalarsResponse_RunEntry, ss *store.SeriesSummary) {
		run.Tags = append(run.Tags, &datapb.ListScalarsResponse_TagEntry{
			TagName: ss.Tag,
			Metadata: &datapb.ScalarMetadata{
				MaxStep:         ss.MaxStep,
				MaxWallTime:     ss.MaxWallTime,
				SummaryMetadata: summaryMetadata(&ss.TimeSeries),
			},
		})
	})
	return resp, nil
}

// ListTensors lists tensor series of one plugin.
func (s *Server) ListTensors(ctx context.Context, req *datapb.ListTensorsRequest) (*datapb.ListTensorsResponse, error) {
	_, series, err := s.listSeries(ctx, req.GetExperimentId(), store.DataClassTensor, req.GetPluginFilter(), req.GetRunTagFilter())
	if err != nil {
		return nil, err
	}
	resp := &datapb.ListTensorsResponse{}
	byRun(series, func(name string) *datapb.ListTensorsResponse_RunEntry {
		run := &datapb.ListTensorsResponse_RunEntry{RunName: name}
		resp.Runs = append(resp.Runs, run)
		return run
	}, func(run *datapb.ListTensorsResponse_RunEntry, ss *store.SeriesSummary) {
		run.Tags = append(run.Tags, &datapb.ListTensorsResponse_TagEntry{
			TagName: ss.Tag,
			Metadata: &datapb.TensorMetadata{
				MaxStep:         ss.MaxStep,
				MaxWallTime:     ss.MaxWallTime,
				SummaryMetadata: summaryMetadata(&ss.TimeSeries),
			},
		})
	})
	return resp, nil
}

// ListBlobSequences lists blob sequence series of one plugin.
func (s *Server) ListBlobSequences(ctx context.Context, req *datapb.ListBlobSequencesRequest) (*datapb.ListBlobSequencesResponse, error) {
	_, series, err := s.listSeries(ctx, req.GetExperimentId(), store.DataClassBlobSequence, req.GetPluginFilter(), req.GetRunTagFilter())
	if err != nil {
		return nil, err
	}
	resp := &datapb.ListBlobSequencesResponse{}
	byRun(series, func(name string) *datapb.ListBlobSequencesResponse_RunEntry {
		run := &datapb.ListBlobSequencesResponse_RunEntry{RunName: name}
		resp.Runs = append(resp.Runs, run)
		return run
	}, func(run *datapb.ListBlobSequencesResponse_RunEntry, ss *store.SeriesSummary) {
		run.Tags = append(run.Tags, &datapb.ListBlobSequencesResponse_TagEntry{
			TagName: ss.Tag,
			Metadata: &datapb.BlobSequenceMetadata{
				MaxStep:         ss.MaxStep,
				MaxWallTime:     ss.MaxWallTime,
				MaxLength:       ss.MaxLength,
				SummaryMetadata: summaryMetadata(&ss.TimeSeries),
			},
		})
	})
	return resp, nil
}
