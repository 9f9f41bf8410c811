package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	"github.com/tbhub/tbhub/frontend-api/httpapi/golden"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// TestGoldenShapes pins the JSON shape of every JSON route on the corpus,
// served by the HTTP API alone: the services' answers are replayed from
// testdata/provider.jsonl.gz, recorded over the real stack with the same
// requests by services/allinone/readpath's TestGoldenShapes -update,
// which also checks these goldens end to end.
func TestGoldenShapes(t *testing.T) {
	dir := "testdata"
	replay, err := golden.OpenReplay(filepath.Join(dir, "provider.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{
		Data:        datapb.NewTensorBoardDataProviderClient(replay),
		Experiments: experimentsv1.NewExperimentServiceClient(replay),
		Writer:      servicepb.NewTensorBoardWriterServiceClient(replay),
		Auth:        authv1.NewAuthServiceClient(replay),
		CacheTTL:    -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range httpapi.Routes {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, rt := range golden.Routes(replay.Experiment()) {
		t.Run(rt.Name, func(t *testing.T) {
			var body io.Reader
			if rt.Form != nil {
				body = strings.NewReader(rt.Form.Encode())
			}
			req, err := http.NewRequest(rt.Method, srv.URL+rt.Path, body)
			if err != nil {
				t.Fatal(err)
			}
			if rt.Form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			req.Header.Set("Authorization", "Bearer tbh_golden")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s: %d %s", rt.Method, rt.Path, resp.StatusCode, b)
			}
			golden.Check(t, dir, rt, b, false)
		})
	}
}
