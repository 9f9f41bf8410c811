// Package writer implements the write side of tbhub's gRPC surface (the
// reads that go with it, listing and export, are package export):
//
//   - tensorboard.service.TensorBoardWriterService, TensorBoard.dev's upload
//     protocol (experiments, scalars, tensors, chunked resumable blobs);
//   - tbhub.experiments.v1.ExperimentService (continuing an experiment,
//     visibility, read grants, quota usage) and tbhub.auth.v1.AuthService
//     (who am I, API tokens).
//
// Every call has passed tenancy.Guard before it reaches a handler here: the
// principal and, for calls on an experiment, the authorized experiment are
// in the context. Handlers validate, enforce limits (package limits), and
// call the store; errors go back through the guard, which translates them
// once (rpcerr.ToStatus).
package writer

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Config configures the services.
type Config struct {
	// PublicOrigin is where experiments are viewed, without a trailing
	// slash, e.g. "https://tbhub.example" or "http://localhost:6006". An
	// experiment's URL is PublicOrigin + "/experiment/" + id + "/".
	PublicOrigin string
	// DefaultVisibility is given to new experiments; private if empty.
	DefaultVisibility store.Visibility
	// EnableTestRPCs enables PurgeData and DeleteOwnUser, which are
	// UNIMPLEMENTED otherwise.
	EnableTestRPCs bool
	// CreateRequestTTL is how long a CreateExperiment request ID
	// (writehint.RequestIDKey) is remembered: a retry within it answers
	// the experiment the first attempt created. DefaultCreateRequestTTL if
	// zero.
	CreateRequestTTL time.Duration
	// ClientAddr resolves the client address of a call (the peer, or the
	// address a trusted proxy forwarded: clientaddr.Hops.FromGRPC); the
	// per-client blob stream cap counts a user's streams per address. If
	// nil, the connection's peer address.
	ClientAddr func(context.Context) (netip.Addr, bool)
	// Now is the clock; time.Now if nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// DefaultCreateRequestTTL is Config.CreateRequestTTL's default: a day,
// far longer than an uploader retries a create (about a minute), and long
// enough for one killed during its create to be run again.
const DefaultCreateRequestTTL = 24 * time.Hour

// Server holds what the four services share. Register puts them on a gRPC
// server.
type Server struct {
	st      store.Store
	blobs   blob.Store
	auth    *auth.Authenticator
	limits  *limits.Enforcer
	cfg     Config
	now     func() time.Time
	logger  *slog.Logger
	uploads sync.Map // blob object key -> struct{}: WriteBlob streams in progress
	cursors blobCursors
}

// New returns the services over st and blobs.
func New(st store.Store, blobs blob.Store, a *auth.Authenticator, enf *limits.Enforcer, cfg Config) (*Server, error) {
	if cfg.PublicOrigin == "" || strings.HasSuffix(cfg.PublicOrigin, "/") {
		return nil, fmt.Errorf("writer.New: PublicOrigin %q must be set, without a trailing slash", cfg.PublicOrigin)
	}
	if cfg.DefaultVisibility == "" {
		cfg.DefaultVisibility = store.VisibilityPrivate
	}
	if !cfg.DefaultVisibility.Valid() {
		return nil, fmt.Errorf("writer.New: default visibility %q", cfg.DefaultVisibility)
	}
	if cfg.CreateRequestTTL == 0 {
		cfg.CreateRequestTTL = DefaultCreateRequestTTL
	}
	if cfg.CreateRequestTTL < 0 {
		return nil, fmt.Errorf("writer.New: create request TTL %v is negative", cfg.CreateRequestTTL)
	}
	s := &Server{st: st, blobs: blobs, auth: a, limits: enf, cfg: cfg, now: cfg.Now, logger: cfg.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Register registers the writer, experiments and auth services.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	servicepb.RegisterTensorBoardWriterServiceServer(r, &writerService{s: s})
	experimentsv1.RegisterExperimentServiceServer(r, &experimentService{s: s})
	authv1.RegisterAuthServiceServer(r, &authService{s: s})
}

// ExperimentURL is the page of an experiment.
func (s *Server) ExperimentURL(eid string) string {
	return s.cfg.PublicOrigin + "/experiment/" + eid + "/"
}

// Limits for validation of names; the uploader-facing limits live in
// package limits.
const (
	// MaxExperimentNameChars and MaxExperimentDescriptionChars are
	// TensorBoard.dev's limits, in characters (Unicode code points).
	MaxExperimentNameChars        = 100
	MaxExperimentDescriptionChars = 600
	// MaxRunTagBytes bounds run and tag names: any valid UTF-8 of at most
	// this many bytes (run names are relative paths, so generous).
	MaxRunTagBytes = 1024
)
