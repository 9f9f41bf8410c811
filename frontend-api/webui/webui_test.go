package webui

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

const builtIndex = `<!doctype html><script type="module" src="/static/assets/index-abc123.js"></script>`

func testHandler(t *testing.T, files fstest.MapFS) *http.ServeMux {
	t.Helper()
	h, err := newHandler(files)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux)
	// The HTTP API's patterns, as readpath mounts them: the UI's must not
	// conflict with them (ServeMux panics on conflicts).
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api") })
	for _, p := range []string{"/experiment/{eid}/data/", "/compare/{eid}/data/", "/api/experiments", "/api/experiments/"} {
		mux.Handle(p, api)
	}
	return mux
}

func get(mux http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec
}

func TestPagesServeIndexUncached(t *testing.T) {
	mux := testHandler(t, fstest.MapFS{
		"dist/index.html":             {Data: []byte(builtIndex)},
		"dist/placeholder.html":       {Data: []byte("placeholder")},
		"dist/assets/index-abc123.js": {Data: []byte(strings.Repeat("console.log(1);", 100))},
	})
	for _, path := range []string{"/", "/signin", "/gallery", "/gallery?q=mnist", "/experiment/e1/", "/experiment/e1/?tab=images&smoothing=0.9", "/compare/e1+e2/", "/compare/e1+e2/?tab=images"} {
		rec := get(mux, path)
		if rec.Code != http.StatusOK || rec.Body.String() != builtIndex {
			t.Errorf("GET %s: %d %q, want the index", path, rec.Code, rec.Body.String())
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", path, cc)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
	// The API keeps its routes.
	if rec := get(mux, "/experiment/e1/data/runs"); rec.Body.String() != "api" {
		t.Errorf("GET /experiment/e1/data/runs reached %q, want the API", rec.Body.String())
	}
	if rec := get(mux, "/compare/e1+e2/data/runs"); rec.Body.String() != "api" {
		t.Errorf("GET /compare/e1+e2/data/runs reached %q, want the API", rec.Body.String())
	}
	if rec := get(mux, "/api/experiments/e1"); rec.Body.String() != "api" {
		t.Errorf("GET /api/experiments/e1 reached %q, want the API", rec.Body.String())
	}
	// Unknown pages are not the app.
	if rec := get(mux, "/nope"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", rec.Code)
	}
}

// wellFormedID is an experiment ID of the form the store makes.
const wellFormedID = "AAECAwQFBgcICQoLDA0ODw"

func TestExperimentWithoutSlashRedirects(t *testing.T) {
	mux := testHandler(t, fstest.MapFS{"dist/index.html": {Data: []byte(builtIndex)}})
	for _, page := range []string{"/experiment/" + wellFormedID, "/compare/" + wellFormedID + "+" + wellFormedID} {
		rec := get(mux, page+"?tab=text")
		if want := page + "/?tab=text"; rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != want {
			t.Errorf("GET %s?tab=text: %d to %q, want 301 to %q", page, rec.Code, rec.Header().Get("Location"), want)
		}
	}
}

// The redirect to the experiment's page is made only for a well-formed
// experiment ID: an "ID" that decodes to "../\evil.example/" made the
// Location "/\evil.example/", which browsers follow to another origin.
func TestExperimentRedirectRefusesMalformedIDs(t *testing.T) {
	mux := testHandler(t, fstest.MapFS{"dist/index.html": {Data: []byte(builtIndex)}})
	for _, path := range []string{
		"/experiment/..%2F%5Cevil.example%2F",
		"/experiment/%5C%5Cevil.example",
		"/experiment/%2F%2Fevil.example",
		"/experiment/e1",
		"/experiment/" + wellFormedID + "x",
		"/compare/" + wellFormedID + "+..%2F%5Cevil.example%2F",
		"/compare/" + wellFormedID + "+",
	} {
		rec := get(mux, path)
		if rec.Code != http.StatusNotFound || rec.Header().Get("Location") != "" {
			t.Errorf("GET %s: %d to %q, want 404 and no redirect", path, rec.Code, rec.Header().Get("Location"))
		}
	}
}

func TestHashedAssetsAreImmutableAndGzipped(t *testing.T) {
	js := strings.Repeat("console.log(1);", 100)
	mux := testHandler(t, fstest.MapFS{
		"dist/index.html":             {Data: []byte(builtIndex)},
		"dist/assets/index-abc123.js": {Data: []byte(js)},
	})
	rec := get(mux, "/static/assets/index-abc123.js", "Accept-Encoding", "gzip, br")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET asset: %d", rec.Code)
	}
	if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") || !strings.Contains(cc, "max-age=31536000") {
		t.Errorf("asset Cache-Control %q", cc)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("asset Content-Type %q", ct)
	}
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("asset not gzipped for a gzip client")
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(zr)
	if string(b) != js {
		t.Errorf("gunzipped asset differs")
	}
	// Plain for a client without gzip; 304 for a matching ETag.
	plain := get(mux, "/static/assets/index-abc123.js")
	if plain.Header().Get("Content-Encoding") != "" || plain.Body.String() != js {
		t.Errorf("asset for a client without gzip: encoding %q", plain.Header().Get("Content-Encoding"))
	}
	if rec := get(mux, "/static/assets/index-abc123.js", "If-None-Match", plain.Header().Get("ETag")); rec.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", rec.Code)
	}
	for _, p := range []string{"/static/assets/missing.js", "/static/index.html", "/static/placeholder.html"} {
		if rec := get(mux, p); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, rec.Code)
		}
	}
}

func TestPlaceholderWithoutBundle(t *testing.T) {
	h, err := newHandler(fstest.MapFS{"dist/placeholder.html": {Data: []byte("build the UI")}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Built() {
		t.Error("Built() with only the placeholder")
	}
	mux := http.NewServeMux()
	h.Mount(mux)
	if rec := get(mux, "/experiment/e1/"); rec.Body.String() != "build the UI" {
		t.Errorf("page without a bundle = %q, want the placeholder", rec.Body.String())
	}
}

// The committed embed always has the placeholder, so the Go build works on a
// fresh clone.
func TestEmbeddedPlaceholderIsCommitted(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.files["placeholder.html"]; !ok {
		t.Error("dist/placeholder.html is not embedded")
	}
}
