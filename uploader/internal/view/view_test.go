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
	"google.golang.org/protobuf/proto"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"

	"github.com/tbhub/tbhub/uploader/internal/client"
)

// recorder is the far end of the proxy: it records what reaches the read service.
type recorder struct {
	datapb.UnimplementedTensorBoardDataProviderServer
	experiments []string
	auth        []string
}

func (r *recorder) note(ctx context.Context, eid string) {
	r.experiments = append(r.experiments, eid)
	md, _ := metadata.FromIncomingContext(ctx)
	r.auth = append(r.auth, md.Get("authorization")...)
}

func (r *recorder) ListRuns(ctx context.Context, req *datapb.ListRunsRequest) (*datapb.ListRunsResponse, error) {
	r.note(ctx, req.GetExperimentId())
	if req.GetExperimentId() == "secret" {
		return nil, status.Error(codes.NotFound, "no such experiment")
	}
	return &datapb.ListRunsResponse{Runs: []*datapb.Run{{Name: "train", StartTime: 1}}}, nil
}

func (r *recorder) ReadScalars(ctx context.Context, req *datapb.ReadScalarsRequest) (*datapb.ReadScalarsResponse, error) {
	r.note(ctx, req.GetExperimentId())
	return &datapb.ReadScalarsResponse{Runs: []*datapb.ReadScalarsResponse_RunEntry{{RunName: req.GetRunTagFilter().GetRuns().GetNames()[0]}}}, nil
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

func TestProxyBindsExperimentAndCarriesToken(t *testing.T) {
	rec := &recorder{}
	remoteSrv := grpc.NewServer()
	datapb.RegisterTensorBoardDataProviderServer(remoteSrv, rec)
	remote, err := client.Dial(listen(t, remoteSrv), false, "tbh_secret")
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	proxyAddr := listen(t, New(remote, "EID").Server())

	// A stock TensorBoard: local channel credentials, no token, placeholder ids.
	tb, err := grpc.NewClient(proxyAddr, grpc.WithTransportCredentials(local.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	api := datapb.NewTensorBoardDataProviderClient(tb)
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
	if _, err := api.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: "secret"}); status.Code(err) != codes.NotFound {
		t.Errorf("server errors must pass through: %v", err)
	}
	blob, err := api.ReadBlob(ctx, &datapb.ReadBlobRequest{BlobKey: "key"})
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
	want := []string{"EID", "EID", "EID", "secret", "key"}
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
	if err := proto.Unmarshal(BindExperiment(in, "E"), &out); err != nil {
		t.Fatal(err)
	}
	if out.GetExperimentId() != "E" || out.GetPluginFilter().GetPluginName() != "histograms" || out.GetDownsample().GetNumPoints() != 7 {
		t.Errorf("rewritten request %v", &out)
	}
}
