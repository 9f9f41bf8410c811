//go:build unix

package cli

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// Export leaves permissions to the user's umask, as cp and tar do: files
// 0666 and directories 0777 less the umask (here 002, a group-writable
// setup, which a fixed 0644/0755 would override).
func TestExportFollowsUmask(t *testing.T) {
	srv := &exportServer{data: []*servicepb.StreamExperimentDataResponse{
		tensorResponse("train", "h", 1, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_FLOAT, FloatVal: []float32{1}}),
		{RunName: "train", TagName: "loss", Data: &servicepb.StreamExperimentDataResponse_Points{
			Points: &servicepb.StreamExperimentDataResponse_ScalarPoints{Steps: []int64{1}, WallTimes: []*timestamppb.Timestamp{{Seconds: 1}}, Values: []float64{1}},
		}},
	}}
	url := srv.start(t)
	out := t.TempDir()
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	var stdout, stderr bytes.Buffer
	env := Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	if err := Run(context.Background(), env, []string{"export", "--experiment", "E", "--outdir", out, "--server", url, "--token", "T"}); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr.String())
	}
	dir := filepath.Join(out, "experiment_E")
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o664)
		if d.IsDir() {
			want = 0o775
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 8 { // 3 directories, metadata.json, 3 series files, 1 archive
		t.Errorf("checked %d paths; the export wrote fewer than expected", seen)
	}
}
