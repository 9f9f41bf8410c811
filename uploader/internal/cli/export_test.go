package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// exportServer is a tbhub server as `tbup export` sees it: the upload
// handshake over HTTP naming a gRPC endpoint that serves one experiment,
// "E", whose data stream is data.
type exportServer struct {
	servicepb.UnimplementedTensorBoardExporterServiceServer
	experimentsv1.UnimplementedExperimentServiceServer
	data []*servicepb.StreamExperimentDataResponse
}

func (s *exportServer) GetExperiment(context.Context, *experimentsv1.GetExperimentRequest) (*experimentsv1.GetExperimentResponse, error) {
	return &experimentsv1.GetExperimentResponse{Experiment: &experimentsv1.Experiment{ExperimentId: "E", Name: "hostile"}}, nil
}

func (s *exportServer) StreamExperimentData(_ *servicepb.StreamExperimentDataRequest, stream grpc.ServerStreamingServer[servicepb.StreamExperimentDataResponse]) error {
	for _, r := range s.data {
		if err := stream.Send(r); err != nil {
			return err
		}
	}
	return nil
}

// start serves s and returns the server URL to pass as --server.
func (s *exportServer) start(t *testing.T) string {
	return serveGRPC(t, func(g *grpc.Server) {
		servicepb.RegisterTensorBoardExporterServiceServer(g, s)
		experimentsv1.RegisterExperimentServiceServer(g, s)
	})
}

func tensorResponse(run, tag string, step int64, v *tbpb.TensorProto) *servicepb.StreamExperimentDataResponse {
	return &servicepb.StreamExperimentDataResponse{RunName: run, TagName: tag, Data: &servicepb.StreamExperimentDataResponse_Tensors{
		Tensors: &servicepb.StreamExperimentDataResponse_TensorPoints{Steps: []int64{step}, WallTimes: []*timestamppb.Timestamp{{Seconds: step}}, Values: []*tbpb.TensorProto{v}},
	}}
}

func dims(ds ...int64) *tbpb.TensorShapeProto {
	s := &tbpb.TensorShapeProto{}
	for _, d := range ds {
		s.Dim = append(s.Dim, &tbpb.TensorShapeProto_Dim{Size: d})
	}
	return s
}

// A public experiment's tensors are input from strangers. Tensors whose shape
// declares more than they hold are skipped with a warning naming their point,
// the rest of the experiment is exported, and the command fails at the end.
func TestExportSkipsTensorsThatDoNotFillTheirShape(t *testing.T) {
	srv := &exportServer{data: []*servicepb.StreamExperimentDataResponse{
		tensorResponse("train", "h", 1, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: dims(2), FloatVal: []float32{1, 2}}),
		// 60 bytes declaring 2^30 doubles (8 GiB of zeros).
		tensorResponse("train", "h", 2, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: dims(1 << 30)}),
		// 2^31 strings padded to 256 KiB: a makeslice panic.
		tensorResponse("train", "h", 3, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: dims(1 << 31), StringVal: [][]byte{make([]byte, 1<<18)}}),
		// 3 × 6148914691236517206 elements wrap int64 to 2.
		tensorResponse("train", "h", 4, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, TensorShape: dims(3, 6148914691236517206), FloatVal: []float32{1, 2}}),
		tensorResponse("train", "h", 5, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: dims(1), StringVal: [][]byte{[]byte("ok")}}),
		// 4096 strings, one of 64 KiB: every string padded to 64 KiB makes
		// 256 MiB of a 72 KiB tensor.
		tensorResponse("train", "h", 6, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: dims(4096), StringVal: append(make([][]byte, 4095), make([]byte, 64<<10))}),
		{RunName: "train", TagName: "loss", Data: &servicepb.StreamExperimentDataResponse_Points{
			Points: &servicepb.StreamExperimentDataResponse_ScalarPoints{Steps: []int64{7}, WallTimes: []*timestamppb.Timestamp{{Seconds: 7}}, Values: []float64{0.5}},
		}},
	}}
	url := srv.start(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	env := Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	err := Run(context.Background(), env, []string{"export", "--experiment", "E", "--outdir", out, "--server", url, "--token", "T"})
	if err == nil || !strings.Contains(err.Error(), "4 tensors") {
		t.Fatalf("export: %v; want it to fail for 4 tensors skipped\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--max-string-growth") {
		t.Errorf("the warning for the padded strings does not name the flag that allows them:\n%s", stderr.String())
	}
	for _, step := range []string{"2", "3", "4", "6"} {
		if !strings.Contains(stderr.String(), "train/h step "+step+":") {
			t.Errorf("no warning names train/h step %s:\n%s", step, stderr.String())
		}
	}
	dir := filepath.Join(out, "experiment_E")
	var line exportLine
	b, err := os.ReadFile(filepath.Join(dir, "tensors.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &line); err != nil {
		t.Fatalf("tensors.json %q: %v", b, err)
	}
	if got := line.Points.Steps; len(got) != 2 || got[0] != 1 || got[1] != 5 || len(line.Points.WallTimes) != 2 {
		t.Errorf("tensors.json has steps %v and %d wall times; want the exported steps [1 5]", got, len(line.Points.WallTimes))
	}
	z, err := zip.OpenReader(filepath.Join(dir, line.Points.TensorsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		if err != nil || len(body) > 256 {
			t.Errorf("%s: %d bytes, %v", f.Name, len(body), err)
		}
	}
	if strings.Join(names, " ") != "arr_0.npy arr_1.npy" {
		t.Errorf("archive holds %v; want the two exported tensors", names)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "scalars.json")); err != nil || !strings.Contains(string(b), `"loss"`) {
		t.Errorf("the series after the refused tensors was not exported: %q %v", b, err)
	}
}
