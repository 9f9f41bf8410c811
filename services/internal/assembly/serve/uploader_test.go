package serve_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// stockUploader plays the call sequence of TensorBoard.dev's uploader
// (tensorboard/uploader/uploader.py at its last version), built from our
// protos only: the HTTP handshake, CreateExperiment, WriteScalar batches
// within the advertised request size, WriteTensor, then per blob event
// GetOrCreateBlobSequence and one WriteBlob stream per blob, in chunks of
// the advertised size with blob_bytes on every chunk and no CRC32C.
type stockUploader struct {
	info   *servicepb.ServerInfoResponse
	writer servicepb.TensorBoardWriterServiceClient
	ctx    context.Context // carries the credential and tensorboard-version
}

func handshake(t *testing.T, origin string, plugins ...string) *servicepb.ServerInfoResponse {
	t.Helper()
	body, _ := proto.Marshal(&servicepb.ServerInfoRequest{Version: "2.16.0a0",
		PluginSpecification: &servicepb.PluginSpecification{UploadPlugins: plugins}})
	req, _ := http.NewRequest(http.MethodPost, origin+"/api/uploader", bytes.NewReader(body))
	req.Header.Set("User-Agent", "tensorboard/2.16.0a0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("handshake: %s: %s", resp.Status, raw)
	}
	info := &servicepb.ServerInfoResponse{}
	if err := proto.Unmarshal(raw, info); err != nil {
		t.Fatal(err)
	}
	if v := info.GetCompatibility().GetVerdict(); v != servicepb.CompatibilityVerdict_VERDICT_OK {
		t.Fatalf("verdict %v: %s", v, info.GetCompatibility().GetDetails())
	}
	return info
}

func newStockUploader(t *testing.T, origin, token string) *stockUploader {
	info := handshake(t, origin, "scalars", "histograms", "graphs")
	conn, err := grpc.NewClient(info.GetApiServer().GetEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token, "tensorboard-version", "2.16.0a0")
	return &stockUploader{info: info, writer: servicepb.NewTensorBoardWriterServiceClient(conn), ctx: ctx}
}

// scalarBatches packs points of (run, tag) into requests no larger than the
// advertised max_scalar_request_size, as the uploader's byte budget does.
func (u *stockUploader) scalarBatches(eid string, series map[[2]string][]*servicepb.ScalarPoint) []*servicepb.WriteScalarRequest {
	budget := int(u.info.GetUploadLimits().GetMaxScalarRequestSize())
	var out []*servicepb.WriteScalarRequest
	req := &servicepb.WriteScalarRequest{ExperimentId: eid}
	size := proto.Size(req)
	for _, key := range sortedKeys(series) {
		// Like the uploader's byte budget: a tag (with its metadata) costs
		// its size plus framing, and so does each point.
		tag := &servicepb.WriteScalarRequest_Tag{Name: key[1], Metadata: inprocess.ScalarMetadata()}
		run := &servicepb.WriteScalarRequest_Run{Name: key[0], Tags: []*servicepb.WriteScalarRequest_Tag{tag}}
		req.Runs = append(req.Runs, run)
		size += proto.Size(run) + 12
		for _, p := range series[key] {
			cost := proto.Size(p) + 11
			if size+cost > budget {
				out = append(out, req)
				tag = &servicepb.WriteScalarRequest_Tag{Name: key[1], Metadata: inprocess.ScalarMetadata()}
				run = &servicepb.WriteScalarRequest_Run{Name: key[0], Tags: []*servicepb.WriteScalarRequest_Tag{tag}}
				req = &servicepb.WriteScalarRequest{ExperimentId: eid, Runs: []*servicepb.WriteScalarRequest_Run{run}}
				size = proto.Size(req) + 12
			}
			tag.Points = append(tag.Points, p)
			size += cost
		}
	}
	return append(out, req)
}

func sortedKeys(m map[[2]string][]*servicepb.ScalarPoint) [][2]string {
	var keys [][2]string
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j][0] < keys[i][0] || (keys[j][0] == keys[i][0] && keys[j][1] < keys[i][1]) {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// writeBlob sends one blob as the stock uploader does and counts the
// responses.
func (u *stockUploader) writeBlob(seqID string, index int64, data []byte) (int, error) {
	chunk := int(u.info.GetUploadLimits().GetMaxBlobRequestSize())
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", bearerOf(u.ctx))
	stream, err := u.writer.WriteBlob(ctx)
	if err != nil {
		return 0, err
	}
	for off := 0; off < len(data) || off == 0; off += chunk {
		end := min(off+chunk, len(data))
		err := stream.Send(&servicepb.WriteBlobRequest{BlobSequenceId: seqID, Index: index, Data: data[off:end],
			Offset: int64(off), BlobBytes: int64(len(data)), FinalizeObject: end == len(data)})
		if err != nil {
			break // the real error comes from Recv
		}
		if end == len(data) {
			break
		}
	}
	if err := stream.CloseSend(); err != nil {
		return 0, err
	}
	n := 0
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func bearerOf(ctx context.Context) string {
	md, _ := metadata.FromOutgoingContext(ctx)
	return md.Get("authorization")[0]
}

func TestStockUploaderSequence(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	runStockUploaderSequence(t, st, blobs)
}

func runStockUploaderSequence(t *testing.T, st store.Store, blobs blob.Store) {
	h := newHarness(t, st, blobs, func(c *serve.Config) {
		c.Limits.MaxScalarRequestBytes = 128 << 10 // the stock uploader's default
	})
	token, err := serve.IssueUserToken(t.Context(), st, h.srv.Authenticator(), "ada", "test")
	if err != nil {
		t.Fatal(err)
	}
	u := newStockUploader(t, h.srv.Origin(), token)
	if got := u.info.GetUrlFormat().GetTemplate(); got != h.srv.Origin()+"/experiment/{{EID}}/" {
		t.Errorf("url template %q", got)
	}

	created, err := u.writer.CreateExperiment(u.ctx, &servicepb.CreateExperimentRequest{Name: "mnist", Description: "**bold**"})
	if err != nil {
		t.Fatal(err)
	}
	eid := created.GetExperimentId()
	if want := strings.Replace(u.info.GetUrlFormat().GetTemplate(), "{{EID}}", eid, 1); created.GetUrl() != want {
		t.Errorf("CreateExperiment url %q, want %q", created.GetUrl(), want)
	}

	// Scalars: 3 runs x 2 tags x 3000 steps, including NaN and infinities.
	rng := rand.New(rand.NewPCG(1, 2))
	series := map[[2]string][]*servicepb.ScalarPoint{}
	for _, run := range []string{".", "train", "eval/a"} {
		for _, tag := range []string{"loss", "accuracy"} {
			for step := range int64(3000) {
				v := rng.Float64()
				switch step {
				case 10:
					v = math.NaN()
				case 11:
					v = math.Inf(1)
				case 12:
					v = math.Inf(-1)
				}
				series[[2]string{run, tag}] = append(series[[2]string{run, tag}],
					&servicepb.ScalarPoint{Step: step, WallTime: timestamppb.New(timestamppb.Now().AsTime()), Value: v})
			}
		}
	}
	batches := u.scalarBatches(eid, series)
	if len(batches) < 2 {
		t.Fatalf("want several batches, got %d", len(batches))
	}
	for _, b := range batches {
		if n := proto.Size(b); n > int(u.info.GetUploadLimits().GetMaxScalarRequestSize()) {
			t.Fatalf("batch of %d bytes exceeds the advertised request size", n)
		}
		if _, err := u.writer.WriteScalar(u.ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// Replaying a batch changes nothing.
	if _, err := u.writer.WriteScalar(u.ctx, batches[0]); err != nil {
		t.Fatal(err)
	}

	// A histogram-like tensor.
	hist := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE,
		TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 2}, {Size: 3}}},
		DoubleVal:   []float64{0, 1, 5, 1, 2, 7}}
	histMeta := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "histograms"}, DataClass: tbpb.DataClass_DATA_CLASS_TENSOR}
	if _, err := u.writer.WriteTensor(u.ctx, &servicepb.WriteTensorRequest{ExperimentId: eid, Runs: []*servicepb.WriteTensorRequest_Run{{
		Name: "train", Tags: []*servicepb.WriteTensorRequest_Tag{{Name: "weights", Metadata: histMeta,
			Points: []*servicepb.TensorPoint{{Step: 5, WallTime: timestamppb.Now(), Value: hist}}}}}}}); err != nil {
		t.Fatal(err)
	}

	// Blobs: a graph larger than one chunk and a small one.
	big := make([]byte, 9<<20+123)
	for i := range big {
		big[i] = byte(rng.UintN(256))
	}
	small := []byte("small graph")
	graphMeta := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "graphs"}, DataClass: tbpb.DataClass_DATA_CLASS_BLOB_SEQUENCE}
	seq, err := u.writer.GetOrCreateBlobSequence(u.ctx, &servicepb.GetOrCreateBlobSequenceRequest{ExperimentId: eid,
		Run: "train", Tag: "__run_graph__", Step: 0, WallTime: timestamppb.Now(), FinalSequenceLength: 2, Metadata: graphMeta})
	if err != nil {
		t.Fatal(err)
	}
	again, err := u.writer.GetOrCreateBlobSequence(u.ctx, &servicepb.GetOrCreateBlobSequenceRequest{ExperimentId: eid,
		Run: "train", Tag: "__run_graph__", Step: 0, WallTime: timestamppb.Now(), FinalSequenceLength: 2, Metadata: graphMeta})
	if err != nil || again.GetBlobSequenceId() != seq.GetBlobSequenceId() {
		t.Errorf("GetOrCreateBlobSequence is not idempotent: %v, %v", again, err)
	}
	for i, data := range [][]byte{big, small} {
		n, err := u.writeBlob(seq.GetBlobSequenceId(), int64(i), data)
		if err != nil {
			t.Fatalf("blob %d: %v", i, err)
		}
		chunks := (len(data) + int(u.info.GetUploadLimits().GetMaxBlobRequestSize()) - 1) / int(u.info.GetUploadLimits().GetMaxBlobRequestSize())
		if n != chunks {
			t.Errorf("blob %d: %d responses for %d chunks", i, n, chunks)
		}
	}
	// Re-uploading a finished blob is ALREADY_EXISTS, which the uploader skips.
	if _, err := u.writeBlob(seq.GetBlobSequenceId(), 1, small); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("re-upload: %v, want ALREADY_EXISTS", err)
	}

	// Everything is there, losslessly, through the exporter.
	got := h.ExportAll(t, u.ctx, eid)
	for key, points := range series {
		gp := got.Scalars[key]
		if len(gp) != len(points) {
			t.Fatalf("%v: exported %d points, wrote %d", key, len(gp), len(points))
		}
		for i, p := range points {
			if gp[i].Step != p.GetStep() || math.Float64bits(gp[i].Value) != math.Float64bits(p.GetValue()) {
				t.Fatalf("%v point %d: exported (%d, %v), wrote (%d, %v)", key, i, gp[i].Step, gp[i].Value, p.GetStep(), p.GetValue())
			}
		}
	}
	if tp := got.Tensors[[2]string{"train", "weights"}]; len(tp) != 1 || !proto.Equal(tp[0], hist) {
		t.Errorf("tensor exported as %v", tp)
	}
	for i, data := range [][]byte{big, small} {
		id := got.BlobIDs[i]
		if b := h.ReadBlob(t, u.ctx, id); !bytes.Equal(b, data) {
			t.Errorf("blob %d: exported %d bytes differ from the %d uploaded", i, len(b), len(data))
		}
	}
}
