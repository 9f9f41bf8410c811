// Package webui serves tbhub's web UI: the single-page app built from
// frontend-api/web (TypeScript, Vite) into dist/ by scripts/build-ui.sh and
// embedded into the binary. The app's pages are
//
//	/                      the caller's experiments ("My experiments")
//	/signin                sign in with the OIDC issuer or an API token
//	/experiment/{eid}/     one experiment's dashboards
//	/compare/{id}+{id}…/   the same, for runs of several experiments
//
// all answered with the same index.html (no-cache: it names the current
// bundle), and the bundle's files under /static/, whose names carry a hash
// of their content and so are cached for a year as immutable. The app gets
// its data from TensorBoard's HTTP API (package httpapi) under
// /experiment/{eid}/data/ and tbhub's /api/ routes.
//
// The bundle is not committed. Without it the binary still builds: dist/
// always holds placeholder.html, which every page then serves, saying how to
// build the UI.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/tbhub/tbhub/schemas/experimentid"
)

//go:embed all:dist
var dist embed.FS

// StaticPrefix is where the bundle's files are served; the Vite build's
// base (frontend-api/web/vite.config.ts) must match.
const StaticPrefix = "/static/"

// Routes are the mux patterns Mount registers. None overlaps
// /experiment/{eid}/data/ (the HTTP API) or /api/.
var Routes = []string{"GET /{$}", "GET /signin", "GET /gallery", "GET /experiment/{eid}/{$}", "GET /experiment/{eid}", "GET /compare/{eid}/{$}", "GET /compare/{eid}", "GET " + StaticPrefix}

// Handler serves the app. Create it with New.
type Handler struct {
	built bool
	index asset
	files map[string]asset // by path under dist/, e.g. "assets/index-1a2b.js"
}

// asset is one file, with its gzip form when that is smaller.
type asset struct {
	body, gz    []byte
	contentType string
	etag        string
}

// New loads the embedded files.
func New() (*Handler, error) {
	return newHandler(dist)
}

func newHandler(root fs.FS) (*Handler, error) {
	sub, err := fs.Sub(root, "dist")
	if err != nil {
		return nil, err
	}
	h := &Handler{files: map[string]asset{}}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		h.files[p] = newAsset(p, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if a, ok := h.files["index.html"]; ok {
		h.built, h.index = true, a
	} else {
		h.index = h.files["placeholder.html"]
	}
	return h, nil
}

func newAsset(name string, b []byte) asset {
	sum := sha256.Sum256(b)
	a := asset{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, contentType: mime.TypeByExtension(path.Ext(name))}
	if a.contentType == "" {
		a.contentType = http.DetectContentType(b)
	}
	if compressible(a.contentType) {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		if buf.Len() < len(b) {
			a.gz = buf.Bytes()
		}
	}
	return a
}

func compressible(contentType string) bool {
	for _, p := range []string{"text/", "application/javascript", "application/json", "image/svg"} {
		if strings.HasPrefix(contentType, p) {
			return true
		}
	}
	return false
}

// Built reports whether the binary holds the UI's bundle (and not just the
// placeholder).
func (h *Handler) Built() bool { return h.built }

// Mount registers the UI's routes (Routes) on mux.
func (h *Handler) Mount(mux *http.ServeMux) {
	page := http.HandlerFunc(h.servePage)
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /signin", page)
	mux.Handle("GET /gallery", page)
	mux.Handle("GET /experiment/{eid}/{$}", page)
	mux.HandleFunc("GET /experiment/{eid}", redirectToExperiment)
	mux.Handle("GET /compare/{eid}/{$}", page)
	mux.HandleFunc("GET /compare/{eid}", redirectToComparison)
	mux.Handle("GET "+StaticPrefix, http.HandlerFunc(h.serveStatic))
}

// redirectToExperiment sends /experiment/ID to the experiment's page,
// /experiment/ID/. The path value is decoded: an "ID" written
// "..%2F%5Cevil.example%2F" would make the Location "/\evil.example/",
// which browsers read as "//evil.example/", another origin. So only a
// well-formed experiment ID (package experimentid) is redirected, anything
// else is not found, and the Location is the request's own escaped path.
func redirectToExperiment(w http.ResponseWriter, r *http.Request) {
	redirectWithSlash(w, r, experimentid.Valid(r.PathValue("eid")))
}

// redirectToComparison sends /compare/ID+ID to the comparison's page, as
// redirectToExperiment does, when every ID is well-formed.
func redirectToComparison(w http.ResponseWriter, r *http.Request) {
	ids := strings.Split(r.PathValue("eid"), "+")
	redirectWithSlash(w, r, !slices.ContainsFunc(ids, func(id string) bool { return !experimentid.Valid(id) }))
}

// redirectWithSlash answers a 301 to the request's path with a slash
// added (query kept) when ok, else 404.
func redirectWithSlash(w http.ResponseWriter, r *http.Request, ok bool) {
	if !ok {
		http.NotFound(w, r)
		return
	}
	u := r.URL.EscapedPath() + "/"
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, u, http.StatusMovedPermanently)
}

// contentSecurityPolicy keeps scripts to the bundle (the text dashboard
// inserts server-sanitized HTML; this is the second line of defence).
// Blob URLs carry images and audio fetched with the caller's token.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' blob: data:; media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("Referrer-Policy", "same-origin")
	// Revalidated on every load: it names the current bundle.
	hd.Set("Cache-Control", "no-cache")
	h.index.serve(w, r)
}

func (h *Handler) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, StaticPrefix)
	a, ok := h.files[name]
	if !ok || name == "index.html" || name == "placeholder.html" {
		http.NotFound(w, r)
		return
	}
	if strings.HasPrefix(name, "assets/") {
		// Vite names these by a hash of their content.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "public, max-age=3600")
	}
	a.serve(w, r)
}

func (a asset) serve(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("ETag", a.etag)
	hd.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r) {
		hd.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
