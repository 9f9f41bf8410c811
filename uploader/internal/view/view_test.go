package view

import (
	"context"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/local"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"

	"github.com/tbhub/tbhub/uploader/internal/client"
)

// recorder is the far end of the proxy: it records what reaches the read service.
type recorder struct {
	datapb.UnimplementedTensorBoardDataProviderServer
	experiments []string
	auth        []string
	fail        bool // answer ListRuns with NOT_FOUND
}

func (r *recorder) note(ctx context.Context, eid string) {
	r.experiments = append(r.experiments, eid)
	md, _ := metadata.FromIncomingContext(ctx)
	r.auth = append(r.auth, md.Get("authorization")...)
}

func (r *recorder) ListRuns(ctx context.Context, req *datapb.ListRunsRequest) (*datapb.ListRunsResponse, error) {
	r.note(ctx, req.GetExperimentId())
	if r.fail {
		return nil, status.Error(codes.NotFound, "no such experiment")
	}
	return &datapb.ListRunsResponse{Runs: []*datapb.Run{{Name: "train", StartTime: 1}}}, nil
}

func (r *recorder) ReadScalars(ctx context.Context, req *datapb.ReadScalarsRequest) (*datapb.ReadScalarsResponse, error) {
	r.note(ctx, req.GetExperimentId())
	var resp datapb.ReadScalarsResponse
	for _, run := range req.GetRunTagFilter().GetRuns().GetNames() {
		resp.Runs = append(resp.Runs, &datapb.ReadScalarsResponse_RunEntry{RunName: run})
	}
	return &resp, nil
}

func (r *recorder) ReadBlob(req *datapb.ReadBlobRequest, s grpc.ServerStreamingServer[datapb.ReadBlobResponse]) error {
	r.note(s.Context(), req.GetBlobKey())
	for _, chunk := range []string{"ab", "cd"} {
		if err := s.Send(&datapb.ReadBlobResponse{Data: []byte(chunk)}); err != nil {
			return err
		}
	}
	return nil
}

func listen(t *testing.T, srv *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// viewOf starts a read service (rec) and a proxy for experiment "EID" in
// front of it, and returns a connection to the proxy as a stock TensorBoard
// makes it: local channel credentials, no token.
func viewOf(t *testing.T, rec *recorder) *grpc.ClientConn {
	t.Helper()
	remoteSrv := grpc.NewServer()
	datapb.RegisterTensorBoardDataProviderServer(remoteSrv, rec)
	remote, err := client.Dial(listen(t, remoteSrv), false, "tbh_secret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Close() })
	tb, err := grpc.NewClient(listen(t, New(remote, "EID").Server()), grpc.WithTransportCredentials(local.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

func TestProxyBindsExperimentAndCarriesToken(t *testing.T) {
	rec := &recorder{}
	// TensorBoard's placeholder ids.
	api := datapb.NewTensorBoardDataProviderClient(viewOf(t, rec))
	ctx := context.Background()
	for _, id := range []string{"", "defaultExperimentId"} {
		resp, err := api.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: id})
		if err != nil || resp.GetRuns()[0].GetName() != "train" {
			t.Fatalf("ListRuns(%q): %v %v", id, resp, err)
		}
	}
	filter := &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"eval"}}}
	rs, err := api.ReadScalars(ctx, &datapb.ReadScalarsRequest{RunTagFilter: filter, Downsample: &datapb.Downsample{NumPoints: 1}})
	if err != nil || rs.GetRuns()[0].GetRunName() != "eval" {
		t.Fatalf("ReadScalars: %v %v (the rest of the request must survive the rewrite)", rs, err)
	}
	if _, err := api.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: "EID"}); err != nil {
		t.Errorf("ListRuns naming the bound experiment itself: %v", err)
	}
	rec.fail = true
	if _, err := api.ListRuns(ctx, &datapb.ListRunsRequest{}); status.Code(err) != codes.NotFound {
		t.Errorf("server errors must pass through: %v", err)
	}
	rec.fail = false
	blob, err := api.ReadBlob(ctx, &datapb.ReadBlobRequest{BlobKey: "EID.key.mac"})
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		chunk, err := blob.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, chunk.GetData()...)
	}
	if string(got) != "abcd" {
		t.Errorf("blob %q", got)
	}
	want := []string{"EID", "EID", "EID", "EID", "EID", "EID.key.mac"}
	if len(rec.experiments) != len(want) {
		t.Fatalf("server saw %v", rec.experiments)
	}
	for i := range want {
		if rec.experiments[i] != want[i] {
			t.Errorf("call %d reached the server for %q, want %q", i, rec.experiments[i], want[i])
		}
	}
	for _, a := range rec.auth {
		if a != "Bearer tbh_secret" {
			t.Errorf("authorization %q", a)
		}
	}
	if len(rec.auth) != len(want) {
		t.Errorf("%d of %d calls carried the token", len(rec.auth), len(want))
	}
}

func TestBindExperimentKeepsOtherFields(t *testing.T) {
	in, _ := proto.Marshal(&datapb.ReadTensorsRequest{ExperimentId: "defaultExperimentId", PluginFilter: &datapb.PluginFilter{PluginName: "histograms"}, Downsample: &datapb.Downsample{NumPoints: 7}})
	var out datapb.ReadTensorsRequest
	b, err := BindExperiment(in, "E")
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.GetExperimentId() != "E" || out.GetPluginFilter().GetPluginName() != "histograms" || out.GetDownsample().GetNumPoints() != 7 {
		t.Errorf("rewritten request %v", &out)
	}
}

// The proxy answers for the experiment it was started for and no other: any
// local process can connect to it, and it carries the user's token, so a
// request naming another experiment, or a blob key issued for another
// experiment, must not reach the server.
func TestProxyRefusesOtherExperiments(t *testing.T) {
	rec := &recorder{}
	tb := viewOf(t, rec)
	api := datapb.NewTensorBoardDataProviderClient(tb)
	ctx := context.Background()
	for _, id := range []string{"secret", "EID2", "eid", " EID"} {
		if _, err := api.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: id}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("ListRuns(%q): %v; want PERMISSION_DENIED", id, err)
		}
		if _, err := api.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: id, Downsample: &datapb.Downsample{NumPoints: 1}}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("ReadScalars(%q): %v; want PERMISSION_DENIED", id, err)
		}
	}
	// Field 1 twice: protobuf keeps the last, so the last is the one checked.
	twice := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "EID")
	twice = protowire.AppendString(protowire.AppendTag(twice, 1, protowire.BytesType), "secret")
	var out []byte
	err := tb.Invoke(ctx, service+"ListRuns", &frame{twice}, &frame{out}, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("ListRuns naming EID, then secret: %v; want PERMISSION_DENIED", err)
	}
	for _, key := range []string{"secret.a2V5.bWFj", "EID2.a2V5.bWFj", "EID", "", "EIDx.key"} {
		blob, err := api.ReadBlob(ctx, &datapb.ReadBlobRequest{BlobKey: key})
		if err == nil {
			_, err = blob.Recv()
		}
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("ReadBlob(%q): %v; want PERMISSION_DENIED", key, err)
		}
	}
	if err := tb.Invoke(ctx, service+"ReadEverything", &frame{}, &frame{}, grpc.ForceCodec(rawCodec{})); status.Code(err) != codes.Unimplemented {
		t.Errorf("a method the proxy does not know: %v; want UNIMPLEMENTED", err)
	}
	if len(rec.experiments) != 0 {
		t.Errorf("the server was asked for %v", rec.experiments)
	}
}
