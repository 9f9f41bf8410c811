// Package tenancy decides who may do what. One table (rules) maps an
// operation, the caller's relation to the experiment and the experiment's
// visibility to an outcome; one gRPC interceptor (Guard) authenticates
// every call, finds the experiment it names, consults the table once and
// puts the principal and the experiment in the context for the handler.
// Handlers never decide access themselves.
//
// Two properties the table is built around:
//
//   - A private experiment is indistinguishable from a missing one to
//     anyone but its owner and grantees: both are NOT_FOUND. A missing
//     (or deleted, or malformed) experiment ID is treated as a private
//     experiment the caller does not own.
//   - An anonymous caller attempting something that needs a user gets
//     UNAUTHENTICATED whether or not the experiment exists.
//
// Token scopes narrow what the relation allows: an operation the table
// allows fails with PERMISSION_DENIED when the credential lacks the
// operation's scope (a read-only token cannot write even to its user's own
// experiments). Invalid credentials (malformed, unknown, expired, revoked)
// are UNAUTHENTICATED for every operation: they never fall back to
// anonymous access.
package tenancy

import (
	"slices"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Op is a kind of operation.
type Op int

const (
	// OpCreate creates an experiment (no experiment yet).
	OpCreate Op = iota + 1
	// OpWrite changes an experiment: its data, metadata, visibility,
	// grants, or deletes it.
	OpWrite
	// OpRead reads an experiment's metadata or data.
	OpRead
	// OpList lists the caller's own experiments (no experiment named).
	OpList
	// OpAccount concerns only the caller: who am I, quota usage.
	OpAccount
	// OpBrowse lists the public gallery: anyone, signed in or not, with
	// any scopes (what it shows is public).
	OpBrowse
	// OpCredentials creates, lists or revokes the caller's credentials
	// (API tokens, web sessions): only with the tokens scope, so a read
	// or upload token can neither mint credentials nor see or revoke the
	// user's others.
	OpCredentials
)

func (o Op) String() string {
	names := [...]string{"invalid", "create", "write", "read", "list", "account", "browse", "credentials"}
	if o < 0 || int(o) >= len(names) {
		return "invalid"
	}
	return names[o]
}

// Relation is the caller's relation to an experiment.
type Relation int

const (
	Anonymous Relation = iota // no credentials
	Other                     // signed in, neither owner nor grantee
	Reader                    // holds a read grant
	Owner
)

// Outcome is the table's verdict.
type Outcome int

const (
	Allow Outcome = iota
	NotFound
	PermissionDenied
	Unauthenticated
)

const (
	A = Allow
	N = NotFound
	D = PermissionDenied
	U = Unauthenticated
)

// rule is one row group of the table: the scope a credential needs and the
// outcome per relation, by visibility (private, unlisted, public). For
// operations that name no experiment the three columns agree and only
// Anonymous and Other occur.
type rule struct {
	scope    store.TokenScopes
	outcomes map[Relation][3]Outcome
}

// rules is the access table. Read it as: op, relation -> [private,
// unlisted, public].
var rules = map[Op]rule{
	OpCreate: {store.ScopeUpload, map[Relation][3]Outcome{
		Anonymous: {U, U, U},
		Other:     {A, A, A},
	}},
	OpWrite: {store.ScopeUpload, map[Relation][3]Outcome{
		Anonymous: {U, U, U},
		Other:     {N, D, D}, // a private experiment is not admitted to exist
		Reader:    {D, D, D},
		Owner:     {A, A, A},
	}},
	OpRead: {store.ScopeRead, map[Relation][3]Outcome{
		Anonymous: {N, A, A},
		Other:     {N, A, A},
		Reader:    {A, A, A},
		Owner:     {A, A, A},
	}},
	OpList: {store.ScopeRead, map[Relation][3]Outcome{
		Anonymous: {U, U, U},
		Other:     {A, A, A},
	}},
	OpAccount: {0, map[Relation][3]Outcome{
		Anonymous: {U, U, U},
		Other:     {A, A, A},
	}},
	OpBrowse: {0, map[Relation][3]Outcome{
		Anonymous: {A, A, A},
		Other:     {A, A, A},
	}},
	OpCredentials: {store.ScopeTokens, map[Relation][3]Outcome{
		Anonymous: {U, U, U},
		Other:     {A, A, A},
	}},
}

// RelationOf returns p's relation to e; e nil means the experiment does
// not exist.
func RelationOf(p *auth.Principal, e *store.Experiment) Relation {
	switch {
	case p == nil:
		return Anonymous
	case e == nil:
		return Other
	case e.Owner == p.UserID:
		return Owner
	case slices.Contains(e.Readers, p.UserID):
		return Reader
	}
	return Other
}

func visibilityColumn(e *store.Experiment) int {
	if e == nil {
		return 0 // missing reads as private
	}
	switch e.Visibility {
	case store.VisibilityUnlisted:
		return 1
	case store.VisibilityPublic:
		return 2
	}
	return 0
}

// Decide applies the table: may p perform op on e (nil if it does not
// exist, or for operations that name no experiment)?
func Decide(op Op, p *auth.Principal, e *store.Experiment) Outcome {
	r, ok := rules[op]
	if !ok {
		return PermissionDenied
	}
	row, ok := r.outcomes[RelationOf(p, e)]
	if !ok {
		return PermissionDenied
	}
	out := row[visibilityColumn(e)]
	if out == Allow && p != nil && !p.Scopes.Has(r.scope) {
		return PermissionDenied
	}
	return out
}

// anonymousOutcome reports the outcome of op for an anonymous caller when
// it does not depend on the experiment (the same for every visibility), so
// the guard can answer before reading the request or the store: an
// anonymous write is UNAUTHENTICATED whether or not its experiment exists.
func anonymousOutcome(op Op) (Outcome, bool) {
	r, ok := rules[op]
	if !ok {
		return PermissionDenied, true
	}
	row := r.outcomes[Anonymous]
	if row[0] != row[1] || row[1] != row[2] || row[0] == Allow {
		return 0, false
	}
	return row[0], true
}
