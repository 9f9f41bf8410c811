package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/pbtxt"
)

// blobSeries is one blob sequence a tableProvider serves: one step whose
// one blob is blob, under the key plugin/run/tag.
type blobSeries struct {
	plugin, run, tag string
	blob             []byte
}

func (b blobSeries) key() string { return b.plugin + "/" + b.run + "/" + b.tag }

func (p *tableProvider) ReadBlobSequences(_ context.Context, req *datapb.ReadBlobSequencesRequest) (*datapb.ReadBlobSequencesResponse, error) {
	resp := &datapb.ReadBlobSequencesResponse{}
	f := req.GetRunTagFilter()
	for _, b := range p.blobs {
		if b.plugin != req.GetPluginFilter().GetPluginName() || !slices.Contains(f.GetRuns().GetNames(), b.run) || !slices.Contains(f.GetTags().GetNames(), b.tag) {
			continue
		}
		resp.Runs = append(resp.Runs, &datapb.ReadBlobSequencesResponse_RunEntry{RunName: b.run, Tags: []*datapb.ReadBlobSequencesResponse_TagEntry{{
			TagName: b.tag, Data: &datapb.BlobSequenceData{Step: []int64{1}, WallTime: []float64{1}, Values: []*datapb.BlobReferenceSequence{{
				BlobRefs: []*datapb.BlobReference{{BlobKey: b.key()}}}}}}}})
	}
	return resp, nil
}

func (p *tableProvider) ReadBlob(req *datapb.ReadBlobRequest, stream grpc.ServerStreamingServer[datapb.ReadBlobResponse]) error {
	p.mu.Lock()
	p.blobReads++
	p.mu.Unlock()
	for _, b := range p.blobs {
		if b.key() == req.GetBlobKey() {
			for len(b.blob) > 0 {
				n := min(len(b.blob), 1<<20)
				if err := stream.Send(&datapb.ReadBlobResponse{Data: b.blob[:n]}); err != nil {
					return err
				}
				b.blob = b.blob[n:]
			}
			return nil
		}
	}
	return fmt.Errorf("no blob %q", req.GetBlobKey())
}

// nestedAttrGraph is a GraphDef with one node whose attribute nests depth
// levels deep: about 17 bytes per level, and a text that grows with the
// square of depth (two spaces of indent per message level).
func nestedAttrGraph(depth int) *tbpb.GraphDef {
	v := &tbpb.AttrValue{Value: &tbpb.AttrValue_I{I: 1}}
	for range depth {
		v = &tbpb.AttrValue{Value: &tbpb.AttrValue_Func{Func: &tbpb.NameAttrList{Name: "f", Attr: map[string]*tbpb.AttrValue{"a": v}}}}
	}
	return &tbpb.GraphDef{Node: []*tbpb.NodeDef{{Name: "n", Op: "Op", Attr: map[string]*tbpb.AttrValue{"a": v}}}}
}

// longScopeKeras is a 150 KB Keras config: a Sequential model with a
// 100 KiB name and 1,000 layers, each of whose nodes would be named, and
// fed, under that name (205 MB of text).
func longScopeKeras() []byte {
	var b strings.Builder
	b.WriteString(`{"class_name": "Sequential", "config": {"name": "` + strings.Repeat("m", 100<<10) + `", "layers": [`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"class_name": "Dense", "config": {"name": "d%d"}}`, i)
	}
	b.WriteString("]}}")
	return []byte(b.String())
}

// allocatedBytes is how many bytes fn allocates on the heap (in this
// process: the handler, and the fake read service serving it).
func allocatedBytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The graph viewer's hostile inputs (issue 20 #2) answer a bounded error
// having allocated a bounded amount: a 50 KB GraphDef nesting an
// attribute 3,000 deep (216 MB of text), and a 150 KB Keras model whose
// 100 KiB name prefixes 1,000 layers (205 MB of text).
func TestHostileGraphsAreBounded(t *testing.T) {
	deep := mustMarshal(t, nestedAttrGraph(3000))
	keras := longScopeKeras()
	if len(deep) > 60<<10 || len(keras) > 160<<10 {
		t.Fatalf("the inputs are %d and %d bytes, want about 50 KB and 150 KB", len(deep), len(keras))
	}
	p, srv := serveTable(t, httpapi.Config{})
	p.blobs = []blobSeries{{"graphs", "deep", "__run_graph__", deep}, {"graph_keras_model", "keras", "model", keras}}
	base := srv.URL + "/experiment/e1/data/plugin/graphs/graph?"
	for _, c := range []struct{ query, want string }{
		{"run=deep", "deeper than 100 levels"},
		{"run=keras&tag=model&conceptual=true&keras2_inputs=true", "longer than 4096 bytes"},
	} {
		var code int
		var body string
		allocated := allocatedBytes(func() {
			resp, b := get(t, base+c.query)
			code, body = resp.StatusCode, b
		})
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %.200q, want 413 saying %q", c.query, code, body, c.want)
		}
		t.Logf("%s: %d, %d KB allocated", c.query, code, allocated>>10)
		if allocated > 16<<20 {
			t.Errorf("%s allocated %d MB, want under 16 MB (over 200 MB unbounded)", c.query, allocated>>20)
		}
	}
}

// N readers of one graph cost one conversion: the answer, or the error,
// is kept by blob; concurrent readers wait for the one being made.
func TestGraphAnswersAreKeptByBlob(t *testing.T) {
	g := &tbpb.GraphDef{Node: []*tbpb.NodeDef{{Name: "a", Op: "Const"}, {Name: "b", Op: "Identity", Input: []string{"a"}}}}
	p, srv := serveTable(t, httpapi.Config{})
	p.blobs = []blobSeries{{"graphs", "ok", "__run_graph__", mustMarshal(t, g)}, {"graphs", "deep", "__run_graph__", mustMarshal(t, nestedAttrGraph(3000))}}
	base := srv.URL + "/experiment/e1/data/plugin/graphs/graph?run="
	for _, run := range []string{"ok", "deep"} {
		p.mu.Lock()
		p.blobReads = 0
		p.mu.Unlock()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				resp, body := get(t, base+run)
				if run == "ok" && (resp.StatusCode != http.StatusOK || body != string(pbtxt.Marshal(g))) {
					t.Errorf("run %s: %d %q, want the graph's text", run, resp.StatusCode, body)
				}
				if run == "deep" && resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("run %s: %d, want 413", run, resp.StatusCode)
				}
			})
		}
		wg.Wait()
		p.mu.Lock()
		reads := p.blobReads
		p.mu.Unlock()
		if reads != 1 {
			t.Errorf("8 readers of run %s's graph read its blob %d times, want once", run, reads)
		}
	}
}
