package compare

import (
	"context"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tbhub/tbhub/schemas/experimentid"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	hparamspb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
)

// Client is the read service (inner) as the HTTP API's routes read it: a
// call whose context carries a comparison (With) for its experiment ID is
// answered by calls for the comparison's members; any other call is
// passed to inner as it is. Create it with New.
type Client struct {
	inner datapb.TensorBoardDataProviderClient
	lim   Limits
}

var _ datapb.TensorBoardDataProviderClient = (*Client)(nil)

// New returns a Client reading through inner within lim (DefaultLimits
// for each field that is zero).
func New(inner datapb.TensorBoardDataProviderClient, lim Limits) *Client {
	return &Client{inner: inner, lim: lim.OrDefaults()}
}

// Limits are the limits c applies.
func (c *Client) Limits() Limits { return c.lim }

// Resolve reads which of the comparison's experiments the caller (the
// credential in ctx) may read, and their names. None visible is
// ErrNoneVisible; a malformed ID or too many members is a 400.
func (c *Client) Resolve(ctx context.Context, id string, opts ...grpc.CallOption) (*Comparison, error) {
	ids, err := ParseID(id, c.lim.MaxMembers)
	if err != nil {
		return nil, err
	}
	found := make([]*Member, len(ids))
	err = parallel(len(ids), c.lim.MaxParallel, func(i int) error {
		resp, err := c.inner.GetExperiment(ctx, &datapb.GetExperimentRequest{ExperimentId: ids[i]}, opts...)
		if hidden(err) {
			return nil
		}
		if err != nil {
			return err
		}
		found[i] = &Member{ID: ids[i], Name: resp.GetName(), Created: resp.GetCreationTime()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cmp := &Comparison{ID: id}
	for _, m := range found {
		if m == nil {
			cmp.Hidden++
		} else {
			cmp.Members = append(cmp.Members, *m)
		}
	}
	if len(cmp.Members) == 0 {
		return nil, ErrNoneVisible
	}
	labels(cmp.Members)
	return cmp, nil
}

// fan calls call for each member the request's run filter selects
// (at most MaxParallel at once), with the request for that member: its
// experiment ID, and the runs of the filter that are its, unprefixed. The
// runs each answers are renamed "label/run" and concatenated in the
// comparison's order. A member the caller can no longer read is left out.
func fan[Req, Run proto.Message](ctx context.Context, c *Client, in Req, opts []grpc.CallOption, call func(context.Context, Req) ([]Run, error)) ([]Run, error) {
	cmp, ok := of(ctx, getString(in, "experiment_id"))
	if !ok {
		return call(ctx, in)
	}
	reqs := make([]Req, len(cmp.Members))
	selected := make([]bool, len(cmp.Members))
	for i, m := range cmp.Members {
		reqs[i], selected[i] = forMember(in, cmp, m)
	}
	parts := make([][]Run, len(cmp.Members))
	err := parallel(len(cmp.Members), c.lim.MaxParallel, func(i int) error {
		if !selected[i] {
			return nil // the filter names none of its runs
		}
		runs, err := call(ctx, reqs[i])
		if hidden(err) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, r := range runs {
			prefixRun(r, cmp.Members[i].Label)
		}
		parts[i] = runs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// forMember returns in for member m: a copy with m's experiment ID and
// with a run filter naming only m's runs, by their names in m. ok is
// false when in's filter names runs but none of m's.
func forMember[Req proto.Message](in Req, cmp *Comparison, m Member) (req Req, ok bool) {
	req = proto.Clone(in).(Req)
	msg := req.ProtoReflect()
	msg.Set(msg.Descriptor().Fields().ByName("experiment_id"), protoreflect.ValueOfString(m.ID))
	fd := msg.Descriptor().Fields().ByName("run_tag_filter")
	if fd == nil || !msg.Has(fd) {
		return req, true
	}
	f := msg.Get(fd).Message().Interface().(*datapb.RunTagFilter)
	if f.GetRuns() == nil {
		return req, true
	}
	var names []string
	for _, run := range f.GetRuns().GetNames() {
		if owner, name, ok := cmp.Split(run); ok && owner.ID == m.ID {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return req, false
	}
	f.Runs.Names = names
	return req, true
}

// prefixRun renames a run entry (field run_name, or a Run's name) to
// "label/name".
func prefixRun(m proto.Message, label string) {
	msg := m.ProtoReflect()
	fields := msg.Descriptor().Fields()
	fd := fields.ByName("run_name")
	if fd == nil {
		fd = fields.ByName("name")
	}
	msg.Set(fd, protoreflect.ValueOfString(label+"/"+msg.Get(fd).String()))
}

func getString(m proto.Message, field protoreflect.Name) string {
	msg := m.ProtoReflect()
	return msg.Get(msg.Descriptor().Fields().ByName(field)).String()
}

// GetExperiment answers for the comparison: its name is its members'
// labels joined by " + ", its creation time the earliest of theirs.
func (c *Client) GetExperiment(ctx context.Context, in *datapb.GetExperimentRequest, opts ...grpc.CallOption) (*datapb.GetExperimentResponse, error) {
	cmp, ok := of(ctx, in.GetExperimentId())
	if !ok {
		return c.inner.GetExperiment(ctx, in, opts...)
	}
	var labels []string
	for _, m := range cmp.Members {
		labels = append(labels, m.Label)
	}
	out := &datapb.GetExperimentResponse{Name: joinLabels(labels)}
	for _, m := range cmp.Members {
		if t := m.Created; t != nil && (out.CreationTime == nil || t.AsTime().Before(out.CreationTime.AsTime())) {
			out.CreationTime = t
		}
	}
	return out, nil
}

// ListPlugins answers the plugins any member has data for.
func (c *Client) ListPlugins(ctx context.Context, in *datapb.ListPluginsRequest, opts ...grpc.CallOption) (*datapb.ListPluginsResponse, error) {
	cmp, ok := of(ctx, in.GetExperimentId())
	if !ok {
		return c.inner.ListPlugins(ctx, in, opts...)
	}
	parts := make([][]*datapb.Plugin, len(cmp.Members))
	err := parallel(len(cmp.Members), c.lim.MaxParallel, func(i int) error {
		resp, err := c.inner.ListPlugins(ctx, &datapb.ListPluginsRequest{ExperimentId: cmp.Members[i].ID}, opts...)
		if hidden(err) {
			return nil
		}
		parts[i] = resp.GetPlugins()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &datapb.ListPluginsResponse{}
	seen := map[string]bool{}
	for _, p := range slices.Concat(parts...) {
		if !seen[p.GetName()] {
			seen[p.GetName()] = true
			out.Plugins = append(out.Plugins, p)
		}
	}
	return out, nil
}

func (c *Client) ListRuns(ctx context.Context, in *datapb.ListRunsRequest, opts ...grpc.CallOption) (*datapb.ListRunsResponse, error) {
	runs, err := fan(ctx, c, in, opts, func(ctx context.Context, req *datapb.ListRunsRequest) ([]*datapb.Run, error) {
		resp, err := c.inner.ListRuns(ctx, req, opts...)
		return resp.GetRuns(), err
	})
	if err != nil {
		return nil, err
	}
	return &datapb.ListRunsResponse{Runs: runs}, nil
}

func (c *Client) ListScalars(ctx context.Context, in *datapb.ListScalarsRequest, opts ...grpc.CallOption) (*datapb.ListScalarsResponse, error) {
	runs, err := fan(ctx, c, in, opts, func(ctx context.Context, req *datapb.ListScalarsRequest) ([]*datapb.ListScalarsResponse_RunEntry, error) {
		resp, err := c.inner.ListScalars(ctx, req, opts...)
		return resp.GetRuns(), err
	})
	if err != nil {
		return nil, err
	}
	return &datapb.ListScalarsResponse{Runs: runs}, nil
}

func (c *Client) ReadScalars(ctx context.Context, in *datapb.ReadScalarsRequest, opts ...grpc.CallOption) (*datapb.ReadScalarsResponse, error) {
	runs, err := fan(ctx, c, in, opts, func(ctx context.Context, req *datapb.ReadScalarsRequest) ([]*datapb.ReadScalarsResponse_RunEntry, error) {
		resp, err := c.inner.ReadScalars(ctx, req, opts...)
		return resp.GetRuns(), err
	})
	if err != nil {
		return nil, err
	}
	return &datapb.ReadScalarsResponse{Runs: runs}, nil
}

func (c *Client) ListTensors(ctx context.Context, in *datapb.ListTensorsRequest, opts ...grpc.CallOption) (*datapb.ListTensorsResponse, error) {
	runs, err := fan(ctx, c, in, opts, func(ctx context.Context, req *datapb.ListTensorsRequest) ([]*datapb.ListTensorsResponse_RunEntry, error) {
		resp, err := c.inner.ListTensors(ctx, req, opts...)
		return resp.GetRuns(), err
	})
	if err != nil {
		return nil, err
	}
	if cmp, ok := of(ctx, in.GetExperimentId()); ok && in.GetPluginFilter().GetPluginName() == hparamsPlugin {
		labelGroups(cmp, runs)
		mergeConfigs(runs)
	}
	return &datapb.ListTensorsResponse{Runs: runs}, nil
}

const (
	hparamsPlugin = "hparams"
	// hparamsStartTag holds a session's start; its group_name names the
	// session's group (the run's name when empty).
	hparamsStartTag = "_hparams_/session_start_info"
	// hparamsExperimentTag holds an experiment's hparams config: the
	// hparams and metrics it declares.
	hparamsExperimentTag = "_hparams_/experiment"
)

// hparamsEntries calls fn with the decoded plugin data of each hparams
// series of runs tagged tag, and its member; what fn returns true for is
// written back.
func hparamsEntries(cmp *Comparison, runs []*datapb.ListTensorsResponse_RunEntry, tag string, fn func(m Member, hp *hparamspb.HParamsPluginData) bool) {
	for _, run := range runs {
		m, _, ok := cmp.Split(run.GetRunName())
		if !ok {
			continue
		}
		for _, t := range run.GetTags() {
			pd := t.GetMetadata().GetSummaryMetadata().GetPluginData()
			if t.GetTagName() != tag || pd == nil {
				continue
			}
			var hp hparamspb.HParamsPluginData
			if proto.Unmarshal(pd.GetContent(), &hp) != nil || !fn(m, &hp) {
				continue // unreadable (the plugin skips it too) or unchanged
			}
			if b, err := proto.Marshal(&hp); err == nil {
				pd.Content = b
			}
		}
	}
}

// labelGroups names the hparams session groups of a comparison's runs as
// their runs are named, "label/group": two experiments' groups of one
// name ("trial-0") stay apart instead of being read as one group.
func labelGroups(cmp *Comparison, runs []*datapb.ListTensorsResponse_RunEntry) {
	hparamsEntries(cmp, runs, hparamsStartTag, func(m Member, hp *hparamspb.HParamsPluginData) bool {
		start := hp.GetSessionStartInfo()
		if start.GetGroupName() == "" {
			return false // grouped by its run's name, labelled already
		}
		start.GroupName = m.Label + "/" + start.GetGroupName()
		return true
	})
}

// mergeConfigs makes the first hparams config of a comparison's runs
// declare every hparam and metric any member's config declares (the
// first declaration of a name wins): the hparams plugin reads the first
// config it finds, as TensorBoard does, which would leave the columns of
// every other experiment out.
func mergeConfigs(runs []*datapb.ListTensorsResponse_RunEntry) {
	var first *hparamspb.HParamsPluginData
	var firstPD *tbpb.SummaryMetadata_PluginData
	hparams, metrics := map[string]bool{}, map[string]bool{}
	changed := false
	for _, run := range runs {
		for _, t := range run.GetTags() {
			pd := t.GetMetadata().GetSummaryMetadata().GetPluginData()
			var hp hparamspb.HParamsPluginData
			if t.GetTagName() != hparamsExperimentTag || pd == nil || proto.Unmarshal(pd.GetContent(), &hp) != nil || hp.GetExperiment() == nil {
				continue
			}
			if first == nil {
				first, firstPD = &hp, pd
			}
			exp := hp.GetExperiment()
			for _, h := range exp.GetHparamInfos() {
				if !hparams[h.GetName()] {
					hparams[h.GetName()] = true
					if first != &hp {
						first.GetExperiment().HparamInfos = append(first.GetExperiment().HparamInfos, h)
						changed = true
					}
				}
			}
			for _, mi := range exp.GetMetricInfos() {
				key := mi.GetName().GetGroup() + "\x00" + mi.GetName().GetTag()
				if !metrics[key] {
					metrics[key] = true
					if first != &hp {
						first.GetExperiment().MetricInfos = append(first.GetExperiment().MetricInfos, mi)
						changed = true
					}
				}
			}
		}
	}
	if changed {
		if b, err := proto.Marshal(first); err == nil {
			firstPD.Content = b
		}
	}
}

func (c *Client) ReadTensors(ctx context.Context, in *datapb.ReadTensorsRequest, opts ...grpc.CallOption) (*datapb.ReadTensorsResponse, error) {
	runs, err := fan(ctx, c, in, opts, func(ctx context.Context, req *datapb.ReadTensorsRequest) ([]*datapb.ReadTensorsResponse_RunEntry, error) {
		resp, err := c.inner.ReadTensors(ctx, req, opts...)
		return resp.GetRuns(), err
	})
	if err != nil {
		return nil, err
	}
	return &datapb.ReadTensorsResponse{Runs: runs}, nil
}

func (c *Client) ListBlobSequences(ctx context.Context, in *datapb.ListBlobSequencesRequest, opts ...grpc.CallOption) (*datapb.ListBlobSequencesResponse, error) {
	runs, err := fan(ctx, c, in, opts, func(ctx context.Context, req *datapb.ListBlobSequencesRequest) ([]*datapb.ListBlobSequencesResponse_RunEntry, error) {
		resp, err := c.inner.ListBlobSequences(ctx, req, opts...)
		return resp.GetRuns(), err
	})
	if err != nil {
		return nil, err
	}
	return &datapb.ListBlobSequencesResponse{Runs: runs}, nil
}

func (c *Client) ReadBlobSequences(ctx context.Context, in *datapb.ReadBlobSequencesRequest, opts ...grpc.CallOption) (*datapb.ReadBlobSequencesResponse, error) {
	runs, err := fan(ctx, c, in, opts, func(ctx context.Context, req *datapb.ReadBlobSequencesRequest) ([]*datapb.ReadBlobSequencesResponse_RunEntry, error) {
		resp, err := c.inner.ReadBlobSequences(ctx, req, opts...)
		return resp.GetRuns(), err
	})
	if err != nil {
		return nil, err
	}
	return &datapb.ReadBlobSequencesResponse{Runs: runs}, nil
}

// ReadBlob reads, in a comparison, only a blob of a visible member: blob
// keys name their experiment.
func (c *Client) ReadBlob(ctx context.Context, in *datapb.ReadBlobRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[datapb.ReadBlobResponse], error) {
	cmp, ok := From(ctx)
	if !ok {
		return c.inner.ReadBlob(ctx, in, opts...)
	}
	eid, ok := experimentid.OfBlobKey(in.GetBlobKey())
	if _, member := cmp.member(eid); !ok || !member {
		return nil, status.Errorf(codes.NotFound, "blob %q not found in this comparison", in.GetBlobKey())
	}
	return c.inner.ReadBlob(ctx, in, opts...)
}
