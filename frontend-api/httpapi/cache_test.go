package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// manageFakes accept every SetVisibility and RevokeToken.
type manageFakes struct {
	experimentsv1.ExperimentServiceClient
	authv1.AuthServiceClient
}

func (manageFakes) SetVisibility(context.Context, *experimentsv1.SetVisibilityRequest, ...grpc.CallOption) (*experimentsv1.SetVisibilityResponse, error) {
	return &experimentsv1.SetVisibilityResponse{}, nil
}

func (manageFakes) GetExperiment(_ context.Context, req *experimentsv1.GetExperimentRequest, _ ...grpc.CallOption) (*experimentsv1.GetExperimentResponse, error) {
	return &experimentsv1.GetExperimentResponse{Experiment: &experimentsv1.Experiment{ExperimentId: req.GetExperimentId()}}, nil
}

func (manageFakes) RevokeToken(context.Context, *authv1.RevokeTokenRequest, ...grpc.CallOption) (*authv1.RevokeTokenResponse, error) {
	return &authv1.RevokeTokenResponse{}, nil
}

// noWriter is a writer service client that is never called.
type noWriter struct {
	servicepb.TensorBoardWriterServiceClient
}

// A change made through this server is seen at once by every reader it
// concerns, not after the cache's TTL: an experiment made private stops
// being served from the cache to anyone (anonymous readers included), and
// a revoked token's cached answers are dropped (issue 20, extra).
func TestMutationsDropStaleAnswersOfEveryCaller(t *testing.T) {
	fakes := manageFakes{}
	fake, srv := startWith(t, httpapi.Config{CacheTTL: time.Hour, Experiments: fakes, Auth: fakes, Writer: noWriter{}})
	calls := fake.callCount
	send := func(method, path, body string, header ...string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
	}
	other := strings.Replace(scalarsPath, "e1", "e2", 1)
	read := func(path string, header ...string) int {
		t.Helper()
		before := calls()
		if resp, _ := get(t, srv.URL+path, header...); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return calls() - before
	}
	// Cached: an anonymous reader and a token's holder, of e1 and e2.
	for _, h := range [][]string{nil, {"Authorization", "Bearer reader"}} {
		read(scalarsPath, h...)
		read(other, h...)
		if read(scalarsPath, h...) != 0 || read(other, h...) != 0 {
			t.Fatalf("%v: the second read was not answered from the cache", h)
		}
	}

	// The owner makes e1 private: every reader's next read of e1 asks the
	// services again; e2's answers stay.
	send(http.MethodPatch, "/api/experiments/e1", `{"visibility": "private"}`, "Authorization", "Bearer owner")
	for _, h := range [][]string{nil, {"Authorization", "Bearer reader"}} {
		if read(scalarsPath, h...) != 1 {
			t.Errorf("%v: e1 was answered from the cache after it was made private", h)
		}
		if read(other, h...) != 0 {
			t.Errorf("%v: e2's cached answer was dropped by a change to e1", h)
		}
	}

	// A token revoked here: its holder's next read asks the services
	// again (they refuse it), even when another credential revoked it.
	send(http.MethodDelete, "/api/tokens/t1", "", "Authorization", "Bearer owner")
	if read(other, "Authorization", "Bearer reader") != 1 {
		t.Error("a token's cached answer outlived a revocation made through this server")
	}
}
