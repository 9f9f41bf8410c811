package readpath_test

import (
	"path/filepath"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/httpapi/golden"
	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/testenv/corpus"
)

// TestTensorBoardGoldens compares tbhub's answers with stock TensorBoard's
// on the corpus (package golden's TensorBoardGoldens), end to end over the
// embedded store. frontend-api's TestTensorBoardGoldens runs the same
// comparison on the HTTP API alone, replaying the services' answers that
// -update records here.
func TestTensorBoardGoldens(t *testing.T) {
	dir := filepath.Join(corpus.RepoRoot(t), "frontend-api", "httpapi", "testdata")
	s := startServerWith(t, readpath.Config{SamplesPerPlugin: golden.TensorBoardSamples(), CacheTTL: -1})
	eid := s.upload(t, corpus.Dir(t))
	const readBlob = "/tensorboard.data.TensorBoardDataProvider/ReadBlob"
	if *update { // blob bytes are not kept: frontend-api skips the answers made of them
		s.rec.Start(readBlob)
	}
	golden.TensorBoardGoldens(t, filepath.Join(dir, "tensorboard"), eid, func(t *testing.T, method, path, contentType, body string) golden.Response {
		r := s.doBody(t, method, path, s.token, contentType, body)
		return golden.Response{Status: r.status, Header: r.header, Body: r.body}
	}, nil)
	if *update {
		if err := s.rec.Save(filepath.Join(dir, "tensorboard-provider.jsonl.gz"), eid); err != nil {
			t.Fatal(err)
		}
	}
}
