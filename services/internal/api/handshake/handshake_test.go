package handshake

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
)

func post(t *testing.T, h http.Handler, req *servicepb.ServerInfoRequest) *servicepb.ServerInfoResponse {
	t.Helper()
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	resp := &servicepb.ServerInfoResponse{}
	if err := proto.Unmarshal(rec.Body.Bytes(), resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func newHandler(t *testing.T) http.Handler {
	h, err := New(Config{APIEndpoint: "dns:///localhost:6006", PublicOrigin: "http://localhost:6006", Limits: limits.Default()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHandshake(t *testing.T) {
	h := newHandler(t)
	resp := post(t, h, &servicepb.ServerInfoRequest{Version: "2.16.0"})
	if resp.GetCompatibility().GetVerdict() != servicepb.CompatibilityVerdict_VERDICT_OK {
		t.Errorf("verdict %v", resp.GetCompatibility())
	}
	if resp.GetApiServer().GetEndpoint() != "dns:///localhost:6006" {
		t.Errorf("endpoint %q", resp.GetApiServer().GetEndpoint())
	}
	f := resp.GetUrlFormat()
	if f.GetTemplate() != "http://localhost:6006/experiment/{{EID}}/" || f.GetIdPlaceholder() != "{{EID}}" {
		t.Errorf("url format %v", f)
	}
	if got := strings.Join(resp.GetPluginControl().GetAllowedPlugins(), ","); got != strings.Join(DefaultPlugins, ",") {
		t.Errorf("allowed plugins %s", got)
	}
	l := limits.Default()
	ul := resp.GetUploadLimits()
	if ul.GetMaxBlobSize() != l.MaxBlobBytes || ul.GetMaxBlobRequestSize() != l.MaxBlobChunkBytes ||
		ul.GetMaxScalarRequestSize() != l.MaxScalarRequestBytes || ul.GetMinScalarRequestInterval() != 2 { // 500 requests/s per user

		t.Errorf("upload limits %v do not advertise %+v", ul, l)
	}

	// Requested plugins are confirmed; unknown ones make the verdict ERROR.
	resp = post(t, h, &servicepb.ServerInfoRequest{PluginSpecification: &servicepb.PluginSpecification{UploadPlugins: []string{"scalars", "graphs"}}})
	if resp.GetCompatibility().GetVerdict() != servicepb.CompatibilityVerdict_VERDICT_OK ||
		strings.Join(resp.GetPluginControl().GetAllowedPlugins(), ",") != "scalars,graphs" {
		t.Errorf("requested plugins: %v", resp)
	}
	resp = post(t, h, &servicepb.ServerInfoRequest{PluginSpecification: &servicepb.PluginSpecification{UploadPlugins: []string{"scalars", "nope"}}})
	if resp.GetCompatibility().GetVerdict() != servicepb.CompatibilityVerdict_VERDICT_ERROR || !strings.Contains(resp.GetCompatibility().GetDetails(), "nope") {
		t.Errorf("unsupported plugin: %v", resp.GetCompatibility())
	}
}

func TestHandshakeBadRequests(t *testing.T) {
	h := newHandler(t)
	for _, tc := range []struct {
		method string
		body   io.Reader
		code   int
	}{
		{http.MethodGet, nil, http.StatusMethodNotAllowed},
		{http.MethodPost, strings.NewReader("\xff\xff\xff"), http.StatusBadRequest},
		{http.MethodPost, bytes.NewReader(make([]byte, maxRequestBytes+1)), http.StatusRequestEntityTooLarge},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, Path, tc.body))
		if rec.Code != tc.code {
			t.Errorf("%s: status %d, want %d", tc.method, rec.Code, tc.code)
		}
	}
	if _, err := New(Config{APIEndpoint: "x", PublicOrigin: "http://a/", Limits: limits.Default()}); err == nil {
		t.Error("trailing slash accepted")
	}
}

// The advertised intervals keep one uploader within the per-user write rate
// (one request per 1/RequestsPerSecond, in whole milliseconds, at least 1:
// 0 would mean TensorBoard's defaults), or are the configured ones if longer.
func TestUploadLimitsAdvertiseTheRate(t *testing.T) {
	for _, tc := range []struct {
		rps        float64
		configured time.Duration
		want       int64
	}{
		{500, time.Millisecond, 2},  // tbhub's default rate
		{300, time.Millisecond, 4},  // 3.33 ms, rounded up
		{5000, time.Millisecond, 1}, // faster than a millisecond
		{0, time.Millisecond, 1},    // no rate limit
		{500, 10 * time.Millisecond, 10},
	} {
		l := limits.Default()
		l.RequestsPerSecond = tc.rps
		l.MinScalarRequestInterval, l.MinTensorRequestInterval, l.MinBlobRequestInterval = tc.configured, tc.configured, tc.configured
		ul := UploadLimits(l)
		if ul.GetMinScalarRequestInterval() != tc.want || ul.GetMinTensorRequestInterval() != tc.want || ul.GetMinBlobRequestInterval() != tc.want {
			t.Errorf("%g requests/s, %v configured: advertised %d, %d, %d ms; want %d", tc.rps, tc.configured,
				ul.GetMinScalarRequestInterval(), ul.GetMinTensorRequestInterval(), ul.GetMinBlobRequestInterval(), tc.want)
		}
	}
}
