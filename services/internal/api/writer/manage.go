package writer

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/walltime"
)

// experimentService is tbhub.experiments.v1.ExperimentService.
type experimentService struct {
	experimentsv1.UnimplementedExperimentServiceServer
	s *Server
}

var visibilityToProto = map[store.Visibility]experimentsv1.Visibility{
	store.VisibilityPrivate:  experimentsv1.Visibility_VISIBILITY_PRIVATE,
	store.VisibilityUnlisted: experimentsv1.Visibility_VISIBILITY_UNLISTED,
	store.VisibilityPublic:   experimentsv1.Visibility_VISIBILITY_PUBLIC,
}

func (s *Server) experimentV1(ctx context.Context, e *store.Experiment) *experimentsv1.Experiment {
	return s.experimentV1With(ctx, e, owners{})
}

// owner is what an answer may say of an experiment's owner: the user, and
// their email if the caller is the owner.
type owner struct {
	user  store.User
	email string
}

// owners keeps the owners one answer names, by user ID.
type owners map[string]owner

// experimentV1With converts e, looking its owner up in o first. Everyone
// sees the owner's public name (store.User.PublicName); only the owner
// sees their user name and email: an OIDC user's user name is their email,
// and the gallery is open to anyone. Likewise only the owner sees the names
// of damaged files, everyone how many records.
func (s *Server) experimentV1With(ctx context.Context, e *store.Experiment, o owners) *experimentsv1.Experiment {
	out := &experimentsv1.Experiment{
		ExperimentId: e.ID, Name: e.Name, Description: e.Description,
		OwnerUserId: e.Owner, Visibility: visibilityToProto[e.Visibility],
		CreateTime: timestamppb.New(e.CreateTime), UpdateTime: timestamppb.New(e.UpdateTime),
		Counts: &experimentsv1.ExperimentCounts{
			NumRuns: e.NumRuns, NumTags: e.NumTags, NumScalarPoints: e.NumScalars, NumTensorPoints: e.NumTensors,
			NumBlobs: e.NumBlobs, TotalTensorBytes: e.TotalTensorBytes, TotalBlobBytes: e.TotalBlobBytes,
		},
		Url: s.ExperimentURL(e.ID),
	}
	isOwner := false
	if p := auth.FromContext(ctx); p != nil {
		isOwner = p.UserID == e.Owner
	}
	if d := e.Damaged; d.Records > 0 {
		out.Damaged = &experimentsv1.DamagedRecords{Records: d.Records, NumFiles: d.NumFiles}
		if isOwner { // an event file's name carries the host that wrote it
			out.Damaged.Files = d.Files
		}
	}
	who, ok := o[e.Owner]
	if !ok {
		who.user = store.User{ID: e.Owner}
		if u, err := s.st.GetUser(ctx, e.Owner); err == nil {
			who.user = u
		}
		if isOwner {
			if id, err := s.st.GetOIDCIdentity(ctx, e.Owner); err == nil {
				who.email = id.Email
			}
		}
		o[e.Owner] = who
	}
	out.OwnerDisplayName = who.user.PublicName()
	if isOwner {
		out.OwnerName, out.OwnerEmail = who.user.Name, who.email
	}
	return out
}

// withCounts reads the authorized experiment again with its counts (the
// guard's copy has none).
func (s *Server) withCounts(ctx context.Context) (store.Experiment, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return store.Experiment{}, err
	}
	return s.st.GetExperiment(ctx, e.ID)
}

func (x *experimentService) ContinueExperiment(ctx context.Context, _ *experimentsv1.ContinueExperimentRequest) (*experimentsv1.ContinueExperimentResponse, error) {
	e, err := x.s.withCounts(ctx)
	if err != nil {
		return nil, err
	}
	series, err := x.s.st.ListSeries(ctx, e.ID, store.DataClassUnknown, store.Filter{})
	if err != nil {
		return nil, err
	}
	resp := &experimentsv1.ContinueExperimentResponse{Experiment: x.s.experimentV1(ctx, &e)}
	for _, s := range series {
		resp.Series = append(resp.Series, &experimentsv1.SeriesProgress{
			Run: s.Run, Tag: s.Tag, PluginName: s.PluginName, MaxStep: s.MaxStep,
			MaxWallTime: walltime.Timestamp(s.MaxWallTime), NumPoints: s.PointCount,
		})
	}
	return resp, nil
}

// maxRunsPerPut bounds PutRunsRequest.runs (one store commit each).
const maxRunsPerPut = 1000

// newRuns refuses a write whose runs not in the experiment yet would take
// it past MaxRunsPerExperiment (RESOURCE_EXHAUSTED naming the limit), and
// returns what those new runs count toward the byte quota. Like the
// quotas, it is as exact as one process can make it: concurrent writes
// of new runs may each pass, up to a request's runs beyond the limit.
func (s *Server) newRuns(ctx context.Context, eid string, names []string) (bytes int64, err error) {
	if len(names) == 0 {
		return 0, nil
	}
	total, missing, err := s.st.CountRuns(ctx, eid, names)
	if err != nil {
		return 0, err
	}
	if max := s.limits.Limits().MaxRunsPerExperiment; max > 0 && total+int64(len(missing)) > max {
		return 0, rpcerr.New(codes.ResourceExhausted, "runs per experiment limit is %d: the experiment has %d and this request adds %d",
			max, total, len(missing))
	}
	for _, name := range missing {
		bytes += store.RowBytes(name)
	}
	return bytes, nil
}

// PutRuns creates the request's runs and records their start times.
func (x *experimentService) PutRuns(ctx context.Context, req *experimentsv1.PutRunsRequest) (*experimentsv1.PutRunsResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	if n := len(req.GetRuns()); n > maxRunsPerPut {
		return nil, rpcerr.New(codes.InvalidArgument, "at most %d runs per PutRuns request; the request has %d", maxRunsPerPut, n)
	}
	damage, bad := damageOf(req.GetDamaged())
	if bad != "" {
		return nil, rpcerr.New(codes.InvalidArgument, "damaged: %s", bad)
	}
	runs := make([]store.Run, len(req.GetRuns()))
	names := make([]string, len(req.GetRuns()))
	for i, r := range req.GetRuns() {
		if bad := checkRunTag("run", r.GetName()); bad != "" {
			return nil, rpcerr.New(codes.InvalidArgument, "runs[%d]: %s", i, bad)
		}
		if st := r.GetStartTime(); math.IsInf(st, 0) {
			return nil, rpcerr.New(codes.InvalidArgument, "runs[%d]: start time %v", i, st)
		}
		runs[i] = store.Run{Name: r.GetName(), StartTime: r.GetStartTime()}
		names[i] = r.GetName()
	}
	runBytes, err := x.s.newRuns(ctx, e.ID, names)
	if err != nil {
		return nil, err
	}
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := x.s.limits.ReserveStoredBytes(ctx, p.UserID, runBytes); err != nil {
		return nil, err
	}
	if err := x.s.st.PutRuns(ctx, e.ID, runs); err != nil {
		return nil, err
	}
	if damage != nil {
		if _, err := x.s.st.UpdateExperiment(ctx, e.ID, store.ExperimentUpdate{Damaged: damage}); err != nil {
			return nil, err
		}
	}
	return &experimentsv1.PutRunsResponse{}, nil
}

// Bounds of PutRunsRequest.damaged (experiments.proto): the files named,
// and the count, which the uploader caps.
const (
	maxDamagedFiles   = 100
	maxDamagedRecords = 1_000_000_000_000
)

// damageOf checks an uploader's report of damaged records; nil for none
// (the experiment keeps what it holds), else what to store or why not.
func damageOf(d *experimentsv1.DamagedRecords) (*store.Damage, string) {
	if d == nil {
		return nil, ""
	}
	switch {
	case d.GetRecords() < 0 || d.GetRecords() > maxDamagedRecords:
		return nil, fmt.Sprintf("records %d not in [0, %d]", d.GetRecords(), int64(maxDamagedRecords))
	case len(d.GetFiles()) > maxDamagedFiles:
		return nil, fmt.Sprintf("%d files named; at most %d", len(d.GetFiles()), maxDamagedFiles)
	case d.GetNumFiles() < int64(len(d.GetFiles())) || d.GetNumFiles() > d.GetRecords():
		return nil, fmt.Sprintf("num_files %d: fewer than the %d files named, or more than the %d records", d.GetNumFiles(), len(d.GetFiles()), d.GetRecords())
	}
	for i, f := range d.GetFiles() {
		if bad := checkRunTag("file", f); bad != "" {
			return nil, fmt.Sprintf("files[%d]: %s", i, bad)
		}
	}
	return &store.Damage{Records: d.GetRecords(), NumFiles: d.GetNumFiles(), Files: d.GetFiles()}, ""
}

// maxRunPageSize bounds GetExperimentRequest.run_page_size: 5,000 runs
// of the longest names are about 5 MB.
const maxRunPageSize = 5000

// GetExperiment answers the experiment with its counts and, unless
// omit_runs, its runs: one page of them (run_page_size, the page token
// the last name's base64url), or all at once, at most
// MaxRunsPerExperiment of them (OUT_OF_RANGE beyond, before they are
// read).
func (x *experimentService) GetExperiment(ctx context.Context, req *experimentsv1.GetExperimentRequest) (*experimentsv1.GetExperimentResponse, error) {
	e, err := x.s.withCounts(ctx)
	if err != nil {
		return nil, err
	}
	resp := &experimentsv1.GetExperimentResponse{Experiment: x.s.experimentV1(ctx, &e)}
	var runs []store.Run
	switch size := int(req.GetRunPageSize()); {
	case req.GetOmitRuns():
		return resp, nil
	case size > 0:
		size = min(size, maxRunPageSize)
		after, err := base64.RawURLEncoding.DecodeString(req.GetRunPageToken())
		if err != nil {
			return nil, rpcerr.New(codes.InvalidArgument, "malformed run_page_token")
		}
		if runs, err = x.s.st.ListRunsAfter(ctx, e.ID, string(after), size+1); err != nil {
			return nil, err
		}
		if len(runs) > size {
			runs = runs[:size]
			resp.NextRunPageToken = base64.RawURLEncoding.EncodeToString([]byte(runs[size-1].Name))
		}
	default:
		if max := x.s.limits.Limits().MaxRunsPerExperiment; max > 0 && e.NumRuns > max {
			// Created before the limit, or under a larger one.
			return nil, rpcerr.New(codes.OutOfRange, "the experiment has %d runs; at most %d are listed at once (omit_runs answers the experiment alone, run_page_size its runs in pages)", e.NumRuns, max)
		}
		if runs, err = x.s.st.ListRuns(ctx, e.ID); err != nil {
			return nil, err
		}
	}
	for _, r := range runs {
		resp.Runs = append(resp.Runs, &experimentsv1.RunStart{Name: r.Name, StartTime: r.StartTime})
	}
	return resp, nil
}

const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// ListExperiments pages through the caller's own experiments or those
// shared with the caller. The page token is the offset into the list.
func (x *experimentService) ListExperiments(ctx context.Context, req *experimentsv1.ListExperimentsRequest) (*experimentsv1.ListExperimentsResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	if size <= 0 {
		size = defaultPageSize
	}
	size = min(size, maxPageSize)
	offset := 0
	if t := req.GetPageToken(); t != "" {
		if offset, err = strconv.Atoi(t); err != nil || offset < 0 {
			return nil, rpcerr.New(codes.InvalidArgument, "malformed page_token")
		}
	}
	var list []store.Experiment
	switch req.GetScope() {
	case experimentsv1.ListExperimentsRequest_SCOPE_UNSPECIFIED, experimentsv1.ListExperimentsRequest_SCOPE_OWNED:
		err = x.s.st.ListExperiments(ctx, store.ExperimentFilter{Owner: p.UserID}, func(e store.Experiment) error {
			list = append(list, e)
			return nil
		})
	case experimentsv1.ListExperimentsRequest_SCOPE_SHARED_WITH_ME:
		var ids []string
		if ids, err = x.s.st.ListGrantedExperiments(ctx, p.UserID); err == nil {
			for _, id := range ids {
				e, gerr := x.s.st.GetExperiment(ctx, id)
				if errors.Is(gerr, store.ErrNotFound) {
					continue // deleted meanwhile
				}
				if gerr != nil {
					return nil, gerr
				}
				list = append(list, e)
			}
		}
	default:
		return nil, rpcerr.New(codes.InvalidArgument, "unknown scope %v", req.GetScope())
	}
	if err != nil {
		return nil, err
	}
	resp := &experimentsv1.ListExperimentsResponse{}
	end := min(len(list), offset+size)
	o := owners{}
	for i := min(offset, len(list)); i < end; i++ {
		resp.Experiments = append(resp.Experiments, x.s.experimentV1With(ctx, &list[i], o))
	}
	if end < len(list) {
		resp.NextPageToken = strconv.Itoa(end)
	}
	return resp, nil
}

const (
	defaultPublicPageSize = 20
	maxPublicPageSize     = 50 // one more is read to tell the last page
	maxPublicQuery        = 200
)

// ListPublicExperiments pages through the public gallery. The page token
// is the position after the page's last experiment: its update time (Unix
// nanoseconds) and ID.
func (x *experimentService) ListPublicExperiments(ctx context.Context, req *experimentsv1.ListPublicExperimentsRequest) (*experimentsv1.ListPublicExperimentsResponse, error) {
	size := int(req.GetPageSize())
	if size <= 0 {
		size = defaultPublicPageSize
	}
	size = min(size, maxPublicPageSize)
	if n := utf8.RuneCountInString(req.GetQuery()); n > maxPublicQuery {
		return nil, rpcerr.New(codes.InvalidArgument, "query has %d characters; at most %d", n, maxPublicQuery)
	}
	q := store.PublicQuery{Search: strings.TrimSpace(req.GetQuery()), Limit: size + 1}
	if t := req.GetPageToken(); t != "" {
		var err error
		if q.After, err = parsePublicToken(t); err != nil {
			return nil, err
		}
	}
	list, err := x.s.st.ListPublicExperiments(ctx, q)
	if err != nil {
		return nil, err
	}
	resp := &experimentsv1.ListPublicExperimentsResponse{}
	o := owners{}
	for i := range list[:min(len(list), size)] {
		resp.Experiments = append(resp.Experiments, x.s.experimentV1With(ctx, &list[i], o))
	}
	if len(list) > size {
		last := list[size-1]
		resp.NextPageToken = strconv.FormatInt(last.UpdateTime.UnixNano(), 10) + "." + last.ID
	}
	return resp, nil
}

func parsePublicToken(t string) (store.PublicCursor, error) {
	nanos, id, ok := strings.Cut(t, ".")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || store.ValidateExperimentID(id) != nil {
		return store.PublicCursor{}, rpcerr.New(codes.InvalidArgument, "malformed page_token")
	}
	return store.PublicCursor{UpdateTime: time.Unix(0, n), ID: id}, nil
}

func (x *experimentService) SetVisibility(ctx context.Context, req *experimentsv1.SetVisibilityRequest) (*experimentsv1.SetVisibilityResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	var v store.Visibility
	for sv, pv := range visibilityToProto {
		if pv == req.GetVisibility() {
			v = sv
		}
	}
	if v == "" {
		return nil, rpcerr.New(codes.InvalidArgument, "visibility must be private, unlisted or public")
	}
	updated, err := x.s.st.UpdateExperiment(ctx, e.ID, store.ExperimentUpdate{Visibility: &v})
	if err != nil {
		return nil, err
	}
	return &experimentsv1.SetVisibilityResponse{Experiment: x.s.experimentV1(ctx, &updated)}, nil
}

// grantee resolves a Grantee: to a user ID, or, for an email nobody has
// signed in with yet, to that email (a pending grant, claimed at the first
// sign-in with it). Emails match the verified email the issuer reports
// whatever their case: both are kept in lower case.
func (s *Server) grantee(ctx context.Context, g *experimentsv1.Grantee) (userID, pendingEmail string, err error) {
	switch {
	case g.GetUserId() != "":
		if _, err := s.st.GetUser(ctx, g.GetUserId()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return "", "", rpcerr.New(codes.NotFound, "no such user")
			}
			return "", "", err
		}
		return g.GetUserId(), "", nil
	case g.GetUserName() != "":
		u, err := s.st.GetUserByName(ctx, g.GetUserName())
		if errors.Is(err, store.ErrNotFound) {
			return "", "", rpcerr.New(codes.NotFound, "no user is named %q", g.GetUserName())
		}
		if err != nil {
			return "", "", err
		}
		return u.ID, "", nil
	case g.GetEmail() != "":
		email := strings.ToLower(strings.TrimSpace(g.GetEmail()))
		if len(email) > MaxEmailBytes {
			return "", "", rpcerr.New(codes.InvalidArgument, "email has %d bytes; an address has at most %d", len(email), MaxEmailBytes)
		}
		// Users are named after their email at their first sign-in (in lower case
		// since emails are; as the issuer spelled it before).
		names := []string{email}
		if g.GetEmail() != email {
			names = append(names, g.GetEmail())
		}
		for _, name := range names {
			u, err := s.st.GetUserByName(ctx, name)
			if err == nil {
				if id, ierr := s.st.GetOIDCIdentity(ctx, u.ID); ierr == nil && strings.EqualFold(id.Email, email) {
					return u.ID, "", nil
				}
			} else if !errors.Is(err, store.ErrNotFound) {
				return "", "", err
			}
		}
		return "", email, nil
	}
	return "", "", rpcerr.New(codes.InvalidArgument, "grantee needs an email, a user_id or a user_name")
}

// changeGrant resolves the grantee and applies forUser (GrantRead or
// RevokeRead) or, for a pending email grant, forEmail to the authorized
// experiment.
func (x *experimentService) changeGrant(ctx context.Context, g *experimentsv1.Grantee,
	forUser, forEmail func(ctx context.Context, eid, who string) error) (string, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return "", err
	}
	uid, email, err := x.s.grantee(ctx, g)
	if err != nil {
		return "", err
	}
	if email != "" {
		return e.ID, forEmail(ctx, e.ID, email)
	}
	return e.ID, forUser(ctx, e.ID, uid)
}

// MaxEmailBytes bounds a grantee's email: the longest path of SMTP
// (RFC 5321, 256 octets) less its angle brackets.
const MaxEmailBytes = 254

// GrantAccess grants read access. A grant the experiment does not hold
// yet counts store.RowBytes of its user ID or email toward the owner's
// byte quota, and a pending one (by email) toward the pending grants
// quota too.
func (x *experimentService) GrantAccess(ctx context.Context, req *experimentsv1.GrantAccessRequest) (*experimentsv1.GrantAccessResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	grantRead := func(ctx context.Context, eid, uid string) error {
		e, err := tenancy.AuthorizedExperiment(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(e.Readers, uid) {
			if err := x.s.limits.ReserveStoredBytes(ctx, p.UserID, store.RowBytes(uid)); err != nil {
				return err
			}
		}
		return x.s.st.GrantRead(ctx, eid, uid)
	}
	addPending := func(ctx context.Context, eid, email string) error {
		pending, err := x.s.st.ListPendingGrants(ctx, eid)
		if err != nil {
			return err
		}
		if !slices.Contains(pending, email) {
			if err := x.s.limits.ReservePendingGrant(ctx, p.UserID, store.RowBytes(email)); err != nil {
				return err
			}
		}
		return x.s.storeRefused(p.UserID, x.s.st.AddPendingGrant(x.s.withQuotas(ctx), eid, email))
	}
	eid, err := x.changeGrant(ctx, req.GetGrantee(), grantRead, addPending)
	if err != nil {
		return nil, err
	}
	return &experimentsv1.GrantAccessResponse{Grant: &experimentsv1.Grant{
		ExperimentId: eid, Grantee: req.GetGrantee(), CreateTime: timestamppb.New(x.s.now()),
	}}, nil
}

func (x *experimentService) RevokeAccess(ctx context.Context, req *experimentsv1.RevokeAccessRequest) (*experimentsv1.RevokeAccessResponse, error) {
	if _, err := x.changeGrant(ctx, req.GetGrantee(), x.s.st.RevokeRead, x.s.st.RemovePendingGrant); err != nil {
		return nil, err
	}
	return &experimentsv1.RevokeAccessResponse{}, nil
}

// ListGrants lists the grants by user ID (with the user's name), then the
// pending ones by email; the store does not keep when a grant was made, so
// create_time is unset.
func (x *experimentService) ListGrants(ctx context.Context, _ *experimentsv1.ListGrantsRequest) (*experimentsv1.ListGrantsResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	resp := &experimentsv1.ListGrantsResponse{}
	for _, uid := range e.Readers {
		g := &experimentsv1.Grant{
			ExperimentId: e.ID,
			Grantee:      &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_UserId{UserId: uid}},
		}
		if u, err := x.s.st.GetUser(ctx, uid); err == nil {
			g.UserName = u.Name
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		resp.Grants = append(resp.Grants, g)
	}
	pending, err := x.s.st.ListPendingGrants(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	for _, email := range pending {
		resp.Grants = append(resp.Grants, &experimentsv1.Grant{
			ExperimentId: e.ID,
			Grantee:      &experimentsv1.Grantee{Grantee: &experimentsv1.Grantee_Email{Email: email}},
		})
	}
	return resp, nil
}

func (x *experimentService) GetQuotaUsage(ctx context.Context, _ *experimentsv1.GetQuotaUsageRequest) (*experimentsv1.GetQuotaUsageResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := x.s.limits.Usage(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	l := x.s.limits.Limits()
	return &experimentsv1.GetQuotaUsageResponse{Usages: []*experimentsv1.QuotaUsage{
		{Quota: experimentsv1.Quota_QUOTA_EXPERIMENTS, Used: u.Experiments, Limit: l.MaxExperimentsPerUser},
		{Quota: experimentsv1.Quota_QUOTA_POINTS, Used: u.Points, Limit: l.MaxPointsPerUser},
		{Quota: experimentsv1.Quota_QUOTA_BLOB_BYTES, Used: u.StoredBytes(), Limit: l.MaxBlobBytesPerUser},
	}}, nil
}
