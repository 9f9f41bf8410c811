package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/local"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
)

// TestViewServesStockTensorBoard: `tbup view ID` serves a private experiment to a
// client that speaks TensorBoard's DataProvider protocol the way stock TensorBoard
// does (loopback "local" credentials, no token, experiment id "" or
// "defaultExperimentId"); runs, last scalars and blobs come back as uploaded.
func TestViewServesStockTensorBoard(t *testing.T) {
	s := startEmbedded(t, t.TempDir(), "127.0.0.1:0")
	c := newTbup(t, s)
	corpus := corpusDir(t)
	sum := parseSummary(t, c.run("upload", "--one-shot", "--json", "--logdir", filepath.Join(corpus, "generated"), "--visibility", "private"))

	ctx, cancel := context.WithCancel(context.Background())
	cmd := c.cmd(ctx, "view", sum.ExperimentID)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }() // stop tbup view, then reap it
	addr := ""
	re := regexp.MustCompile(`--grpc_data_provider=(\S+)`)
	sc := bufio.NewScanner(stdout)
	for addr == "" && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		cmd.Wait()
		t.Fatalf("tbup view printed no tensorboard command; stderr:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(local.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tb := datapb.NewTensorBoardDataProviderClient(conn)
	callCtx, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()

	runs, err := tb.ListRuns(callCtx, &datapb.ListRunsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var expected struct {
		Runs map[string]map[string]map[string]any `json:"runs"`
	}
	raw, _ := os.ReadFile(filepath.Join(corpus, "EXPECTED.json"))
	if err := json.Unmarshal(raw, &expected); err != nil {
		t.Fatal(err)
	}
	// Every run is listed, those whose files hold no data too (as TensorBoard
	// lists them; corpus/README.md).
	generated := 0
	for name := range expected.Runs {
		if strings.HasPrefix(name, "generated/") {
			generated++
		}
	}
	if len(runs.GetRuns()) != generated {
		t.Errorf("ListRuns through tbup view: %d runs, want the %d generated runs", len(runs.GetRuns()), generated)
	}

	// The last scalar, as TensorBoard reads it: num_points = 1 must give the latest.
	last, err := tb.ReadScalars(callCtx, &datapb.ReadScalarsRequest{
		ExperimentId: "defaultExperimentId",
		PluginFilter: &datapb.PluginFilter{PluginName: "scalars"},
		RunTagFilter: &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"scalars/train"}}},
		Downsample:   &datapb.Downsample{NumPoints: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range last.GetRuns() {
		for _, tag := range run.GetTags() {
			want := expected.Runs["generated/"+run.GetRunName()][tag.GetTagName()]
			d := tag.GetData()
			if len(d.GetStep()) != 1 || float64(d.GetStep()[0]) != want["max_step"] {
				t.Errorf("%s/%s: last point at step %v, want %v", run.GetRunName(), tag.GetTagName(), d.GetStep(), want["max_step"])
			}
		}
	}
	if len(last.GetRuns()) != 1 || len(last.GetRuns()[0].GetTags()) == 0 {
		t.Fatalf("ReadScalars returned %v", last)
	}

	// Blobs: a key from ReadBlobSequences read back through ReadBlob.
	seqs, err := tb.ReadBlobSequences(callCtx, &datapb.ReadBlobSequencesRequest{
		PluginFilter: &datapb.PluginFilter{PluginName: "images"},
		RunTagFilter: &datapb.RunTagFilter{Runs: &datapb.RunFilter{Names: []string{"images"}}},
		Downsample:   &datapb.Downsample{NumPoints: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, run := range seqs.GetRuns() {
		for _, tag := range run.GetTags() {
			for _, v := range tag.GetData().GetValues() {
				if refs := v.GetBlobRefs(); len(refs) == 3 && key == "" {
					key = refs[2].GetBlobKey() // width, height, then the image
				}
			}
		}
	}
	if key == "" {
		t.Fatalf("no image blob keys in %v", seqs)
	}
	stream, err := tb.ReadBlob(callCtx, &datapb.ReadBlobRequest{BlobKey: key})
	if err != nil {
		t.Fatal(err)
	}
	var img []byte
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		img = append(img, chunk.GetData()...)
	}
	if len(img) < 8 || string(img[1:4]) != "PNG" {
		t.Errorf("the image blob read through tbup view is %d bytes, not a PNG", len(img))
	}
}
