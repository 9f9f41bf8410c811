package readpath_test

import (
	"context"
	"flag"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/tbhub/tbhub/frontend-api/httpapi/golden"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/testenv/corpus"
)

var update = flag.Bool("update", false, "rewrite the HTTP API's golden response shapes and the recording of the answers behind them (frontend-api/httpapi/testdata)")

// TestGoldenShapes pins the JSON shape of every JSON route on the corpus,
// end to end on both stores. The goldens are frontend-api's
// (frontend-api/httpapi/testdata), which its own TestGoldenShapes checks
// against the services' answers recorded here. Rerecord both with:
// go test ./readpath -run TestGoldenShapes -update (in services/allinone).
func TestGoldenShapes(t *testing.T) {
	dir := filepath.Join(corpus.RepoRoot(t), "frontend-api", "httpapi", "testdata")
	onBackends(t, func(t *testing.T, s *server, eid string) {
		// The embedded store's answers are the recording, asked with a
		// token of their own so that no answer comes from the HTTP API's
		// cache, filled by earlier tests, instead of the services.
		record := *update && t.Name() == "TestGoldenShapes/embedded"
		token := s.token
		if record {
			var err error
			if token, err = serve.IssueUserToken(context.Background(), s.st, s.srv.Authenticator(), "researcher", "golden recording"); err != nil {
				t.Fatal(err)
			}
			s.rec.Start()
		}
		for _, rt := range golden.Routes(eid) {
			t.Run(rt.Name, func(t *testing.T) {
				r := s.do(t, rt.Method, rt.Path, token, rt.Form)
				if r.status != http.StatusOK {
					t.Fatalf("%s %s: %d %s", rt.Method, rt.Path, r.status, r.body)
				}
				golden.Check(t, dir, rt, r.body, *update)
			})
		}
		if record {
			if err := s.rec.Save(filepath.Join(dir, "provider.jsonl.gz"), eid); err != nil {
				t.Fatal(err)
			}
		}
	})
}
