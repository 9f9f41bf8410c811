package httpapi_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/readhint"
)

// series is one time series a tableProvider serves.
type series struct {
	plugin, run, tag string
	content          []byte // the plugin data's content
	steps            []int64
	scalars          []float32           // a scalar series
	tensors          []*tbpb.TensorProto // a tensor series
}

// tableProvider is a data provider serving a fixed table of series, that
// records the downsample of the last read per plugin.
type tableProvider struct {
	datapb.UnimplementedTensorBoardDataProviderServer
	series []series
	mu     sync.Mutex
	asked  map[string]int64 // plugin → num_points of its last read
	// cut is the readhint.MaxStringBytesKey of the last ReadTensors per
	// plugin ("" if none); the table sends its strings whole regardless.
	cut map[string]string
	// scalarReads are its ReadScalars calls, in order.
	scalarReads []scalarRead
	// blobs are its blob sequences (graphs_test.go), set before it
	// serves; blobReads counts the ReadBlob calls.
	blobs     []blobSeries
	blobReads int
}

// scalarRead is a ReadScalars call: its num_points and the bucketed
// min/max hint it carried ("" if none).
type scalarRead struct {
	numPoints int64
	buckets   string
}

func (p *tableProvider) match(plugin string, f *datapb.RunTagFilter, scalar bool) []series {
	var out []series
	for _, s := range p.series {
		if s.plugin != plugin || (s.scalars != nil) != scalar {
			continue
		}
		if f.GetRuns() != nil && !slices.Contains(f.GetRuns().GetNames(), s.run) {
			continue
		}
		if f.GetTags() != nil && !slices.Contains(f.GetTags().GetNames(), s.tag) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func (p *tableProvider) record(plugin string, d *datapb.Downsample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asked == nil {
		p.asked = map[string]int64{}
	}
	p.asked[plugin] = d.GetNumPoints()
}

// numPoints is the num_points of the last read of plugin.
func (p *tableProvider) numPoints(plugin string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked[plugin]
}

func (s series) metadata() *tbpb.SummaryMetadata {
	return &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: s.plugin, Content: s.content}}
}

func (s series) wallTimes() []float64 {
	w := make([]float64, len(s.steps))
	for i, st := range s.steps {
		w[i] = 1000 + float64(st)
	}
	return w
}

func (p *tableProvider) ListScalars(_ context.Context, req *datapb.ListScalarsRequest) (*datapb.ListScalarsResponse, error) {
	resp := &datapb.ListScalarsResponse{}
	for _, s := range p.match(req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter(), true) {
		resp.Runs = append(resp.Runs, &datapb.ListScalarsResponse_RunEntry{RunName: s.run, Tags: []*datapb.ListScalarsResponse_TagEntry{{
			TagName: s.tag, Metadata: &datapb.ScalarMetadata{MaxStep: slices.Max(s.steps), SummaryMetadata: s.metadata()}}}})
	}
	return resp, nil
}

func (p *tableProvider) ReadScalars(ctx context.Context, req *datapb.ReadScalarsRequest) (*datapb.ReadScalarsResponse, error) {
	p.record(req.GetPluginFilter().GetPluginName(), req.GetDownsample())
	p.mu.Lock()
	p.scalarReads = append(p.scalarReads, scalarRead{req.GetDownsample().GetNumPoints(), strings.Join(metadata.ValueFromIncomingContext(ctx, "tbhub-buckets"), ",")})
	p.mu.Unlock()
	resp := &datapb.ReadScalarsResponse{}
	for _, s := range p.match(req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter(), true) {
		resp.Runs = append(resp.Runs, &datapb.ReadScalarsResponse_RunEntry{RunName: s.run, Tags: []*datapb.ReadScalarsResponse_TagEntry{{
			TagName: s.tag, Data: &datapb.ScalarData{Step: s.steps, WallTime: s.wallTimes(), Value: s.scalars}}}})
	}
	return resp, nil
}

func (p *tableProvider) ListTensors(_ context.Context, req *datapb.ListTensorsRequest) (*datapb.ListTensorsResponse, error) {
	resp := &datapb.ListTensorsResponse{}
	for _, s := range p.match(req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter(), false) {
		resp.Runs = append(resp.Runs, &datapb.ListTensorsResponse_RunEntry{RunName: s.run, Tags: []*datapb.ListTensorsResponse_TagEntry{{
			TagName: s.tag, Metadata: &datapb.TensorMetadata{MaxStep: slices.Max(s.steps), SummaryMetadata: s.metadata()}}}})
	}
	return resp, nil
}

func (p *tableProvider) ReadTensors(ctx context.Context, req *datapb.ReadTensorsRequest) (*datapb.ReadTensorsResponse, error) {
	p.record(req.GetPluginFilter().GetPluginName(), req.GetDownsample())
	p.mu.Lock()
	if p.cut == nil {
		p.cut = map[string]string{}
	}
	p.cut[req.GetPluginFilter().GetPluginName()] = strings.Join(metadata.ValueFromIncomingContext(ctx, readhint.MaxStringBytesKey), ",")
	p.mu.Unlock()
	resp := &datapb.ReadTensorsResponse{}
	for _, s := range p.match(req.GetPluginFilter().GetPluginName(), req.GetRunTagFilter(), false) {
		resp.Runs = append(resp.Runs, &datapb.ReadTensorsResponse_RunEntry{RunName: s.run, Tags: []*datapb.ReadTensorsResponse_TagEntry{{
			TagName: s.tag, Data: &datapb.TensorData{Step: s.steps, WallTime: s.wallTimes(), Value: s.tensors}}}})
	}
	return resp, nil
}

// serveTable serves series through the HTTP API.
func serveTable(t *testing.T, cfg httpapi.Config, ss ...series) (*tableProvider, *httptest.Server) {
	t.Helper()
	p := &tableProvider{series: ss}
	cfg.Data = routetest.Dial(t, p)
	cfg.CacheTTL = -1
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return p, srv
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (p *tableProvider) ListPlugins(context.Context, *datapb.ListPluginsRequest) (*datapb.ListPluginsResponse, error) {
	resp := &datapb.ListPluginsResponse{}
	seen := map[string]bool{}
	for _, s := range p.series {
		if !seen[s.plugin] {
			seen[s.plugin] = true
			resp.Plugins = append(resp.Plugins, &datapb.Plugin{Name: s.plugin})
		}
	}
	return resp, nil
}

func (p *tableProvider) GetExperiment(context.Context, *datapb.GetExperimentRequest) (*datapb.GetExperimentResponse, error) {
	return &datapb.GetExperimentResponse{Name: "table"}, nil
}
