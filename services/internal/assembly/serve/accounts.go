package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// OwnerName is the user `tbhub serve` creates on its first start.
const OwnerName = "owner"

// UserStore is what account setup needs.
type UserStore interface {
	GetUserByName(ctx context.Context, name string) (store.User, error)
	CreateUser(ctx context.Context, u store.User) error
}

// EnsureUser returns the user called name, creating a local user (no OIDC
// identity) if there is none; created reports which.
func EnsureUser(ctx context.Context, st UserStore, name string) (u store.User, created bool, err error) {
	u, err = st.GetUserByName(ctx, name)
	if err == nil {
		return u, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.User{}, false, err
	}
	u = store.User{ID: store.NewUserID(), Name: name}
	if err := st.CreateUser(ctx, u); err != nil {
		return store.User{}, false, fmt.Errorf("serve: create user %q: %w", name, err)
	}
	return u, true, nil
}

// IssueUserToken creates the user called name if needed and returns a new
// upload+read API token for it (the secret; shown once).
func IssueUserToken(ctx context.Context, st UserStore, a *auth.Authenticator, name, label string) (string, error) {
	u, _, err := EnsureUser(ctx, st, name)
	if err != nil {
		return "", err
	}
	_, secret, err := a.IssueToken(ctx, u.ID, "", label, store.AllScopes, time.Time{})
	return secret, err
}

// FirstStart creates the owner user and a token for it when the store has
// no owner yet; it returns the token, or "" on later starts.
func (s *Server) FirstStart(ctx context.Context) (string, error) {
	u, created, err := EnsureUser(ctx, s.st, OwnerName)
	if err != nil || !created {
		return "", err
	}
	_, secret, err := s.auth.IssueToken(ctx, u.ID, "", "created by tbhub serve on first start", store.AllScopes, time.Time{})
	return secret, err
}
