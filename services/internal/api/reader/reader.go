// Package reader is tbhub's read service: TensorBoard's gRPC data provider
// (tensorboard.data.TensorBoardDataProvider), one experiment per call, over
// a store.Reader and a blob.Store. A stock TensorBoard started with
// --grpc_data_provider, the frontend-api and `tbup view` all read through it.
//
// Semantics follow TensorBoard's (RustBoard's server is the reference):
//
//   - Every call names its experiment. "" and TensorBoard's placeholder
//     "defaultExperimentId" are INVALID_ARGUMENT unless the server is bound
//     to one experiment (Config.BoundExperiment), when they mean it.
//   - A RunTagFilter's absent runs/tags submessage matches everything; a
//     present one matches exactly its names, so an empty one matches
//     nothing.
//   - Read* calls must carry a non-negative downsample; the store keeps the
//     latest point of every series, which TensorBoard's read_last_scalars
//     (num_points = 1) relies on.
//   - Blob keys are URL-safe, name the experiment they were issued for and
//     carry an HMAC under the server's secret (see blobkey.go), so a key can
//     neither be forged nor used to read another experiment's blob.
//   - A read whose answer would exceed Config.MaxResponsePoints points is
//     refused with OUT_OF_RANGE before it grows; so is a run list longer
//     than Config.MaxListedRuns.
//
// Access control is not decided here: every call passes tenancy.Guard
// first, which puts the authorized experiment in the context. Handlers
// refuse calls that arrive without it (fail closed). The service keeps no
// state between calls.
package reader

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// DefaultExperimentID is the experiment ID TensorBoard's Angular UI puts in
// its requests when it is not told one.
const DefaultExperimentID = "defaultExperimentId"

// Defaults for Config's zero values.
const (
	// DefaultMaxResponsePoints bounds one Read* answer: about 100 MB of
	// scalars, under TensorBoard's 256 MiB receive limit.
	DefaultMaxResponsePoints = 5_000_000
	// DefaultMaxResponseTensorBytes bounds the tensor bytes of one
	// ReadTensors answer.
	DefaultMaxResponseTensorBytes = 128 << 20
	// DefaultBlobChunkBytes is the size of ReadBlob's chunks: well under
	// gRPC's default 4 MiB receive limit, so any client takes them.
	DefaultBlobChunkBytes = 1 << 20
	// DefaultMaxListedRuns bounds a ListRuns answer: the write service's
	// default runs per experiment (limits.Default), at most about 21 MB
	// of names.
	DefaultMaxListedRuns = 20_000
)

// MinBlobKeySecretBytes is the shortest accepted Config.BlobKeySecret.
const MinBlobKeySecretBytes = 16

// Config configures a Server.
type Config struct {
	// BlobKeySecret authenticates blob keys (HMAC-SHA256). Every replica
	// must use the same secret, so that a key issued by one is read by
	// another; changing it invalidates keys already handed out (clients
	// ask again). At least MinBlobKeySecretBytes; see RandomSecret for a
	// single process.
	BlobKeySecret []byte
	// BoundExperiment, if set, is the experiment that requests naming ""
	// or "defaultExperimentId" read (a server dedicated to one experiment,
	// as stock TensorBoard's UI sends those IDs). Requests naming other
	// experiments are still served, subject to the same access checks.
	BoundExperiment string
	// PublicOrigin, if set, is where experiments are viewed (no trailing
	// slash); GetExperiment reports PublicOrigin/experiment/{eid}/ as the
	// data location.
	PublicOrigin string
	// MaxResponsePoints bounds the points of one Read* answer (series ×
	// points per series); DefaultMaxResponsePoints if zero.
	MaxResponsePoints int64
	// MaxResponseTensorBytes bounds the serialized tensors of one
	// ReadTensors answer; DefaultMaxResponseTensorBytes if zero.
	MaxResponseTensorBytes int64
	// BlobChunkBytes is ReadBlob's chunk size; DefaultBlobChunkBytes if zero.
	BlobChunkBytes int
	// MaxListedRuns bounds the runs of one ListRuns answer, which
	// TensorBoard's API cannot page; DefaultMaxListedRuns if zero. The
	// write service keeps experiments under its runs per experiment
	// limit; one with more (created before that limit, or under a larger
	// one) is refused with OUT_OF_RANGE before its runs are read.
	MaxListedRuns int64
	Logger        *slog.Logger
}

// RandomSecret returns a fresh 32-byte secret for Config.BlobKeySecret, for
// a single process (`tbhub serve`): its blob keys stop working when it
// restarts, which clients survive by listing again.
func RandomSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails
	return b
}

// Server implements TensorBoardDataProvider.
type Server struct {
	datapb.UnimplementedTensorBoardDataProviderServer

	st     store.Reader
	blobs  blob.Store
	keys   blobKeyCodec
	cfg    Config
	logger *slog.Logger
}

// New returns a read service over st and blobs.
func New(st store.Reader, blobs blob.Store, cfg Config) (*Server, error) {
	if len(cfg.BlobKeySecret) < MinBlobKeySecretBytes {
		return nil, fmt.Errorf("reader.New: BlobKeySecret has %d bytes, want at least %d", len(cfg.BlobKeySecret), MinBlobKeySecretBytes)
	}
	if cfg.BoundExperiment != "" {
		if err := store.ValidateExperimentID(cfg.BoundExperiment); err != nil {
			return nil, fmt.Errorf("reader.New: BoundExperiment: %w", err)
		}
	}
	if strings.HasSuffix(cfg.PublicOrigin, "/") {
		return nil, fmt.Errorf("reader.New: PublicOrigin %q must not end in a slash", cfg.PublicOrigin)
	}
	if cfg.MaxResponsePoints <= 0 {
		cfg.MaxResponsePoints = DefaultMaxResponsePoints
	}
	if cfg.MaxResponseTensorBytes <= 0 {
		cfg.MaxResponseTensorBytes = DefaultMaxResponseTensorBytes
	}
	if cfg.BlobChunkBytes <= 0 {
		cfg.BlobChunkBytes = DefaultBlobChunkBytes
	}
	if cfg.MaxListedRuns <= 0 {
		cfg.MaxListedRuns = DefaultMaxListedRuns
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{
		st:     st,
		blobs:  blobs,
		keys:   blobKeyCodec{secret: append([]byte(nil), cfg.BlobKeySecret...)},
		cfg:    cfg,
		logger: logger,
	}, nil
}

// Register puts the data provider on a gRPC server. The server must chain
// s.UnaryInterceptor / s.StreamInterceptor before tenancy.Guard's.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	datapb.RegisterTensorBoardDataProviderServer(r, s)
}

// servicePrefix starts the full names of the data provider's methods.
const servicePrefix = "/" + "tensorboard.data.TensorBoardDataProvider" + "/"

// UnaryInterceptor resolves the experiment ID of data provider requests
// before the access check: "" and "defaultExperimentId" become the bound
// experiment, or INVALID_ARGUMENT when there is none. Other services'
// calls pass untouched. Chain it before tenancy.Guard's interceptor.
func (s *Server) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, servicePrefix) {
			return handler(ctx, req)
		}
		if r, ok := req.(experimentRequest); ok {
			eid, err := s.resolveExperiment(r.GetExperimentId())
			if err != nil {
				return nil, err
			}
			setExperimentID(req, eid)
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor is UnaryInterceptor's streaming twin. ReadBlob, the
// only streaming RPC, names its experiment inside the blob key, so there
// is nothing to resolve; it exists so that callers chain both alike.
func (s *Server) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, ss)
	}
}

type experimentRequest interface{ GetExperimentId() string }

// resolveExperiment maps a request's experiment ID to the experiment read.
func (s *Server) resolveExperiment(eid string) (string, error) {
	if eid != "" && eid != DefaultExperimentID {
		return eid, nil
	}
	if s.cfg.BoundExperiment != "" {
		return s.cfg.BoundExperiment, nil
	}
	return "", rpcerr.New(codes.InvalidArgument,
		"experiment_id is required: this server serves many experiments (got %q)", eid)
}

// setExperimentID writes eid into the request's experiment_id field.
func setExperimentID(req any, eid string) {
	m, ok := req.(proto.Message)
	if !ok {
		return
	}
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName("experiment_id"); fd != nil && fd.Kind() == protoreflect.StringKind {
		r.Set(fd, protoreflect.ValueOfString(eid))
	}
}

// errNoAccessCheck is returned when a call reaches a handler without the
// guard's verdict: a wiring mistake, never served.
var errNoAccessCheck = errors.New("reader: call reached the read service without tenancy.Guard")

// experiment returns the experiment the guard authorized for this call,
// which must be eid (after resolution).
func (s *Server) experiment(ctx context.Context, eid string) (store.Experiment, error) {
	eid, err := s.resolveExperiment(eid)
	if err != nil {
		return store.Experiment{}, err
	}
	e, ok := tenancy.ExperimentFromContext(ctx)
	if !ok || e.ID != eid {
		return store.Experiment{}, errNoAccessCheck
	}
	return e, nil
}
