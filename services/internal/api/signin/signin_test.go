package signin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(Config{Issuer: "https://issuer.example", ClientID: "cli"}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	var got Config
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%d %q: %v", rec.Code, rec.Body, err)
	}
	if got.Issuer != "https://issuer.example" || got.ClientID != "cli" || len(got.Scopes) != 2 {
		t.Errorf("published %+v", got)
	}
	rec = httptest.NewRecorder()
	Handler(Config{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without sign-in: %d, want 404", rec.Code)
	}
	rec = httptest.NewRecorder()
	Handler(Config{Issuer: "i", ClientID: "c"}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}
