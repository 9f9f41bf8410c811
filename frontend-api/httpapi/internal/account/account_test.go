package account

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// services fakes the experiment, writer and auth services the routes
// call: experiments kept in a map, the calls they got recorded. A method
// the fake does not define panics (the embedded nil interface): the
// routes under test call none.
type services struct {
	experimentsv1.ExperimentServiceClient
	servicepb.TensorBoardWriterServiceClient
	authv1.AuthServiceClient

	mu      sync.Mutex
	exps    map[string]*experimentsv1.Experiment
	grants  []string // "experiment grantee" of the grants given
	revoked []string // the token IDs revoked
}

func newServices() *services {
	return &services{exps: map[string]*experimentsv1.Experiment{
		"e1": {ExperimentId: "e1", Name: "mnist", Description: "a **small** net", Visibility: experimentsv1.Visibility_VISIBILITY_PRIVATE},
		"e2": {ExperimentId: "e2", Name: "cifar", Visibility: experimentsv1.Visibility_VISIBILITY_PUBLIC},
	}}
}

func (s *services) get(eid string) (*experimentsv1.Experiment, error) {
	e, ok := s.exps[eid]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "experiment %q not found", eid)
	}
	return e, nil
}

func (s *services) GetExperiment(_ context.Context, req *experimentsv1.GetExperimentRequest, _ ...grpc.CallOption) (*experimentsv1.GetExperimentResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.get(req.GetExperimentId())
	if err != nil {
		return nil, err
	}
	if !req.GetOmitRuns() {
		return nil, status.Error(codes.InvalidArgument, "the route must not read the runs")
	}
	return &experimentsv1.GetExperimentResponse{Experiment: &experimentsv1.Experiment{ExperimentId: e.ExperimentId, Name: e.Name,
		Description: e.Description, Visibility: e.Visibility}}, nil
}

func (s *services) ListExperiments(_ context.Context, req *experimentsv1.ListExperimentsRequest, _ ...grpc.CallOption) (*experimentsv1.ListExperimentsResponse, error) {
	if req.GetScope() == experimentsv1.ListExperimentsRequest_SCOPE_SHARED_WITH_ME {
		return &experimentsv1.ListExperimentsResponse{}, nil
	}
	return &experimentsv1.ListExperimentsResponse{Experiments: []*experimentsv1.Experiment{{ExperimentId: "e1", Name: "mnist", Description: "a **small** net"}},
		NextPageToken: "page" + req.GetPageToken()}, nil
}

func (s *services) ListPublicExperiments(_ context.Context, req *experimentsv1.ListPublicExperimentsRequest, _ ...grpc.CallOption) (*experimentsv1.ListPublicExperimentsResponse, error) {
	resp := &experimentsv1.ListPublicExperimentsResponse{}
	if strings.Contains("cifar", req.GetQuery()) {
		resp.Experiments = append(resp.Experiments, &experimentsv1.Experiment{ExperimentId: "e2", Name: "cifar"})
	}
	return resp, nil
}

func (s *services) SetVisibility(_ context.Context, req *experimentsv1.SetVisibilityRequest, _ ...grpc.CallOption) (*experimentsv1.SetVisibilityResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.get(req.GetExperimentId())
	if err != nil {
		return nil, err
	}
	e.Visibility = req.GetVisibility()
	return &experimentsv1.SetVisibilityResponse{}, nil
}

func (s *services) UpdateExperiment(_ context.Context, req *servicepb.UpdateExperimentRequest, _ ...grpc.CallOption) (*servicepb.UpdateExperimentResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.get(req.GetExperiment().GetExperimentId())
	if err != nil {
		return nil, err
	}
	if req.GetExperimentMask().GetName() {
		e.Name = req.GetExperiment().GetName()
	}
	if req.GetExperimentMask().GetDescription() {
		e.Description = req.GetExperiment().GetDescription()
	}
	return &servicepb.UpdateExperimentResponse{}, nil
}

func (s *services) DeleteExperiment(_ context.Context, req *servicepb.DeleteExperimentRequest, _ ...grpc.CallOption) (*servicepb.DeleteExperimentResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(req.GetExperimentId()); err != nil {
		return nil, err
	}
	delete(s.exps, req.GetExperimentId())
	return &servicepb.DeleteExperimentResponse{}, nil
}

func (s *services) ListGrants(_ context.Context, req *experimentsv1.ListGrantsRequest, _ ...grpc.CallOption) (*experimentsv1.ListGrantsResponse, error) {
	return &experimentsv1.ListGrantsResponse{Grants: []*experimentsv1.Grant{{ExperimentId: req.GetExperimentId(), UserName: "bob"}}}, nil
}

func (s *services) GrantAccess(_ context.Context, req *experimentsv1.GrantAccessRequest, _ ...grpc.CallOption) (*experimentsv1.GrantAccessResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grants = append(s.grants, req.GetExperimentId()+" "+req.GetGrantee().GetEmail())
	return &experimentsv1.GrantAccessResponse{Grant: &experimentsv1.Grant{ExperimentId: req.GetExperimentId(), UserName: "carol"}}, nil
}

func (s *services) RevokeAccess(_ context.Context, req *experimentsv1.RevokeAccessRequest, _ ...grpc.CallOption) (*experimentsv1.RevokeAccessResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grants = slices.DeleteFunc(s.grants, func(g string) bool { return g == req.GetExperimentId()+" "+req.GetGrantee().GetUserName() })
	return &experimentsv1.RevokeAccessResponse{}, nil
}

func (s *services) WhoAmI(context.Context, *authv1.WhoAmIRequest, ...grpc.CallOption) (*authv1.WhoAmIResponse, error) {
	return &authv1.WhoAmIResponse{UserId: "u1", UserName: "ada"}, nil
}

func (s *services) SetDisplayName(_ context.Context, req *authv1.SetDisplayNameRequest, _ ...grpc.CallOption) (*authv1.SetDisplayNameResponse, error) {
	return &authv1.SetDisplayNameResponse{DisplayName: strings.TrimSpace(req.GetDisplayName())}, nil
}

func (s *services) ListTokens(context.Context, *authv1.ListTokensRequest, ...grpc.CallOption) (*authv1.ListTokensResponse, error) {
	return &authv1.ListTokensResponse{Tokens: []*authv1.Token{{TokenId: "t1", Name: "laptop"}}}, nil
}

func (s *services) CreateToken(_ context.Context, req *authv1.CreateTokenRequest, _ ...grpc.CallOption) (*authv1.CreateTokenResponse, error) {
	return &authv1.CreateTokenResponse{Token: &authv1.Token{TokenId: "t2", Name: req.GetName()}, Secret: "tbh_secret"}, nil
}

func (s *services) RevokeToken(_ context.Context, req *authv1.RevokeTokenRequest, _ ...grpc.CallOption) (*authv1.RevokeTokenResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = append(s.revoked, req.GetTokenId())
	return &authv1.RevokeTokenResponse{}, nil
}

// api is the routes over fake services and a table of one scalar and one
// tensor series.
func api(t *testing.T) (API, *services) {
	t.Helper()
	s := newServices()
	env := routetest.Env(t, &routetest.Provider{Series: []routetest.Series{
		{Plugin: "scalars", Run: "train", Tag: "loss", Steps: []int64{1, 2}, Scalars: []float32{0.5, 0.25}},
		{Plugin: "histograms", Run: "train", Tag: "w", Steps: []int64{3}, Tensors: []*tbpb.TensorProto{{Dtype: tbpb.DataType_DT_FLOAT, FloatVal: []float32{1.5}}}},
	}})
	return API{Env: env, Experiments: s, Writer: s, Auth: s}, s
}

func TestReadRoutes(t *testing.T) {
	t.Parallel()
	h, _ := api(t)
	routetest.Run(t, []routetest.Case{
		{Name: "own experiments", Fn: h.ListExperiments, Target: "/api/experiments?page_token=2",
			Want: `{"experiments": [{"experimentId": "e1", "name": "mnist", "description": "a **small** net",
				"descriptionHtml": "<p>a <strong>small</strong> net</p>"}], "nextPageToken": "page2"}`},
		{Name: "shared experiments", Fn: h.ListExperiments, Target: "/api/experiments?scope=shared", Want: `{}`},
		{Name: "the public gallery, searched", Fn: h.ListExperiments, Target: "/api/experiments?scope=public&q=cif",
			Want: `{"experiments": [{"experimentId": "e2", "name": "cifar"}]}`},
		{Name: "an unknown scope", Fn: h.ListExperiments, Target: "/api/experiments?scope=all", Code: http.StatusBadRequest},
		{Name: "a negative page size", Fn: h.ListExperiments, Target: "/api/experiments?page_size=-1", Code: http.StatusBadRequest},
		{Name: "an experiment", Fn: h.GetExperiment, Target: "/api/experiments/e1",
			Want: `{"experimentId": "e1", "name": "mnist", "description": "a **small** net", "visibility": "VISIBILITY_PRIVATE",
				"descriptionHtml": "<p>a <strong>small</strong> net</p>"}`},
		{Name: "scalars as JSON", Fn: h.DownloadScalars, Target: "/api/experiments/e1/scalars?run=train&tag=loss&format=json",
			Want: `{"run": "train", "tag": "loss", "points": {"steps": [1, 2], "wall_times": [1001, 1002], "values": [0.5, 0.25]}}`},
		{Name: "scalars of a missing series", Fn: h.DownloadScalars, Target: "/api/experiments/e1/scalars?run=train&tag=nope", Code: http.StatusNotFound},
		{Name: "scalars as XML", Fn: h.DownloadScalars, Target: "/api/experiments/e1/scalars?run=train&tag=loss&format=xml", Code: http.StatusBadRequest},
		{Name: "tensors", Fn: h.DownloadTensors, Target: "/api/experiments/e1/tensors?run=train&tag=w&plugin=histograms",
			Want: `{"step": 3, "wall_time": 1003, "tensor": {"dtype": "DT_FLOAT", "floatVal": [1.5]}}`},
		{Name: "tensors without a plugin", Fn: h.DownloadTensors, Target: "/api/experiments/e1/tensors?run=train&tag=w", Code: http.StatusBadRequest},
		{Name: "who am I", Fn: h.WhoAmI, Target: "/api/whoami", Want: `{"userId": "u1", "userName": "ada"}`},
		{Name: "tokens", Fn: h.ListTokens, Target: "/api/tokens", Want: `{"tokens": [{"tokenId": "t1", "name": "laptop"}]}`},
		{Name: "grants", Fn: h.ListGrants, Target: "/api/experiments/e1/grants", Want: `{"grants": [{"experimentId": "e1", "userName": "bob"}]}`},
	})
}

func TestScalarsCSV(t *testing.T) {
	t.Parallel()
	h, _ := api(t)
	rec := routetest.Call(t, h.DownloadScalars, http.MethodGet, "/api/experiments/e1/scalars?run=train&tag=loss", "")
	if got, want := string(routetest.Body(t, rec)), "wall_time,step,value\r\n1001.0,1,0.5\r\n1002.0,2,0.25\r\n"; got != want {
		t.Errorf("CSV %q, want %q", got, want)
	}
	if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="scalars.csv"` {
		t.Errorf("Content-Disposition %q", cd)
	}
}

// The management routes change what the services keep and answer the
// result; a bad body changes nothing.
func TestManage(t *testing.T) {
	t.Parallel()
	h, s := api(t)
	patch := routetest.Call(t, h.UpdateExperiment, http.MethodPatch, "/api/experiments/e1", `{"name": "mnist-2", "visibility": "public"}`)
	if patch.Code != http.StatusOK || !strings.Contains(patch.Body.String(), `"mnist-2"`) || !strings.Contains(patch.Body.String(), "VISIBILITY_PUBLIC") {
		t.Errorf("PATCH: %d %s", patch.Code, patch.Body)
	}
	if e := s.exps["e1"]; e.Name != "mnist-2" || e.Description != "a **small** net" || e.Visibility != experimentsv1.Visibility_VISIBILITY_PUBLIC {
		t.Errorf("after PATCH: %v", e)
	}
	for _, bad := range []string{`{}`, `{"visibility": "secret"}`, `{"name": "x", "owner": "eve"}`, `{`} {
		if rec := routetest.Call(t, h.UpdateExperiment, http.MethodPatch, "/api/experiments/e1", bad); rec.Code != http.StatusBadRequest {
			t.Errorf("PATCH %s: %d %s, want 400", bad, rec.Code, rec.Body)
		}
	}
	if e := s.exps["e1"]; e.Name != "mnist-2" {
		t.Errorf("a bad PATCH changed the experiment: %v", e)
	}
	if rec := routetest.Call(t, h.UpdateExperiment, http.MethodPatch, "/api/experiments/e1", strings.Repeat(" ", maxManageBody+1)); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("PATCH of a large body: %d, want 413", rec.Code)
	}

	if rec := routetest.Call(t, h.Grant, http.MethodPost, "/api/experiments/e1/grants", `{"email": "carol@example.com"}`); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"carol"`) {
		t.Errorf("grant: %d %s", rec.Code, rec.Body)
	}
	if rec := routetest.Call(t, h.Grant, http.MethodPost, "/api/experiments/e1/grants", `{}`); rec.Code != http.StatusBadRequest {
		t.Errorf("grant to nobody: %d, want 400", rec.Code)
	}
	if !slices.Equal(s.grants, []string{"e1 carol@example.com"}) {
		t.Errorf("grants given: %v", s.grants)
	}
	if rec := routetest.Call(t, h.Revoke, http.MethodDelete, "/api/experiments/e1/grants?user_name=bob&email=bob@example.com", ""); rec.Code != http.StatusBadRequest {
		t.Errorf("revoke naming two grantees: %d, want 400", rec.Code)
	}
	if rec := routetest.Call(t, h.Revoke, http.MethodDelete, "/api/experiments/e1/grants?user_name=bob", ""); rec.Code != http.StatusNoContent {
		t.Errorf("revoke: %d %s", rec.Code, rec.Body)
	}

	if rec := routetest.Call(t, h.SetDisplayName, http.MethodPatch, "/api/whoami", `{"displayName": " Ada L. "}`); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"Ada L."`) {
		t.Errorf("display name: %d %s", rec.Code, rec.Body)
	}
	created := routetest.Call(t, h.CreateToken, http.MethodPost, "/api/tokens", `{"name": "ci"}`)
	if created.Code != http.StatusOK || !strings.Contains(created.Body.String(), `"tbh_secret"`) || created.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("create token: %d %v %s", created.Code, created.Header(), created.Body)
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodDelete, "/api/tokens/t1", nil)
	req.SetPathValue("id", "t1")
	rec := httptest.NewRecorder()
	if err := h.RevokeToken(rec, &route.Request{Request: req, Ctx: t.Context()}); err != nil || rec.Code != http.StatusNoContent || !slices.Equal(s.revoked, []string{"t1"}) {
		t.Errorf("revoke token: %v %d, revoked %v", err, rec.Code, s.revoked)
	}

	if rec := routetest.Call(t, h.DeleteExperiment, http.MethodDelete, "/api/experiments/e1", ""); rec.Code/100 != 2 {
		t.Errorf("delete: %d %s", rec.Code, rec.Body)
	}
	if _, ok := s.exps["e1"]; ok {
		t.Error("the experiment is still there after DELETE")
	}
	if rec := routetest.Call(t, h.GetExperiment, http.MethodGet, "/api/experiments/e1", ""); rec.Code != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d, want 404", rec.Code)
	}
}

// Without the services a route needs it answers 501, whatever the rest.
func TestMissingServices(t *testing.T) {
	t.Parallel()
	h, _ := api(t)
	h.Experiments, h.Writer, h.Auth = nil, nil, nil
	for name, fn := range map[string]route.Func{
		"list": h.ListExperiments, "get": h.GetExperiment, "update": h.UpdateExperiment, "delete": h.DeleteExperiment,
		"grants": h.ListGrants, "grant": h.Grant, "revoke": h.Revoke, "whoami": h.WhoAmI, "display name": h.SetDisplayName,
		"tokens": h.ListTokens, "create token": h.CreateToken, "revoke token": h.RevokeToken,
	} {
		if rec := routetest.Call(t, fn, http.MethodGet, "/api/x", ""); rec.Code != http.StatusNotImplemented {
			t.Errorf("%s: %d, want 501", name, rec.Code)
		}
	}
}
