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
	const dir = "testdata"
	url, eid := serveReplay(t, filepath.Join(dir, "provider.jsonl.gz"), nil)
	for _, rt := range golden.Routes(eid) {
		t.Run(rt.Name, func(t *testing.T) {
			contentType, body := "", ""
			if rt.Form != nil {
				contentType, body = "application/x-www-form-urlencoded", rt.Form.Encode()
			}
			r := askReplay(url)(t, rt.Method, rt.Path, contentType, body)
			if r.Status != http.StatusOK {
				t.Fatalf("%s %s: %d %s", rt.Method, rt.Path, r.Status, r.Body)
			}
			golden.Check(t, dir, rt, r.Body, false)
		})
	}
}

// TestTensorBoardGoldens compares the HTTP API's answers with stock
// TensorBoard's on the corpus (testdata/tensorboard), the services'
// answers replayed from testdata/tensorboard-provider.jsonl.gz, recorded
// by services/allinone/readpath's TestTensorBoardGoldens -update, which
// runs the same comparison end to end, blob bytes included.
func TestTensorBoardGoldens(t *testing.T) {
	url, eid := serveReplay(t, filepath.Join("testdata", "tensorboard-provider.jsonl.gz"), golden.TensorBoardSamples())
	// Blob bytes are not recorded (too big to keep): an answer made of a
	// blob's bytes is compared only end to end.
	const readBlob = "/tensorboard.data.TensorBoardDataProvider/ReadBlob"
	compared, _ := golden.TensorBoardGoldens(t, filepath.Join("testdata", "tensorboard"), eid, askReplay(url),
		func(r golden.Response) bool { return golden.NotRecorded(r, readBlob) })
	if compared == 0 {
		t.Error("no answer compared")
	}
}

// serveReplay serves the HTTP API with the services' answers replayed
// from the recording file (package golden), and returns its URL and the
// experiment the recording is of.
func serveReplay(t *testing.T, file string, samples map[string]int64) (url, eid string) {
	t.Helper()
	replay, err := golden.OpenReplay(file)
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{
		Data:             datapb.NewTensorBoardDataProviderClient(replay),
		Experiments:      experimentsv1.NewExperimentServiceClient(replay),
		Writer:           servicepb.NewTensorBoardWriterServiceClient(replay),
		Auth:             authv1.NewAuthServiceClient(replay),
		CacheTTL:         -1,
		SamplesPerPlugin: samples,
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
	return srv.URL, replay.Experiment()
}

// askReplay sends requests to the HTTP API at url with a bearer token
// (the replayed services do not check it).
func askReplay(url string) golden.Ask {
	return func(t *testing.T, method, path, contentType, body string) golden.Response {
		t.Helper()
		var in io.Reader
		if contentType != "" {
			in = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, url+path, in)
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		req.Header.Set("Authorization", "Bearer tbh_golden")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: reading: %v", method, path, err)
		}
		return golden.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
}
