package writer

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/schemas/writehint"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// writerService is tensorboard.service.TensorBoardWriterService.
type writerService struct {
	servicepb.UnimplementedTensorBoardWriterServiceServer
	s *Server
}

func checkName(name string) error {
	if !utf8.ValidString(name) {
		return rpcerr.New(codes.InvalidArgument, "experiment name is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > MaxExperimentNameChars {
		return rpcerr.New(codes.InvalidArgument, "experiment name has %d characters; the limit is %d", n, MaxExperimentNameChars)
	}
	return nil
}

func checkDescription(d string) error {
	if !utf8.ValidString(d) {
		return rpcerr.New(codes.InvalidArgument, "experiment description is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(d); n > MaxExperimentDescriptionChars {
		return rpcerr.New(codes.InvalidArgument, "experiment description has %d characters; the limit is %d", n, MaxExperimentDescriptionChars)
	}
	return nil
}

// CreateExperiment creates an experiment owned by the caller. A request
// carrying a request ID (writehint.RequestIDKey) is idempotent: the store
// records, with the experiment, which experiment the caller's request made,
// so a retry of it, on any instance, answers that experiment without
// creating another or counting against the quota again.
func (w *writerService) CreateExperiment(ctx context.Context, req *servicepb.CreateExperimentRequest) (*servicepb.CreateExperimentResponse, error) {
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	requestID, err := writehint.RequestID(ctx)
	if err != nil {
		return nil, rpcerr.New(codes.InvalidArgument, "%v", err)
	}
	if err := checkName(req.GetName()); err != nil {
		return nil, err
	}
	if err := checkDescription(req.GetDescription()); err != nil {
		return nil, err
	}
	if err := w.s.limits.Allow(p.UserID); err != nil {
		return nil, err
	}
	now := w.s.now()
	if requestID != "" {
		eid, err := w.s.st.CreatedBy(ctx, p.UserID, requestID, now)
		if err == nil {
			return w.created(ctx, eid, p.UserID, "experiment create retried")
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	if err := w.s.limits.ReserveExperiment(ctx, p.UserID); err != nil {
		return nil, err
	}
	e := store.Experiment{
		ID: store.NewExperimentID(), Name: req.GetName(), Description: req.GetDescription(),
		Owner: p.UserID, Visibility: w.s.cfg.DefaultVisibility,
	}
	eid := e.ID
	if requestID == "" {
		err = w.s.st.CreateExperiment(w.s.withQuotas(ctx), e)
	} else {
		eid, err = w.s.st.CreateExperimentOnce(w.s.withQuotas(ctx), e, store.CreateRequest{ID: requestID, Now: now, Expire: now.Add(w.s.cfg.CreateRequestTTL)})
	}
	if err := w.s.storeRefused(p.UserID, err); err != nil {
		return nil, err
	}
	return w.created(ctx, eid, p.UserID, "experiment created")
}

func (w *writerService) created(ctx context.Context, eid, userID, what string) (*servicepb.CreateExperimentResponse, error) {
	w.s.logger.InfoContext(ctx, what, "experiment_id", eid, "user_id", userID)
	return &servicepb.CreateExperimentResponse{ExperimentId: eid, Url: w.s.ExperimentURL(eid)}, nil
}

func (w *writerService) UpdateExperiment(ctx context.Context, req *servicepb.UpdateExperimentRequest) (*servicepb.UpdateExperimentResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	var u store.ExperimentUpdate
	mask, want := req.GetExperimentMask(), req.GetExperiment()
	if mask.GetName() {
		if err := checkName(want.GetName()); err != nil {
			return nil, err
		}
		u.Name = &want.Name
	}
	if mask.GetDescription() {
		if err := checkDescription(want.GetDescription()); err != nil {
			return nil, err
		}
		u.Description = &want.Description
	}
	if u.Name == nil && u.Description == nil {
		return nil, rpcerr.New(codes.InvalidArgument, "experiment_mask selects nothing that can be changed (name, description)")
	}
	if _, err := w.s.st.UpdateExperiment(ctx, e.ID, u); err != nil {
		return nil, err
	}
	return &servicepb.UpdateExperimentResponse{}, nil
}

func (w *writerService) DeleteExperiment(ctx context.Context, req *servicepb.DeleteExperimentRequest) (*servicepb.DeleteExperimentResponse, error) {
	e, err := tenancy.AuthorizedExperiment(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.s.st.DeleteExperiment(ctx, e.ID); err != nil {
		return nil, err
	}
	w.s.logger.InfoContext(ctx, "experiment deleted", "experiment_id", e.ID)
	return &servicepb.DeleteExperimentResponse{}, nil
}

// PurgeData finishes the deletion of up to batch_limit deleted experiments
// (their rows and blob objects). Test deployments only.
func (w *writerService) PurgeData(ctx context.Context, req *servicepb.PurgeDataRequest) (*servicepb.PurgeDataResponse, error) {
	if !w.s.cfg.EnableTestRPCs {
		return nil, rpcerr.New(codes.Unimplemented, "PurgeData is disabled on this server")
	}
	if req.GetBatchLimit() <= 0 {
		return nil, rpcerr.New(codes.InvalidArgument, "batch_limit must be positive")
	}
	n, err := w.s.Purge(ctx, int(req.GetBatchLimit()))
	if err != nil {
		return nil, err
	}
	return &servicepb.PurgeDataResponse{PurgeStats: &servicepb.PurgeStats{Experiments: int32(n)}}, nil
}

// Purge finishes the deletion of up to limit deleted experiments:
// store.Sweep removes the objects their blob rows name and then the rows;
// then its pending email grants and everything left under its key prefix
// (an upload cut off between its object and its first row leaves an
// object no row names). It returns how many experiments were purged.
func (s *Server) Purge(ctx context.Context, limit int) (int, error) {
	eids, err := s.st.ListDeletedExperiments(ctx, limit)
	if err != nil || len(eids) == 0 {
		return 0, err
	}
	n, err := store.Sweep(ctx, s.st, s.blobs.Delete, limit)
	if err != nil {
		return n, err
	}
	for _, eid := range eids {
		emails, err := s.st.ListPendingGrants(ctx, eid)
		if err != nil {
			return n, err
		}
		for _, email := range emails {
			if err := s.st.RemovePendingGrant(ctx, eid, email); err != nil {
				return n, err
			}
		}
		if err := s.blobs.DeletePrefix(ctx, blob.ExperimentPrefix(eid)); err != nil {
			return n, fmt.Errorf("writer: purge objects of %s: %w", eid, err)
		}
	}
	return n, nil
}

// DeleteOwnUser deletes every experiment of the caller and revokes the
// caller's API tokens. Test deployments only.
func (w *writerService) DeleteOwnUser(ctx context.Context, _ *servicepb.DeleteOwnUserRequest) (*servicepb.DeleteOwnUserResponse, error) {
	if !w.s.cfg.EnableTestRPCs {
		return nil, rpcerr.New(codes.Unimplemented, "DeleteOwnUser is disabled on this server")
	}
	p, err := tenancy.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Scopes.Has(store.ScopeUpload) {
		return nil, rpcerr.New(codes.PermissionDenied, "deleting a user needs the upload scope")
	}
	var eids []string
	err = w.s.st.ListExperiments(ctx, store.ExperimentFilter{Owner: p.UserID}, func(e store.Experiment) error {
		eids = append(eids, e.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, eid := range eids {
		if err := w.s.st.DeleteExperiment(ctx, eid); err != nil {
			return nil, err
		}
	}
	tokens, err := w.s.st.ListAPITokens(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	for _, t := range tokens {
		if err := w.s.st.RevokeAPIToken(ctx, p.UserID, t.ID, w.s.now()); err != nil {
			return nil, err
		}
	}
	return &servicepb.DeleteOwnUserResponse{}, nil
}

// SweepCreateRequests removes up to limit records of CreateExperiment
// request IDs that have expired by the server's clock, and returns how
// many it removed.
func (s *Server) SweepCreateRequests(ctx context.Context, limit int) (int, error) {
	return s.st.DeleteExpiredCreateRequests(ctx, s.now(), limit)
}
