package account

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// Management routes under /api/: what the web UI's "My experiments" page
// does. Each is one or two calls to the write service's RPCs with the
// caller's credential, so who may do what is decided there (owner-only
// actions by someone else: 403 "only the experiment's owner may ...", or
// 404 for a private experiment they cannot see). Request bodies are JSON
// of at most maxManageBody bytes.

const maxManageBody = 64 << 10

func (h API) needWriter() error {
	if h.Writer == nil || h.Experiments == nil {
		return route.Errorf(http.StatusNotImplemented, "this server has no write service")
	}
	return nil
}

func (h API) needAuth() error {
	if h.Auth == nil {
		return route.Errorf(http.StatusNotImplemented, "this server has no auth service")
	}
	return nil
}

// readBody decodes a JSON body into v (a struct, or a proto message in
// proto3 JSON).
func readBody(r *route.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxManageBody+1))
	if err != nil {
		return route.Errorf(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(b) > maxManageBody {
		return route.Errorf(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", maxManageBody)
	}
	if m, ok := v.(proto.Message); ok {
		err = protojson.Unmarshal(b, m)
	} else {
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
	}
	if err != nil {
		return route.Errorf(http.StatusBadRequest, "malformed JSON body: %v", err)
	}
	return nil
}

// parseVisibility accepts private, unlisted, public, or the enum names.
func parseVisibility(s string) (experimentsv1.Visibility, error) {
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "VISIBILITY_") {
		name = "VISIBILITY_" + name
	}
	if v, ok := experimentsv1.Visibility_value[name]; ok && v != 0 {
		return experimentsv1.Visibility(v), nil
	}
	return 0, route.Errorf(http.StatusBadRequest, "visibility %q: want private, unlisted or public", s)
}

// experimentPatch is the body of PATCH /api/experiments/{eid}: the fields
// to change; absent ones stay as they are.
type experimentPatch struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	Visibility  *string `json:"visibility"`
}

// apiUpdateExperiment renames, re-describes and/or changes the visibility
// of an experiment (owner only), then answers it as GET does.
func (h API) UpdateExperiment(w http.ResponseWriter, r *route.Request) error {
	if err := h.needWriter(); err != nil {
		return err
	}
	var p experimentPatch
	if err := readBody(r, &p); err != nil {
		return err
	}
	if p.Name == nil && p.Description == nil && p.Visibility == nil {
		return route.Errorf(http.StatusBadRequest, "nothing to change: give name, description and/or visibility")
	}
	var vis experimentsv1.Visibility
	if p.Visibility != nil {
		var err error
		if vis, err = parseVisibility(*p.Visibility); err != nil {
			return err
		}
	}
	if p.Name != nil || p.Description != nil {
		req := &servicepb.UpdateExperimentRequest{
			Experiment:     &servicepb.Experiment{ExperimentId: r.EID, Name: deref(p.Name), Description: deref(p.Description)},
			ExperimentMask: &servicepb.ExperimentMask{Name: p.Name != nil, Description: p.Description != nil},
		}
		if _, err := h.Writer.UpdateExperiment(r.Ctx, req, h.CallOpts...); err != nil {
			return err
		}
	}
	if p.Visibility != nil {
		if _, err := h.Experiments.SetVisibility(r.Ctx, &experimentsv1.SetVisibilityRequest{ExperimentId: r.EID, Visibility: vis}, h.CallOpts...); err != nil {
			return err
		}
	}
	return h.GetExperiment(w, r)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// apiDeleteExperiment deletes an experiment (owner only); 204.
func (h API) DeleteExperiment(w http.ResponseWriter, r *route.Request) error {
	if err := h.needWriter(); err != nil {
		return err
	}
	if _, err := h.Writer.DeleteExperiment(r.Ctx, &servicepb.DeleteExperimentRequest{ExperimentId: r.EID}, h.CallOpts...); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// apiListGrants lists who may read an experiment besides its owner (owner
// only): ListGrantsResponse in proto3 JSON.
func (h API) ListGrants(w http.ResponseWriter, r *route.Request) error {
	if err := h.needWriter(); err != nil {
		return err
	}
	resp, err := h.Experiments.ListGrants(r.Ctx, &experimentsv1.ListGrantsRequest{ExperimentId: r.EID}, h.CallOpts...)
	if err != nil {
		return err
	}
	return route.WriteProtoJSON(w, resp)
}

// apiGrant lets one user read an experiment (owner only). The body is a
// Grantee in proto3 JSON: {"userName": "..."}, {"email": "..."} or
// {"userId": "..."}. Answers the Grant.
func (h API) Grant(w http.ResponseWriter, r *route.Request) error {
	if err := h.needWriter(); err != nil {
		return err
	}
	g := &experimentsv1.Grantee{}
	if err := readBody(r, g); err != nil {
		return err
	}
	if g.GetGrantee() == nil {
		return route.Errorf(http.StatusBadRequest, `give the user as {"userName": ...}, {"email": ...} or {"userId": ...}`)
	}
	resp, err := h.Experiments.GrantAccess(r.Ctx, &experimentsv1.GrantAccessRequest{ExperimentId: r.EID, Grantee: g}, h.CallOpts...)
	if err != nil {
		return err
	}
	return route.WriteProtoJSON(w, resp.GetGrant())
}

// apiRevoke withdraws a grant (owner only), naming the grantee by exactly
// one of ?user_name=, ?email=, ?user_id=; 204.
func (h API) Revoke(w http.ResponseWriter, r *route.Request) error {
	if err := h.needWriter(); err != nil {
		return err
	}
	q := r.URL.Query()
	var g []*experimentsv1.Grantee
	if v := q.Get("user_name"); v != "" {
		g = append(g, &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserName{UserName: v}})
	}
	if v := q.Get("email"); v != "" {
		g = append(g, &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: v}})
	}
	if v := q.Get("user_id"); v != "" {
		g = append(g, &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserId{UserId: v}})
	}
	if len(g) != 1 {
		return route.Errorf(http.StatusBadRequest, "name the grantee by exactly one of user_name, email, user_id")
	}
	if _, err := h.Experiments.RevokeAccess(r.Ctx, &experimentsv1.RevokeAccessRequest{ExperimentId: r.EID, Grantee: g[0]}, h.CallOpts...); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// apiWhoAmI is the caller as the auth service sees them (WhoAmIResponse in
// proto3 JSON); 401 when anonymous.
func (h API) WhoAmI(w http.ResponseWriter, r *route.Request) error {
	if err := h.needAuth(); err != nil {
		return err
	}
	resp, err := h.Auth.WhoAmI(r.Ctx, &authv1.WhoAmIRequest{}, h.CallOpts...)
	if err != nil {
		return err
	}
	return route.WriteProtoJSON(w, resp)
}

// SetDisplayName sets the name others see for the caller. The body is a
// SetDisplayNameRequest in proto3 JSON ({"displayName"}; empty goes back to
// the handle); the answer is a SetDisplayNameResponse.
func (h API) SetDisplayName(w http.ResponseWriter, r *route.Request) error {
	if err := h.needAuth(); err != nil {
		return err
	}
	req := &authv1.SetDisplayNameRequest{}
	if err := readBody(r, req); err != nil {
		return err
	}
	resp, err := h.Auth.SetDisplayName(r.Ctx, req, h.CallOpts...)
	if err != nil {
		return err
	}
	return route.WriteProtoJSON(w, resp)
}

// apiListTokens lists the caller's API tokens, without secrets.
func (h API) ListTokens(w http.ResponseWriter, r *route.Request) error {
	if err := h.needAuth(); err != nil {
		return err
	}
	resp, err := h.Auth.ListTokens(r.Ctx, &authv1.ListTokensRequest{}, h.CallOpts...)
	if err != nil {
		return err
	}
	return route.WriteProtoJSON(w, resp)
}

// apiCreateToken creates an API token for the caller. The body is a
// CreateTokenRequest in proto3 JSON ({"name", "scopes": ["SCOPE_UPLOAD",
// "SCOPE_READ"], "expireTime"}); the answer holds the secret, which is
// shown this once.
func (h API) CreateToken(w http.ResponseWriter, r *route.Request) error {
	if err := h.needAuth(); err != nil {
		return err
	}
	req := &authv1.CreateTokenRequest{}
	if err := readBody(r, req); err != nil {
		return err
	}
	resp, err := h.Auth.CreateToken(r.Ctx, req, h.CallOpts...)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	b, err := protojson.Marshal(resp)
	if err != nil {
		return fmt.Errorf("encoding the token: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	route.SkipGzip(w)
	_, err = w.Write(b)
	return err
}

// apiRevokeToken revokes one of the caller's tokens; 204.
func (h API) RevokeToken(w http.ResponseWriter, r *route.Request) error {
	if err := h.needAuth(); err != nil {
		return err
	}
	id := r.PathValue("id")
	if id == "" {
		return errors.New("no token id") // the route's pattern always has one
	}
	if _, err := h.Auth.RevokeToken(r.Ctx, &authv1.RevokeTokenRequest{TokenId: id}, h.CallOpts...); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
