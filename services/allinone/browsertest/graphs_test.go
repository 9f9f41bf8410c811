package browsertest

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cdruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// The graphs experiment: run "big" holds a generated GraphDef of exactly
// bigGraphNodes nodes (36 blocks of 250 ops four scopes deep, a flat
// "save/" scope of 998 ops, and two ops at the root) with run metadata
// "step1" timing block_00's ops; run "keras" holds a Keras model config.
// It is written once, through the write service's gRPC API, by the first
// test or benchmark that needs it.
var graphsExp struct {
	once sync.Once
	eid  string
	err  error
}

const bigGraphNodes = 10_000

func graphsExperiment(tb testing.TB) string {
	tb.Helper()
	requireSetup(tb)
	graphsExp.once.Do(func() { graphsExp.eid, graphsExp.err = writeGraphsExperiment() })
	if graphsExp.err != nil {
		tb.Fatal(graphsExp.err)
	}
	return graphsExp.eid
}

func requireSetup(tb testing.TB) {
	tb.Helper()
	if env.setupErr != nil {
		tb.Fatal(env.setupErr)
	}
}

// bigGraph builds the 10,000-node graph. Block b's ops live in
// block_BB/{attention,norm1,mlp,norm2,proj}/dense_D/{kernel,kernel/read,
// bias,bias/read,MatMul,BiasAdd} (240) plus ten block-level ops chained
// from block_BB/input to block_BB/output; each block reads the previous
// one's output.
func bigGraph() *tbpb.GraphDef {
	g := &tbpb.GraphDef{}
	float := map[string]*tbpb.AttrValue{"T": {Value: &tbpb.AttrValue_Type{Type: tbpb.DataType_DT_FLOAT}}}
	add := func(name, op, device string, attr map[string]*tbpb.AttrValue, inputs ...string) {
		g.Node = append(g.Node, &tbpb.NodeDef{Name: name, Op: op, Device: device, Input: inputs, Attr: attr})
	}
	variable := func(dims ...int64) map[string]*tbpb.AttrValue {
		shape := &tbpb.TensorShapeProto{}
		for _, d := range dims {
			shape.Dim = append(shape.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
		}
		return map[string]*tbpb.AttrValue{
			"dtype": {Value: &tbpb.AttrValue_Type{Type: tbpb.DataType_DT_FLOAT}},
			"shape": {Value: &tbpb.AttrValue_Shape{Shape: shape}},
		}
	}
	add("input", "Placeholder", "/device:CPU:0", variable(-1, 512))
	prev := "input"
	var variables []string
	for b := range 36 {
		block := fmt.Sprintf("block_%02d/", b)
		dev := fmt.Sprintf("/device:GPU:%d", b%2)
		add(block+"input", "Identity", dev, float, prev)
		x := block + "input"
		for _, sub := range []string{"attention", "norm1", "mlp", "norm2", "proj"} {
			for d := range 8 {
				p := fmt.Sprintf("%s%s/dense_%d/", block, sub, d)
				add(p+"kernel", "VariableV2", dev, variable(512, 512))
				add(p+"kernel/read", "Identity", dev, float, p+"kernel")
				add(p+"bias", "VariableV2", dev, variable(512))
				add(p+"bias/read", "Identity", dev, float, p+"bias")
				add(p+"MatMul", "MatMul", dev, float, x, p+"kernel/read")
				add(p+"BiasAdd", "BiasAdd", dev, float, p+"MatMul", p+"bias/read")
				variables = append(variables, p+"kernel", p+"bias")
				x = p + "BiasAdd"
			}
		}
		for i := range 8 {
			name := fmt.Sprintf("%sresidual_%d", block, i)
			add(name, "AddV2", dev, float, x, block+"input")
			x = name
		}
		add(block+"output", "Identity", dev, float, x)
		prev = block + "output"
	}
	add("loss", "Mean", "/device:GPU:1", float, prev)
	add("save/filename", "Const", "/device:CPU:0", nil)
	add("save/RestoreV2", "RestoreV2", "/device:CPU:0", nil, "save/filename")
	for i := range bigGraphNodes - len(g.Node) {
		add(fmt.Sprintf("save/Assign_%d", i), "Assign", "/device:CPU:0", float, variables[i%len(variables)], "save/RestoreV2")
	}
	return g
}

// bigGraphStats is run metadata timing block_00's ops: MatMuls take 120 µs
// and allocate 1 MiB, everything else 3 µs.
func bigGraphStats(g *tbpb.GraphDef) *tbpb.RunMetadata {
	dev := &tbpb.DeviceStepStats{Device: "/job:localhost/replica:0/task:0/device:GPU:0"}
	for _, n := range g.GetNode() {
		if !strings.HasPrefix(n.GetName(), "block_00/") {
			continue
		}
		ns := &tbpb.NodeExecStats{NodeName: n.GetName(), AllStartMicros: 1_700_000_000_000_000, AllEndRelMicros: 3}
		if n.GetOp() == "MatMul" {
			ns.AllEndRelMicros = 120
			ns.Memory = []*tbpb.AllocatorMemoryUsed{{AllocatorName: "GPU_0_bfc", TotalBytes: 1 << 20}}
		}
		dev.NodeStats = append(dev.NodeStats, ns)
	}
	return &tbpb.RunMetadata{StepStats: &tbpb.StepStats{DevStats: []*tbpb.DeviceStepStats{dev}}}
}

// kerasModel is a Keras 3 functional model config: an input, a nested
// Sequential block of two layers, and a Dense head.
const kerasModel = `{"module": "keras", "class_name": "Functional", "config": {"name": "classifier", "trainable": true,
 "layers": [
  {"module": "keras.layers", "class_name": "InputLayer", "name": "pixels", "config": {"name": "pixels", "dtype": "float32", "batch_shape": [null, 784]}, "inbound_nodes": []},
  {"module": "keras", "class_name": "Sequential", "name": "features", "config": {"name": "features", "layers": [
     {"module": "keras.layers", "class_name": "Dense", "config": {"name": "hidden", "units": 128, "activation": "relu", "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}}}},
     {"module": "keras.layers", "class_name": "Dropout", "config": {"name": "dropout", "rate": 0.2}}]},
   "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 784], "dtype": "float32", "keras_history": ["pixels", 0, 0]}}], "kwargs": {}}]},
  {"module": "keras.layers", "class_name": "Dense", "name": "logits", "config": {"name": "logits", "units": 10, "dtype": "float32"},
   "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 128], "dtype": "float32", "keras_history": ["features", 1, 0]}}], "kwargs": {}}]}],
 "input_layers": [["pixels", 0, 0]], "output_layers": [["logits", 0, 0]]}}`

func writeGraphsExperiment() (string, error) {
	w, ctx, done, err := writerClient()
	if err != nil {
		return "", err
	}
	defer done()
	exp, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "graphs: 10,000 nodes and a Keras model"})
	if err != nil {
		return "", err
	}
	g := bigGraph()
	graph, err := proto.Marshal(g)
	if err != nil {
		return "", err
	}
	stats, err := proto.Marshal(bigGraphStats(g))
	if err != nil {
		return "", err
	}
	for _, b := range []struct {
		run, tag, plugin string
		data             []byte
	}{
		{"big", "__run_graph__", "graphs", graph},
		{"big", "step1", "graph_tagged_run_metadata", stats},
		{"keras", "keras", "graph_keras_model", []byte(kerasModel)},
	} {
		if err := writeBlob(ctx, w, exp.GetExperimentId(), b.run, b.tag, b.plugin, b.data); err != nil {
			return "", fmt.Errorf("writing %s/%s: %w", b.run, b.tag, err)
		}
	}
	return exp.GetExperimentId(), nil
}

// writeBlob stores data as the only blob of (run, tag) at step 0, in 1 MiB
// chunks.
func writeBlob(ctx context.Context, w servicepb.TensorBoardWriterServiceClient, eid, run, tag, plugin string, data []byte) error {
	seq, err := w.GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{
		ExperimentId: eid, Run: run, Tag: tag, WallTime: timestamppb.New(time.Unix(1_700_000_000, 0)), FinalSequenceLength: 1,
		Metadata: &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: plugin}, DataClass: tbpb.DataClass_DATA_CLASS_BLOB_SEQUENCE},
	})
	if err != nil {
		return err
	}
	stream, err := w.WriteBlob(ctx)
	if err != nil {
		return err
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for off := 0; off < len(data); off += 1 << 20 {
		chunk := data[off:min(off+1<<20, len(data))]
		req := &servicepb.WriteBlobRequest{BlobSequenceId: seq.GetBlobSequenceId(), Data: chunk, Offset: int64(off),
			BlobBytes: int64(len(data)), Crc32C: crc32.Checksum(chunk, castagnoli)}
		if off+len(chunk) == len(data) {
			req.FinalizeObject, req.FinalCrc32C = true, crc32.Checksum(data, castagnoli)
		}
		if err := stream.Send(req); err != nil {
			break // the status comes from Recv
		}
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// Expressions over the graph canvas.
const (
	graphNodeNames = `[...document.querySelectorAll(".graph-canvas .node")].map(n => n.dataset.name).sort()`
	selectedNode   = `document.querySelector(".graph-canvas .node.selected")?.dataset.name`
)

func graphNode(name string) string {
	return fmt.Sprintf(`document.querySelector('.graph-canvas .node[data-name=%q]')`, name)
}

// clickNode clicks a node's box (or, with head, an open scope's header)
// as a user would.
func clickNode(name string, head bool) chromedp.Action {
	sel := "rect"
	if head {
		sel = "rect.head"
	}
	return chromedp.Evaluate(fmt.Sprintf(`%s.querySelector(%q).dispatchEvent(new MouseEvent("click", {bubbles: true}))`, graphNode(name), sel), nil)
}

func urlParams(ctx context.Context, t *testing.T, name string) []string {
	t.Helper()
	var v []string
	run(t, ctx, chromedp.Evaluate(fmt.Sprintf(`new URLSearchParams(location.search).getAll(%q)`, name), &v))
	return v
}

// TestGraphScopesAndNodeDetails opens the corpus's small graph: scopes
// open in place, a node's details show in the panel, the view survives a
// reload, and search finds a node from anywhere.
func TestGraphScopesAndNodeDetails(t *testing.T) {
	ctx := tab(t, true)
	q := url.Values{"tab": {"graphs"}, "runFilter": {"^generated/graph$"}}
	var top, inner []string
	var op string
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelectorAll(".graph-canvas .node").length > 0`),
		chromedp.Evaluate(graphNodeNames, &top),
	)
	screenshot(t, ctx, "graphs")
	// generated/graph: x, w, layer/{matmul,relu}, loss.
	if strings.Join(top, ",") != "layer/,loss,w,x" {
		t.Fatalf("root scope nodes = %q", top)
	}
	run(t, ctx,
		clickNode("layer/", false),
		waitFor(graphNode("layer/relu")+` !== null`),
		chromedp.Evaluate(graphNodeNames, &inner),
		clickNode("layer/relu", false),
		waitFor(`document.querySelector(".graph-panel .node-op") !== null`),
		chromedp.Text(".graph-panel .node-op", &op, chromedp.ByQuery),
	)
	// The open scope is drawn around its ops, beside the others.
	if strings.Join(inner, ",") != "layer/,layer/matmul,layer/relu,loss,w,x" || op != "Relu" {
		t.Errorf("with layer/ open: %q, relu's op %q", inner, op)
	}
	var loc string
	run(t, ctx,
		waitFor(`new URLSearchParams(location.search).get("gnode") === "layer/relu" && new URLSearchParams(location.search).get("gopen") === "layer/"`),
		chromedp.Location(&loc),
	)
	run(t, ctx,
		navigate(loc),
		waitFor(selectedNode+` === "layer/relu"`),
		waitFor(`document.querySelector(".graph-panel .node-op")?.textContent === "Relu"`),
	)
	// Closing the scope by its header; search opens it again.
	run(t, ctx,
		clickNode("layer/", true),
		waitFor(graphNode("layer/relu")+` === null`),
		chromedp.SendKeys(`.graph-search`, "matmul", chromedp.ByQuery),
		waitFor(`document.querySelector(".graph-results button") !== null`),
		chromedp.Click(`.graph-results button`, chromedp.ByQuery),
		waitFor(selectedNode+` === "layer/matmul"`),
	)
	screenshot(t, ctx, "graphs-node")
	// The run's tagged run metadata "step1" timed layer/matmul: 5 µs on
	// /device:CPU:0.
	q.Set("gstats", "step1")
	q.Set("gnode", "layer/matmul")
	q.Add("gopen", "layer/")
	var options []string
	run(t, ctx,
		navigate(experimentURL(env.eid, q)),
		waitFor(`document.querySelector(".graph-panel .node-time")?.textContent === "5 µs"`),
		chromedp.Evaluate(`[...document.querySelectorAll(".graph-stats option")].map(o => o.value)`, &options),
	)
	if strings.Join(options, ",") != ",step1" {
		t.Errorf("run metadata choices %q, want none and step1", options)
	}
}

// TestGraphLargeScopesSearchAndReload works on the 10,000-node graph:
// two scopes open at once show both contents, search opens the scopes of
// a node deep inside, selects it and fills the side panel, and the open
// scopes and selection come back from the URL.
func TestGraphLargeScopesSearchAndReload(t *testing.T) {
	eid := graphsExperiment(t)
	ctx := tab(t, true)
	q := url.Values{"tab": {"graphs"}, "grun": {"big"}}
	var top []string
	run(t, ctx,
		navigate(experimentURL(eid, q)),
		waitFor(graphNode("block_00/")+` !== null`),
		// The graph is shown from its top; only what is in view is drawn.
		chromedp.Click(`.graph-fit`, chromedp.ByQuery),
		waitFor(graphNode("save/")+` !== null`),
		chromedp.Evaluate(graphNodeNames, &top),
	)
	if len(top) != 39 || !slices.Contains(top, "save/") || !slices.Contains(top, "loss") {
		t.Fatalf("root of the big graph: %d items %q", len(top), top)
	}
	var names []string
	run(t, ctx,
		clickNode("block_03/", false),
		waitFor(graphNode("block_03/attention/")+` !== null`),
		clickNode("block_07/", false),
		// Only what is in view is drawn: fit the whole graph first.
		chromedp.Click(`.graph-fit`, chromedp.ByQuery),
		waitFor(graphNode("block_07/mlp/")+` !== null`),
		chromedp.Evaluate(graphNodeNames, &names),
	)
	for _, want := range []string{"block_03/attention/", "block_03/output", "block_07/mlp/", "block_07/residual_4", "block_05/"} {
		if !slices.Contains(names, want) {
			t.Errorf("with block_03/ and block_07/ open, %s is not drawn", want)
		}
	}
	screenshot(t, ctx, "graphs-large-two-open")

	const target = "block_00/mlp/dense_3/MatMul"
	var op, device string
	var inputs, attrs []string
	run(t, ctx,
		chromedp.SendKeys(`.graph-search`, "block_00/mlp/dense_3/mat", chromedp.ByQuery),
		waitFor(`document.querySelector(".graph-results button")?.textContent === "`+target+`"`),
		chromedp.Click(`.graph-results button`, chromedp.ByQuery),
		waitFor(selectedNode+` === "`+target+`"`),
		waitFor(`document.querySelector(".graph-panel h3")?.textContent === "`+target+`"`),
		chromedp.Text(".graph-panel .node-op", &op, chromedp.ByQuery),
		chromedp.Text(".graph-panel .node-device", &device, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll(".graph-panel .node-inputs a")].map(a => a.textContent)`, &inputs),
		chromedp.Evaluate(`[...document.querySelectorAll(".graph-panel dl.attrs dt")].map(a => a.textContent)`, &attrs),
	)
	if op != "MatMul" || device != "/device:GPU:0" || strings.Join(inputs, ",") != "block_00/mlp/dense_2/BiasAdd,block_00/mlp/dense_3/kernel/read" || strings.Join(attrs, ",") != "T" {
		t.Errorf("panel of %s: op %q device %q inputs %q attrs %q", target, op, device, inputs, attrs)
	}
	// The selected node is on screen.
	var onScreen bool
	run(t, ctx, chromedp.Evaluate(`(() => { const r = `+graphNode(target)+`.getBoundingClientRect(), c = document.querySelector(".graph-canvas").getBoundingClientRect();
		return r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom; })()`, &onScreen))
	if !onScreen {
		t.Error("the node search selected is not in view")
	}
	open := urlParams(ctx, t, "gopen")
	slices.Sort(open)
	if want := []string{"block_00/", "block_00/mlp/", "block_00/mlp/dense_3/", "block_03/", "block_07/"}; !slices.Equal(open, want) {
		t.Errorf("gopen = %q, want %q", open, want)
	}

	// Reloading the URL restores the open scopes and the selection.
	var loc string
	run(t, ctx, chromedp.Location(&loc))
	run(t, ctx,
		navigate("about:blank"),
		navigate(loc),
		waitFor(selectedNode+` === "`+target+`"`),
		waitFor(`document.querySelector(".graph-panel .node-op")?.textContent === "MatMul"`),
		chromedp.Click(`.graph-fit`, chromedp.ByQuery),
		waitFor(graphNode("block_03/attention/")+` !== null && `+graphNode("block_07/mlp/")+` !== null`),
	)
	screenshot(t, ctx, "graphs-large-search")
}

// TestGraphRunMetadataAndColours picks the big graph's run metadata: the
// panel shows a node's compute time and memory, and colouring by compute
// time fills the timed items (dense_0's four ops and its collapsed kernel/
// and bias/ scopes); by op type, every op.
func TestGraphRunMetadataAndColours(t *testing.T) {
	eid := graphsExperiment(t)
	ctx := tab(t, true)
	q := url.Values{"tab": {"graphs"}, "grun": {"big"}, "gstats": {"step1"}, "gcolor": {"time"},
		"gopen": {"block_00/", "block_00/attention/", "block_00/attention/dense_0/"}, "gnode": {"block_00/attention/dense_0/MatMul"}}
	var timeText, memText string
	var filled, total int
	run(t, ctx,
		navigate(experimentURL(eid, q)),
		waitFor(`document.querySelector(".graph-panel .node-time")?.textContent === "120 µs"`),
		chromedp.Text(".graph-panel .node-time", &timeText, chromedp.ByQuery),
		chromedp.Text(".graph-panel .node-memory", &memText, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('.graph-canvas .node:not(.open)[data-name^="block_00/attention/dense_0/"] rect')].filter(r => r.style.fill).length`, &filled),
		chromedp.Evaluate(`document.querySelectorAll('.graph-canvas .node:not(.open)[data-name^="block_00/attention/dense_0/"]').length`, &total),
	)
	if memText != "1.0 MiB" || total != 6 || filled != 6 {
		t.Errorf("time %q memory %q; %d of %d ops in dense_0 coloured", timeText, memText, filled, total)
	}
	// block_01 has no stats: its box stays uncoloured (seen with the
	// whole graph in view).
	var block1Fill, timedFill string
	run(t, ctx,
		chromedp.Click(`.graph-fit`, chromedp.ByQuery),
		waitFor(graphNode("block_01/")+` !== null`),
		chromedp.Evaluate(graphNode("block_01/")+`.querySelector("rect").style.fill`, &block1Fill),
		chromedp.Evaluate(graphNode("block_00/attention/dense_0/MatMul")+`.querySelector("rect").style.fill`, &timedFill),
	)
	if block1Fill != "" || timedFill == "" {
		t.Errorf("block_01/ (no stats) is filled %q, block_00's MatMul %q", block1Fill, timedFill)
	}
	screenshot(t, ctx, "graphs-compute-time")
	var opFilled, ops int
	run(t, ctx,
		chromedp.SetValue(`.graph-color`, "op", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(".graph-color").dispatchEvent(new Event("change"))`, nil),
		waitFor(`new URLSearchParams(location.search).get("gcolor") === "op"`),
		chromedp.Evaluate(`[...document.querySelectorAll('.graph-canvas .node.op rect')].filter(r => r.style.fill).length`, &opFilled),
		chromedp.Evaluate(`document.querySelectorAll('.graph-canvas .node.op').length`, &ops),
	)
	if ops == 0 || opFilled != ops {
		t.Errorf("coloured by op: %d of %d ops filled", opFilled, ops)
	}
}

// TestGraphKerasModel shows a Keras model: its layers as nodes (the
// nested Sequential model a scope), a layer's class as its op.
func TestGraphKerasModel(t *testing.T) {
	eid := graphsExperiment(t)
	ctx := tab(t, true)
	q := url.Values{"tab": {"graphs"}, "grun": {"keras"}}
	var names []string
	var op string
	var inputs []string
	run(t, ctx,
		navigate(experimentURL(eid, q)),
		waitFor(`document.querySelector(".graph-kind")?.value === "keras:keras"`),
		waitFor(graphNode("classifier/")+` !== null`),
		clickNode("classifier/", false),
		waitFor(graphNode("classifier/features/")+` !== null`),
		clickNode("classifier/features/", false),
		waitFor(graphNode("classifier/features/hidden")+` !== null`),
		chromedp.Evaluate(graphNodeNames, &names),
		clickNode("classifier/logits", false),
		waitFor(`document.querySelector(".graph-panel .node-op")?.textContent === "Dense"`),
		chromedp.Text(".graph-panel .node-op", &op, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll(".graph-panel .node-inputs a")].map(a => a.textContent)`, &inputs),
	)
	want := []string{"classifier/", "classifier/features/", "classifier/features/dropout", "classifier/features/hidden", "classifier/logits", "classifier/pixels"}
	if !slices.Equal(names, want) || strings.Join(inputs, ",") != "classifier/features/dropout" {
		t.Errorf("Keras model nodes %q (want %q); logits' inputs %q", names, want, inputs)
	}
	screenshot(t, ctx, "graphs-keras")
}

// BenchmarkGraphLarge opens the 10,000-node graph in a fresh tab and
// reports, in the page's clock: time from navigation to the graph's text
// format having arrived, and to the first drawing (that text parsed, the
// root laid out and drawn); time to open a block (250 ops, 5 sub-scopes), the flat save/
// scope (998 ops), and to find a node by search (which opens three scopes
// and centres it), each from the click to the frame after; then, with
// every scope open (all 10,000 ops laid out), the time from navigation to
// the first drawing and the frame times of a drag panning down the graph.
func BenchmarkGraphLarge(b *testing.B) {
	eid := graphsExperiment(b)
	allOpen := url.Values{"tab": {"graphs"}, "grun": {"big"}}
	scopes := map[string]bool{}
	for _, n := range bigGraph().GetNode() {
		name := n.GetName()
		for i := range len(name) {
			if name[i] == '/' && !scopes[name[:i+1]] {
				scopes[name[:i+1]] = true
				allOpen.Add("gopen", name[:i+1])
			}
		}
	}
	var first, fetch, openBlock, openSave, search, full, pan []float64
	for i := 0; i < b.N; i++ {
		ctx, cancel := chromedp.NewContext(env.browser)
		var f, fetched, whole float64
		var r struct {
			Block  float64 `json:"block"`
			Save   float64 `json:"save"`
			Search float64 `json:"search"`
		}
		var frames []float64
		awaitPromise := func(p *cdruntime.EvaluateParams) *cdruntime.EvaluateParams { return p.WithAwaitPromise(true) }
		err := chromedp.Run(ctx,
			navigate(env.origin+"/static/not-there"),
			chromedp.Evaluate(fmt.Sprintf(`localStorage.setItem("tbhub.token", %q)`, env.token), nil),
			navigate(experimentURL(eid, url.Values{"tab": {"graphs"}, "grun": {"big"}})),
			chromedp.Poll(`document.querySelector('.graph-canvas .node[data-name="block_00/"]') !== null && performance.now()`, &f,
				chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)),
			chromedp.Evaluate(`performance.getEntriesByType("resource").find(e => e.name.includes("/plugin/graphs/graph?")).responseEnd`, &fetched),
			chromedp.Evaluate(graphBenchScript, &r, awaitPromise),
			navigate(experimentURL(eid, allOpen)),
			chromedp.Poll(`document.querySelector('.graph-canvas .node[data-name="block_00/attention/dense_0/MatMul"]') !== null && performance.now()`, &whole,
				chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)),
			chromedp.Evaluate(graphPanScript, &frames, awaitPromise),
		)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		first, openBlock, openSave, search, full = append(first, f), append(openBlock, r.Block), append(openSave, r.Save), append(search, r.Search), append(full, whole)
		fetch = append(fetch, fetched)
		pan = append(pan, frames...)
	}
	sort.Float64s(pan)
	b.ReportMetric(median(fetch), "graph-fetched-ms")
	b.ReportMetric(median(first), "first-render-ms")
	b.ReportMetric(median(openBlock), "open-block-ms")
	b.ReportMetric(median(openSave), "open-998-ops-ms")
	b.ReportMetric(median(search), "search-select-ms")
	b.ReportMetric(median(full), "all-open-render-ms")
	b.ReportMetric(median(pan), "all-open-pan-frame-ms")
	b.ReportMetric(pan[len(pan)*95/100], "all-open-pan-frame-p95-ms")
}

// graphPanScript drags the canvas up by 40 px a frame for 60 frames and
// returns the time between frames (ms): the work of each frame, rendering
// what comes into view included, with 16.7 ms the display's own pace.
const graphPanScript = `(async () => {
  const c = document.querySelector(".graph-canvas");
  const r = c.getBoundingClientRect();
  const x = r.left + r.width / 2;
  let y = r.top + r.height / 2;
  const frame = () => new Promise(res => requestAnimationFrame(res));
  c.dispatchEvent(new PointerEvent("pointerdown", { clientX: x, clientY: y, bubbles: true }));
  let last = await frame();
  const frames = [];
  for (let i = 0; i < 60; i++) {
    y -= 40;
    window.dispatchEvent(new PointerEvent("pointermove", { clientX: x, clientY: y }));
    const t = await frame();
    frames.push(t - last);
    last = t;
  }
  window.dispatchEvent(new PointerEvent("pointerup", {}));
  return frames;
})()`

// graphBenchScript times three interactions, each from the event to the
// second animation frame after it (the frame that shows the result).
const graphBenchScript = `(async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const node = (n) => document.querySelector('.graph-canvas .node[data-name="' + n + '"]');
  const click = (n) => node(n).querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  const timed = async (act, done) => {
    await frame();
    const t = performance.now();
    act();
    await frame();
    if (!done()) throw new Error("interaction did not finish");
    return performance.now() - t;
  };
  // Only what is in view is drawn: fit the whole graph before each click.
  const fit = () => document.querySelector(".graph-fit").click();
  fit();
  const block = await timed(() => click("block_10/"), () => node("block_10/mlp/"));
  fit();
  const save = await timed(() => click("save/"), () => document.querySelector('.graph-canvas .node.open[data-name="save/"]'));
  const search = await timed(() => {
    const s = document.querySelector(".graph-search");
    s.value = "block_20/norm2/dense_5/BiasAdd";
    s.dispatchEvent(new Event("input"));
    document.querySelector(".graph-results button").click();
  }, () => document.querySelector(".graph-canvas .node.selected")?.dataset.name === "block_20/norm2/dense_5/BiasAdd" &&
          document.querySelector(".graph-panel .node-op")?.textContent === "BiasAdd");
  return { block, save, search };
})()`

// A graph opens fitted to its card: the 10,000-node graph's 39 root items
// (wider than the card at a readable zoom) are all drawn inside the
// canvas, centred, and filling it in one direction.
func TestGraphOpensFittedToItsCard(t *testing.T) {
	eid := graphsExperiment(t)
	ctx := tab(t, true)
	var fit struct {
		Nodes, Inside                 int
		Width, Height, DX, DY, CW, CH float64
	}
	run(t, ctx,
		chromedp.EmulateViewport(1400, 900),
		navigate(experimentURL(eid, url.Values{"tab": {"graphs"}, "grun": {"big"}})),
		waitFor(graphNode("block_00/")+` !== null`),
		chromedp.Evaluate(`(() => {
			const c = document.querySelector(".graph-canvas").getBoundingClientRect();
			const nodes = [...document.querySelectorAll(".graph-canvas .node")].map(n => n.getBoundingClientRect());
			const inside = nodes.filter(r => r.left >= c.left - 1 && r.right <= c.right + 1 && r.top >= c.top - 1 && r.bottom <= c.bottom + 1).length;
			const l = Math.min(...nodes.map(r => r.left)), r = Math.max(...nodes.map(r => r.right));
			const t = Math.min(...nodes.map(r => r.top)), b = Math.max(...nodes.map(r => r.bottom));
			return {Nodes: nodes.length, Inside: inside, Width: r - l, Height: b - t,
				DX: (l + r) / 2 - (c.left + c.right) / 2, DY: (t + b) / 2 - (c.top + c.bottom) / 2, CW: c.width, CH: c.height};
		})()`, &fit),
	)
	screenshot(t, ctx, "graph-opened-fitted")
	if fit.Nodes != 39 || fit.Inside != fit.Nodes {
		t.Errorf("%d of %d drawn root items inside the card; want all 39", fit.Inside, fit.Nodes)
	}
	if fit.DX < -25 || fit.DX > 25 || fit.DY < -25 || fit.DY > 25 {
		t.Errorf("graph off the card's centre by (%.0f, %.0f) px", fit.DX, fit.DY)
	}
	if fit.Width < 0.8*fit.CW && fit.Height < 0.8*fit.CH {
		t.Errorf("graph %.0f × %.0f px in a %.0f × %.0f card: want it to fill the card one way", fit.Width, fit.Height, fit.CW, fit.CH)
	}
}
