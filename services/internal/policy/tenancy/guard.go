package tenancy

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
	"github.com/tbhub/tbhub/services/internal/policy/rpcerr"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/serverkit/clientaddr"
)

// ExperimentGetter is what the guard reads: store.Reader satisfies it. If
// it also implements store.AccessReader (both backends do), the guard uses
// that lighter read, and the experiment it puts in the context has no
// counts.
type ExperimentGetter interface {
	GetExperiment(ctx context.Context, eid string) (store.Experiment, error)
}

// Guard is the interceptor pair that authenticates and authorizes every
// call, and translates handler errors to statuses (rpcerr.ToStatus) on the
// way out.
type Guard struct {
	auth          *auth.Authenticator
	getExperiment func(ctx context.Context, eid string) (store.Experiment, error)
	methods       map[string]Method
	logger        *slog.Logger
	bad           *limits.BadCredentials
	hops          clientaddr.Hops
	internal      *clientaddr.Internal
}

// NewGuard returns a guard using Methods, throttling invalid credentials
// per client address with limits.DefaultCredentialLimits and no trusted
// proxy (see ThrottleBadCredentials).
func NewGuard(a *auth.Authenticator, experiments ExperimentGetter, logger *slog.Logger) *Guard {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Guard{auth: a, methods: Methods, logger: logger, getExperiment: experiments.GetExperiment,
		bad: limits.NewBadCredentials(limits.DefaultCredentialLimits(), nil)}
	if ar, ok := experiments.(store.AccessReader); ok {
		g.getExperiment = ar.GetExperimentAccess
	}
	return g
}

// ThrottleBadCredentials sets the per-address budget of failed credential
// checks (package limits, BadCredentials) and how many proxies in front of
// the server are trusted to name the client (package clientaddr); the
// process's own calls, marked by internal (nil if it makes none), are
// throttled by the client address they forward, and not at all without
// one. now is the clock (time.Now if nil). Call it before serving.
func (g *Guard) ThrottleBadCredentials(l limits.CredentialLimits, hops clientaddr.Hops, internal *clientaddr.Internal, now func() time.Time) error {
	if err := l.Validate(); err != nil {
		return err
	}
	g.bad, g.hops, g.internal = limits.NewBadCredentials(l, now), hops, internal
	return nil
}

type experimentKey struct{}

// ExperimentFromContext returns the experiment the guard authorized the
// call on; ok is false for operations that name none. Its counts (NumRuns
// ... TotalBlobBytes) may be zero: read the experiment again for them.
func ExperimentFromContext(ctx context.Context) (store.Experiment, bool) {
	e, ok := ctx.Value(experimentKey{}).(store.Experiment)
	return e, ok
}

// Caller returns the authenticated principal of a call the guard admitted;
// the guard admits no anonymous call to an operation that needs one, so a
// missing principal is answered as Unauthenticated.
func Caller(ctx context.Context) (*auth.Principal, error) {
	p := auth.FromContext(ctx)
	if p == nil {
		return nil, rpcerr.New(codes.Unauthenticated, "this call needs credentials")
	}
	return p, nil
}

// AuthorizedExperiment returns the experiment the guard authorized the call
// on; an error (a wiring mistake, never served) if there is none.
func AuthorizedExperiment(ctx context.Context) (store.Experiment, error) {
	e, ok := ExperimentFromContext(ctx)
	if !ok {
		return store.Experiment{}, errors.New("tenancy: no authorized experiment in context (the call did not pass the guard)")
	}
	return e, nil
}

// Unary is the unary server interceptor.
func (g *Guard) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if isPublic(info.FullMethod) {
			return handler(ctx, req)
		}
		ctx, m, err := g.authenticate(ctx, info.FullMethod)
		if err != nil {
			return nil, g.toStatus(ctx, info.FullMethod, err)
		}
		if ctx, err = g.authorize(ctx, m, req); err != nil {
			return nil, g.toStatus(ctx, info.FullMethod, err)
		}
		resp, err := handler(ctx, req)
		return resp, g.toStatus(ctx, info.FullMethod, err)
	}
}

// Stream is the streaming server interceptor. Authentication happens
// before the first message; each received message is authorized against
// the experiment it names.
func (g *Guard) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if isPublic(info.FullMethod) {
			return handler(srv, ss)
		}
		ctx, m, err := g.authenticate(ss.Context(), info.FullMethod)
		if err != nil {
			return g.toStatus(ctx, info.FullMethod, err)
		}
		if m.Experiment == nil {
			if ctx, err = g.authorize(ctx, m, nil); err != nil {
				return g.toStatus(ctx, info.FullMethod, err)
			}
		}
		gs := &guardedStream{ServerStream: ss, g: g, m: m, ctx: ctx}
		return g.toStatus(ctx, info.FullMethod, handler(srv, gs))
	}
}

// authenticate finds the method's rule and the caller.
func (g *Guard) authenticate(ctx context.Context, method string) (context.Context, Method, error) {
	m, ok := g.methods[method]
	if !ok {
		return ctx, Method{}, rpcerr.New(codes.PermissionDenied, "%s has no access rule", method)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	creds := md.Get("authorization")
	if len(creds) == 0 {
		return ctx, m, nil
	}
	addr, known := g.hops.FromGRPC(ctx, g.internal)
	check, wait := g.bad.Admit(addr, known, strings.Join(creds, "\n"))
	if wait > 0 {
		// Refused before any lookup: the store and the identity provider
		// see at most the budget's checks from one address.
		if log, stood := g.bad.Failed(); log {
			g.logger.InfoContext(ctx, "rejected credentials", "method", method, "reason", "too many invalid credentials from this address", "client", addr.String(), "rejections", stood)
		}
		return ctx, m, rpcerr.Throttled(wait, "too many invalid credentials from this client address (budget %g/s, burst %d); retry in %s",
			g.bad.Limits().PerSecond, g.bad.Limits().Burst, wait.Round(time.Millisecond))
	}
	p, err := g.auth.FromIncomingContext(ctx)
	switch {
	case errors.Is(err, auth.ErrInvalidCredentials):
		check.Invalid()
		if log, stood := g.bad.Failed(); log {
			g.logger.InfoContext(ctx, "rejected credentials", "method", method, "reason", err.Error(), "client", clientString(addr, known), "rejections", stood)
		}
		return ctx, m, rpcerr.New(codes.Unauthenticated, "invalid credentials: malformed, unknown, expired or revoked")
	case errors.Is(err, auth.ErrIssuerUnavailable):
		check.Undecided()
		g.logger.WarnContext(ctx, "identity provider unavailable", "error", err.Error())
		return ctx, m, rpcerr.New(codes.Unavailable, "identity provider unavailable; retry")
	case err != nil:
		check.Undecided()
		return ctx, m, err
	}
	check.Valid(p.UserID)
	return auth.NewContext(ctx, p), m, nil
}

// clientString is a client address for the log: "local" for the
// process's own calls.
func clientString(addr netip.Addr, known bool) string {
	if !known {
		return "local"
	}
	return addr.String()
}

// authorize consults the table for the request and, for operations on an
// experiment, stores the experiment in the context.
func (g *Guard) authorize(ctx context.Context, m Method, req any) (context.Context, error) {
	p := auth.FromContext(ctx)
	if m.Experiment == nil {
		return ctx, outcomeError(Decide(m.Op, p, nil), m.Op, p)
	}
	if p == nil {
		if out, ok := anonymousOutcome(m.Op); ok {
			return ctx, outcomeError(out, m.Op, p)
		}
	}
	eid := m.Experiment(req)
	if eid == "" || eid == placeholderExperimentID {
		// A malformed request, not a missing experiment: say so (TensorBoard's
		// INVALID_ARGUMENT), and how a stock TensorBoard gets one experiment bound.
		return ctx, rpcerr.New(codes.InvalidArgument, "experiment_id is required (%q names no experiment here; `tbup view ID` serves one experiment to a stock TensorBoard)", eid)
	}
	var found *store.Experiment
	if store.ValidateExperimentID(eid) == nil {
		e, err := g.getExperiment(ctx, eid)
		switch {
		case err == nil:
			found = &e
		case !errors.Is(err, store.ErrNotFound):
			return ctx, err
		}
	}
	if err := outcomeError(Decide(m.Op, p, found), m.Op, p); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, experimentKey{}, *found), nil
}

// placeholderExperimentID is what TensorBoard's web app sends when it runs without
// experiments.
const placeholderExperimentID = "defaultExperimentId"

func outcomeError(out Outcome, op Op, p *auth.Principal) error {
	switch out {
	case Allow:
		return nil
	case NotFound:
		return rpcerr.New(codes.NotFound, "experiment not found")
	case Unauthenticated:
		return rpcerr.New(codes.Unauthenticated, "this call needs credentials (authorization: Bearer ...)")
	}
	if p != nil && !p.Scopes.Has(rules[op].scope) {
		return rpcerr.New(codes.PermissionDenied, "the credential's scopes (%v) do not allow %v, which needs the %v scope", p.Scopes, op, rules[op].scope)
	}
	return rpcerr.New(codes.PermissionDenied, "only the experiment's owner may %v it", op)
}

func (g *Guard) toStatus(ctx context.Context, method string, err error) error {
	st, internal := rpcerr.ToStatus(err)
	if internal {
		attrs := []any{"method", method, "error", err.Error()}
		if e, ok := ExperimentFromContext(ctx); ok {
			attrs = append(attrs, "experiment_id", e.ID)
		}
		if p := auth.FromContext(ctx); p != nil {
			attrs = append(attrs, "user_id", p.UserID)
		}
		g.logger.ErrorContext(ctx, "internal error", attrs...)
	}
	return st
}

func isPublic(method string) bool {
	for _, p := range publicServices {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}

// guardedStream authorizes every message it receives and gives the
// handler a context holding the principal and the last authorized
// experiment.
type guardedStream struct {
	grpc.ServerStream
	g   *Guard
	m   Method
	ctx context.Context
	eid string // experiment authorized last
}

func (s *guardedStream) Context() context.Context { return s.ctx }

func (s *guardedStream) RecvMsg(msg any) error {
	if err := s.ServerStream.RecvMsg(msg); err != nil {
		return err
	}
	return s.authorizeMessage(msg)
}

// AuthorizeMessage authorizes msg as though the stream had received it,
// for a handler that acts on a request the client did not send (the
// writer names the blob of an empty WriteBlob stream itself). ss is the
// stream the guard handed on (a generated handler's stream wraps it: pass
// its ServerStream). Afterwards ss.Context() holds the experiment.
func AuthorizeMessage(ss grpc.ServerStream, msg any) error {
	gs, ok := ss.(*guardedStream)
	if !ok {
		return errors.New("tenancy: the stream did not pass the guard")
	}
	return gs.authorizeMessage(msg)
}

func (s *guardedStream) authorizeMessage(msg any) error {
	if s.m.Experiment == nil {
		return nil
	}
	eid := s.m.Experiment(msg)
	if s.eid != "" && (eid == s.eid || eid == "") {
		// Same experiment, or a later message that does not repeat the
		// key (the handler checks it belongs to the same upload).
		return nil
	}
	ctx, err := s.g.authorize(s.ctx, s.m, msg)
	if err != nil {
		return err
	}
	s.ctx, s.eid = ctx, eid
	return nil
}
