package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// The attacks of issue 20 that TestAbuse runs after those of issue 14:
// runs without number, graphs that multiply, and a flush of the verified
// credential list from the victim's own address.

// publicExperiment creates a public experiment of the attacker's.
func (a *attackerConn) publicExperiment(ctx context.Context, name string) (string, error) {
	ce, err := a.writer[0].CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: name})
	if err != nil {
		return "", err
	}
	_, err = a.exps.SetVisibility(ctx, &experimentsv1.SetVisibilityRequest{ExperimentId: ce.GetExperimentId(), Visibility: experimentsv1.Visibility_VISIBILITY_PUBLIC})
	return ce.GetExperimentId(), err
}

// readLoop has n anonymous readers GET each of routes in turn until ctx
// ends, and says how they were answered and the largest answer. They ask
// for answers uncompressed, the most the server can be made to send, and
// spend nothing decompressing (the attacker's CPU is not the server's on
// a real deployment; here it is the same two cores).
func readLoop(ctx context.Context, n int, routes []string) string {
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	var mu sync.Mutex
	statuses := map[int]int{}
	var largest atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for j := i; ctx.Err() == nil; j++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, routes[j%len(routes)], nil)
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				size, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				for {
					if l := largest.Load(); size <= l || largest.CompareAndSwap(l, size) {
						break
					}
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return fmt.Sprintf("readers got %v, largest answer %d KiB", statuses, largest.Load()>>10)
}

// manyRuns puts runs with 1 KiB names into a public experiment, 1,000 a
// call, until the server refuses or sc.runs are stored, then has
// sc.readers anonymous readers fetch its run list and its summary.
func (a *attackerConn) manyRuns(ctx context.Context, t *testing.T, url string, sc abuseScale, ready chan<- struct{}) string {
	actx := a.ctx(ctx)
	eid, err := a.publicExperiment(actx, "runs")
	if err != nil {
		t.Errorf("attacker: %v", err)
		close(ready)
		return ""
	}
	stored := 0
	var refused error
	for stored < sc.runs && refused == nil {
		var runs []*experimentsv1.RunStart
		for i := range min(1000, sc.runs-stored) {
			runs = append(runs, &experimentsv1.RunStart{Name: fmt.Sprintf("%08d-%s", stored+i, strings.Repeat("r", 1015)), StartTime: 1})
		}
		if _, err := a.exps.PutRuns(actx, &experimentsv1.PutRunsRequest{ExperimentId: eid, Runs: runs}); err != nil {
			refused = err
			break
		}
		stored += len(runs)
	}
	if status.Code(refused) != codes.ResourceExhausted {
		t.Errorf("many runs: %d runs stored; the attacker's next PutRuns answered %v, want RESOURCE_EXHAUSTED", stored, refused)
	}
	close(ready)
	base := url + "/experiment/" + eid
	read := readLoop(ctx, sc.readers, []string{base + "/data/runs", url + "/api/experiments/" + eid, base + "/data/environment"})
	return fmt.Sprintf("%d runs stored, then %v; %s", stored, status.Convert(refused).Message(), read)
}

// deepGraph is a GraphDef of 50 KB or so whose one attribute nests depth
// functions deep: its text form grows with the square of depth.
func deepGraph(depth int) []byte {
	v := &tbpb.AttrValue{Value: &tbpb.AttrValue_S{S: []byte("x")}}
	for range depth {
		v = &tbpb.AttrValue{Value: &tbpb.AttrValue_Func{Func: &tbpb.NameAttrList{Name: "f", Attr: map[string]*tbpb.AttrValue{"a": v}}}}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&tbpb.GraphDef{Node: []*tbpb.NodeDef{{Name: "n", Op: "Op", Attr: map[string]*tbpb.AttrValue{"deep": v}}}})
	if err != nil {
		panic(err)
	}
	return b
}

// scopedKerasModel is a Keras Sequential model config of layers layers
// under a name of nameBytes bytes, which a conversion repeats in every node
// name and input.
func scopedKerasModel(nameBytes, layers int) []byte {
	type layer struct {
		ClassName string         `json:"class_name"`
		Config    map[string]any `json:"config"`
	}
	ls := make([]layer, layers)
	for i := range ls {
		ls[i] = layer{ClassName: "Dense", Config: map[string]any{"name": fmt.Sprintf("d%d", i)}}
	}
	b, err := json.Marshal(layer{ClassName: "Sequential", Config: map[string]any{"name": strings.Repeat("m", nameBytes), "layers": ls}})
	if err != nil {
		panic(err)
	}
	return b
}

// writeBlobSequence stores one blob as the sequence of run/tag in plugin.
func (a *attackerConn) writeBlobSequence(ctx context.Context, eid, run, tag, plugin string, data []byte) error {
	md := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: plugin}, DataClass: tbpb.DataClass_DATA_CLASS_BLOB_SEQUENCE}
	seq, err := a.writer[0].GetOrCreateBlobSequence(ctx, &servicepb.GetOrCreateBlobSequenceRequest{ExperimentId: eid,
		Run: run, Tag: tag, Step: 0, WallTime: timestamppb.Now(), FinalSequenceLength: 1, Metadata: md})
	if err != nil {
		return err
	}
	s, err := a.writer[0].WriteBlob(ctx)
	if err != nil {
		return err
	}
	if err := s.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seq.GetBlobSequenceId(), Data: data,
		BlobBytes: int64(len(data)), FinalizeObject: true}); err != nil && err != io.EOF {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// hostileGraphs stores the two graphs of issue 20 item 2 in a public
// experiment (a GraphDef nesting 3,000 deep; a Keras model of 1,000 layers
// under a 100 KiB name) and has sc.readers anonymous readers ask for them.
func (a *attackerConn) hostileGraphs(ctx context.Context, t *testing.T, url string, sc abuseScale, ready chan<- struct{}) string {
	actx := a.ctx(ctx)
	eid, err := a.publicExperiment(actx, "graphs")
	if err == nil {
		err = a.writeBlobSequence(actx, eid, "deep", "__run_graph__", "graphs", deepGraph(3000))
	}
	if err == nil {
		err = a.writeBlobSequence(actx, eid, "keras", "keras", "graph_keras_model", scopedKerasModel(100<<10, 1000))
	}
	if err != nil {
		t.Errorf("attacker storing hostile graphs: %v", err)
		close(ready)
		return ""
	}
	close(ready)
	base := url + "/experiment/" + eid + "/data/plugin/graphs/graph"
	return readLoop(ctx, sc.readers, []string{base + "?run=deep", base + "?run=keras&tag=keras&conceptual=true"})
}

// credentialFlush is item 10 of issue 20, from the victim's own address
// (127.0.0.1, a NAT both sit behind): the attacker makes and uses as many
// tokens as the server lets it (up to sc.tokens), then floods bad tokens
// while the victim works. The victim's verified token must keep working.
func credentialFlush(ctx context.Context, t *testing.T, addr, token string, sc abuseScale, ready chan<- struct{}) string {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	auth := authv1.NewAuthServiceClient(conn)
	writer := servicepb.NewTensorBoardWriterServiceClient(conn)
	with := func(secret string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+secret)
	}
	made := 0
	var refused error
	for made < sc.tokens {
		tok, err := auth.CreateToken(with(token), &authv1.CreateTokenRequest{Name: fmt.Sprintf("flush%d", made),
			Scopes: []authv1.Scope{authv1.Scope_SCOPE_READ}})
		if err != nil {
			refused = err
			break
		}
		made++
		if _, err := auth.WhoAmI(with(tok.GetSecret()), &authv1.WhoAmIRequest{}); err != nil {
			t.Errorf("credential flush: token %d made but not usable: %v", made, err)
			break
		}
	}
	if status.Code(refused) != codes.ResourceExhausted {
		t.Errorf("credential flush: %d tokens made; the next CreateToken answered %v, want RESOURCE_EXHAUSTED (a per-user cap)", made, refused)
	}
	var answers codeCounts
	var started sync.Once
	for i := range sc.badTokens {
		if ctx.Err() != nil {
			break
		}
		_, err := writer.CreateExperiment(with(fmt.Sprintf("tbh_flush%d", i)), &servicepb.CreateExperimentRequest{})
		answers.add(err)
		if i == 200 {
			started.Do(func() { close(ready) })
		}
	}
	started.Do(func() { close(ready) })
	<-ctx.Done()
	return fmt.Sprintf("%d tokens made and used, then %v; bad tokens: %s", made, status.Convert(refused).Message(), answers.String())
}
