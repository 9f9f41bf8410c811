package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// identitySchema is schema version 2: OIDC identities and API tokens.
//
//   - oidc_identities is keyed by (issuer, subject), the identity an ID
//     token proves; each user has at most one.
//   - api_tokens keeps the SHA-256 of the secret, never the secret;
//     authentication is one lookup on the unique hash. Times are Unix
//     nanoseconds, NULL while unset.
const identitySchema = `
CREATE TABLE oidc_identities (
	issuer  TEXT NOT NULL,
	subject TEXT NOT NULL,
	user_id TEXT NOT NULL UNIQUE,
	email   TEXT NOT NULL,
	PRIMARY KEY (issuer, subject)
) WITHOUT ROWID;

CREATE TABLE api_tokens (
	id            TEXT PRIMARY KEY,
	hash          BLOB NOT NULL UNIQUE,
	user_id       TEXT NOT NULL,
	name          TEXT NOT NULL,
	scopes        INTEGER NOT NULL,
	secret_prefix TEXT NOT NULL,
	create_time   INTEGER NOT NULL,
	expire_time   INTEGER,
	last_use_time INTEGER,
	revoke_time   INTEGER
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id, create_time);
`

// pendingGrantsSchema is schema version 4: read grants to an email whose
// owner has not signed in yet, turned into read_grants rows when a user
// with that email is created.
const pendingGrantsSchema = `
CREATE TABLE pending_grants (
	email         TEXT NOT NULL,
	experiment_id TEXT NOT NULL,
	PRIMARY KEY (email, experiment_id)
) WITHOUT ROWID;
CREATE INDEX pending_grants_by_experiment ON pending_grants (experiment_id);
`

var _ store.IdentityStore = (*Store)(nil)

// GetOrCreateOIDCUser implements store.IdentityStore.
func (s *Store) GetOrCreateOIDCUser(ctx context.Context, issuer, subject, email, newUserID string) (store.User, error) {
	if issuer == "" || subject == "" || newUserID == "" {
		return store.User{}, fmt.Errorf("sqlitestore.GetOrCreateOIDCUser: issuer, subject and user id must be non-empty: %w", store.ErrInvalidArgument)
	}
	var u store.User
	err := s.write(ctx, func(tx *sql.Tx) error {
		var userID, stored string
		err := tx.QueryRowContext(ctx, "SELECT user_id, email FROM oidc_identities WHERE issuer = ? AND subject = ?",
			issuer, subject).Scan(&userID, &stored)
		switch {
		case err == nil:
			if stored != email {
				if _, err := tx.ExecContext(ctx, "UPDATE oidc_identities SET email = ? WHERE issuer = ? AND subject = ?",
					email, issuer, subject); err != nil {
					return err
				}
			}
		case errors.Is(err, sql.ErrNoRows):
			userID = newUserID
			name, err := freeUserName(ctx, tx, email, newUserID)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO users (id, name, create_time) VALUES (?, ?, ?)",
				userID, name, nanos(s.now())); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO oidc_identities (issuer, subject, user_id, email) VALUES (?, ?, ?, ?)",
				issuer, subject, userID, email); err != nil {
				return err
			}
			if err := claimPendingGrants(ctx, tx, email, userID); err != nil {
				return err
			}
		default:
			return err
		}
		u, err = scanUser(tx.QueryRowContext(ctx, "SELECT "+userColumns+" FROM users WHERE id = ?", userID))
		return err
	})
	if err != nil {
		return store.User{}, fmt.Errorf("sqlitestore.GetOrCreateOIDCUser: %w", err)
	}
	return u, nil
}

// freeUserName picks the name of a new OIDC user: the email, or the email
// qualified by the user ID if another user has it (or the ID alone if the
// issuer gave no email).
func freeUserName(ctx context.Context, tx *sql.Tx, email, userID string) (string, error) {
	if email == "" {
		return userID, nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE name = ?", email).Scan(&n); err != nil {
		return "", err
	}
	if n == 0 {
		return email, nil
	}
	return email + "#" + userID, nil
}

// claimPendingGrants turns the pending grants of email into read grants of
// userID on the experiments still live, and drops them.
func claimPendingGrants(ctx context.Context, tx *sql.Tx, email, userID string) error {
	if email == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO read_grants (experiment_id, user_id)
		SELECT p.experiment_id, ? FROM pending_grants p JOIN experiments e ON e.id = p.experiment_id
		WHERE p.email = ? AND e.deleted = 0`, userID, email); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "DELETE FROM pending_grants WHERE email = ?", email)
	return err
}

// AddPendingGrant implements store.IdentityStore.
func (s *Store) AddPendingGrant(ctx context.Context, eid, email string) error {
	if email == "" {
		return fmt.Errorf("sqlitestore.AddPendingGrant: empty email: %w", store.ErrInvalidArgument)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := liveExperiment(ctx, tx, eid); err != nil {
			return err
		}
		if limit := store.QuotasOf(ctx).PendingGrants; limit > 0 {
			// A new grant is checked against the owner's pending grants,
			// counted in this transaction: the database's only writer.
			var exists, used int64
			if err := tx.QueryRowContext(ctx, `SELECT
					(SELECT COUNT(*) FROM pending_grants WHERE email = ?1 AND experiment_id = ?2),
					(SELECT COUNT(*) FROM experiments e JOIN pending_grants p ON p.experiment_id = e.id
						WHERE e.owner = (SELECT owner FROM experiments WHERE id = ?2) AND e.deleted = 0)`,
				email, eid).Scan(&exists, &used); err != nil {
				return err
			}
			if err := store.CheckQuota(store.PendingGrantsQuotaName, limit, used, 1-exists); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO pending_grants (email, experiment_id) VALUES (?, ?)", email, eid)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.AddPendingGrant: %w", err)
	}
	return nil
}

// RemovePendingGrant implements store.IdentityStore.
func (s *Store) RemovePendingGrant(ctx context.Context, eid, email string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM pending_grants WHERE email = ? AND experiment_id = ?", email, eid)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.RemovePendingGrant: %w", err)
	}
	return nil
}

// ListPendingGrants implements store.IdentityStore.
func (s *Store) ListPendingGrants(ctx context.Context, eid string) ([]string, error) {
	var emails []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		emails, err = queryStrings(ctx, tx, "SELECT email FROM pending_grants WHERE experiment_id = ? ORDER BY email", eid)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListPendingGrants: %w", err)
	}
	return emails, nil
}

// GetOIDCUser implements store.IdentityStore.
func (s *Store) GetOIDCUser(ctx context.Context, issuer, subject string) (store.User, error) {
	var userID string
	err := s.r.QueryRowContext(ctx, "SELECT user_id FROM oidc_identities WHERE issuer = ? AND subject = ?", issuer, subject).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return store.User{}, fmt.Errorf("sqlitestore.GetOIDCUser %s/%s: %w", issuer, subject, store.ErrNotFound)
	}
	if err != nil {
		return store.User{}, fmt.Errorf("sqlitestore.GetOIDCUser %s/%s: %w", issuer, subject, classify(err))
	}
	return s.GetUser(ctx, userID)
}

// SetDisplayName implements store.IdentityStore.
func (s *Store) SetDisplayName(ctx context.Context, userID, name string) (store.User, error) {
	var u store.User
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE users SET display_name = ? WHERE id = ?", nullIfEmpty(name), userID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrNotFound
		}
		u, err = scanUser(tx.QueryRowContext(ctx, "SELECT "+userColumns+" FROM users WHERE id = ?", userID))
		return err
	})
	if err != nil {
		return store.User{}, fmt.Errorf("sqlitestore.SetDisplayName %q: %w", userID, classify(err))
	}
	return u, nil
}

// GetOIDCIdentity implements store.IdentityStore.
func (s *Store) GetOIDCIdentity(ctx context.Context, userID string) (store.OIDCIdentity, error) {
	id := store.OIDCIdentity{UserID: userID}
	err := s.r.QueryRowContext(ctx, "SELECT issuer, subject, email FROM oidc_identities WHERE user_id = ?", userID).
		Scan(&id.Issuer, &id.Subject, &id.Email)
	if errors.Is(err, sql.ErrNoRows) {
		return store.OIDCIdentity{}, fmt.Errorf("sqlitestore.GetOIDCIdentity %q: %w", userID, store.ErrNotFound)
	}
	if err != nil {
		return store.OIDCIdentity{}, fmt.Errorf("sqlitestore.GetOIDCIdentity %q: %w", userID, classify(err))
	}
	return id, nil
}

// CreateAPIToken implements store.IdentityStore.
func (s *Store) CreateAPIToken(ctx context.Context, t store.APIToken) (store.APIToken, error) {
	if t.ID == "" || t.UserID == "" || t.Scopes == 0 || t.Hash == (store.TokenHash{}) {
		return store.APIToken{}, fmt.Errorf("sqlitestore.CreateAPIToken: id, user, scopes and hash are required: %w", store.ErrInvalidArgument)
	}
	t.CreateTime = s.now().UTC()
	t.LastUseTime, t.RevokeTime = time.Time{}, time.Time{}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE id = ?", t.UserID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("user %q: %w", t.UserID, store.ErrNotFound)
		}
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM api_tokens WHERE id = ? OR hash = ?", t.ID, t.Hash[:]).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("token %q: %w", t.ID, store.ErrAlreadyExists)
		}
		if limit := store.QuotasOf(ctx).Tokens; limit > 0 {
			var live int64
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_tokens
				WHERE user_id = ? AND revoke_time IS NULL AND (expire_time IS NULL OR expire_time > ?)`,
				t.UserID, nanos(t.CreateTime)).Scan(&live); err != nil {
				return err
			}
			if err := store.CheckQuota(store.TokensQuotaName, limit, live, 1); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_tokens
			(id, hash, user_id, name, scopes, secret_prefix, create_time, expire_time, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Hash[:], t.UserID, t.Name, int64(t.Scopes), t.SecretPrefix, nanos(t.CreateTime), optionalNanos(t.ExpireTime),
			sql.NullString{String: t.ParentID, Valid: t.ParentID != ""})
		return err
	})
	if err != nil {
		return store.APIToken{}, fmt.Errorf("sqlitestore.CreateAPIToken: %w", err)
	}
	return t, nil
}

const tokenColumns = "id, hash, user_id, name, scopes, secret_prefix, create_time, expire_time, last_use_time, revoke_time, parent_id"

func scanToken(row interface{ Scan(...any) error }) (store.APIToken, error) {
	var t store.APIToken
	var hash []byte
	var scopes, created int64
	var expire, lastUse, revoke sql.NullInt64
	var parent sql.NullString
	if err := row.Scan(&t.ID, &hash, &t.UserID, &t.Name, &scopes, &t.SecretPrefix, &created, &expire, &lastUse, &revoke, &parent); err != nil {
		return store.APIToken{}, err
	}
	t.ParentID = parent.String
	copy(t.Hash[:], hash)
	t.Scopes = store.TokenScopes(scopes)
	t.CreateTime = fromNanos(created)
	t.ExpireTime, t.LastUseTime, t.RevokeTime = timeOf(expire), timeOf(lastUse), timeOf(revoke)
	return t, nil
}

// GetAPITokenByHash implements store.IdentityStore.
func (s *Store) GetAPITokenByHash(ctx context.Context, h store.TokenHash) (store.APIToken, error) {
	t, err := scanToken(s.r.QueryRowContext(ctx, "SELECT "+tokenColumns+" FROM api_tokens WHERE hash = ?", h[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return store.APIToken{}, fmt.Errorf("sqlitestore.GetAPITokenByHash: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.APIToken{}, fmt.Errorf("sqlitestore.GetAPITokenByHash: %w", classify(err))
	}
	return t, nil
}

// ListAPITokens implements store.IdentityStore.
func (s *Store) ListAPITokens(ctx context.Context, userID string) ([]store.APIToken, error) {
	var out []store.APIToken
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT "+tokenColumns+" FROM api_tokens WHERE user_id = ? ORDER BY create_time, id", userID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanToken(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListAPITokens: %w", err)
	}
	return out, nil
}

// RevokeAPIToken implements store.IdentityStore.
func (s *Store) RevokeAPIToken(ctx context.Context, userID, tokenID string, at time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM api_tokens WHERE id = ? AND user_id = ?", tokenID, userID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("token %q of user %q: %w", tokenID, userID, store.ErrNotFound)
		}
		// The token and its descendants, which were made with it and so
		// belong to its user.
		_, err := tx.ExecContext(ctx, `WITH RECURSIVE family(id) AS (
				SELECT ?1
				UNION SELECT t.id FROM api_tokens t JOIN family f ON t.parent_id = f.id WHERE t.user_id = ?3
			)
			UPDATE api_tokens SET revoke_time = COALESCE(revoke_time, ?2) WHERE id IN family`, tokenID, nanos(at), userID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.RevokeAPIToken: %w", err)
	}
	return nil
}

// TouchAPIToken implements store.IdentityStore.
func (s *Store) TouchAPIToken(ctx context.Context, tokenID string, at time.Time, every time.Duration) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE api_tokens SET last_use_time = ?1
			WHERE id = ?2 AND (last_use_time IS NULL OR (last_use_time < ?1 AND last_use_time <= ?3))`,
			nanos(at), tokenID, nanos(at.Add(-every)))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore.TouchAPIToken: %w", err)
	}
	return nil
}

// UserUsage implements store.IdentityStore. Deleted experiments do not
// count: their data is on its way out.
func (s *Store) UserUsage(ctx context.Context, userID string) (store.Usage, error) {
	var u store.Usage
	var pendingBytes int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		// Experiments, points and blob bytes by key: the row the writes
		// keep.
		err := tx.QueryRowContext(ctx, "SELECT experiments, points, blob_bytes FROM user_usage WHERE user_id = ?", userID).
			Scan(&u.Experiments, &u.Points, &u.BlobBytes)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(LENGTH(s.metadata)), 0)
			FROM experiments e JOIN series s ON s.experiment_id = e.id
			WHERE e.owner = ? AND e.deleted = 0`, userID).Scan(&u.MetadataBytes); err != nil {
			return err
		}
		// Token bytes as store.APIToken.StoredBytes counts them.
		if err := tx.QueryRowContext(ctx, `SELECT
				COALESCE(SUM(CASE WHEN revoke_time IS NULL AND (expire_time IS NULL OR expire_time > ?) THEN 1 ELSE 0 END), 0),
				COALESCE(SUM(LENGTH(CAST(id AS BLOB)) + LENGTH(CAST(name AS BLOB)) + LENGTH(CAST(secret_prefix AS BLOB))
					+ COALESCE(LENGTH(CAST(parent_id AS BLOB)), 0) + ?), 0)
			FROM api_tokens WHERE user_id = ?`, nanos(s.now()), store.TokenRecordOverhead, userID).Scan(&u.Tokens, &u.TokenBytes); err != nil {
			return err
		}
		// Runs and grants count RowBytes each: their text's UTF-8 bytes
		// and store.RowOverheadBytes.
		return tx.QueryRowContext(ctx, `SELECT
				(SELECT COALESCE(SUM(LENGTH(CAST(r.name AS BLOB)) + ?2), 0)
					FROM experiments e JOIN runs r ON r.experiment_id = e.id WHERE e.owner = ?1 AND e.deleted = 0),
				(SELECT COALESCE(SUM(LENGTH(CAST(g.user_id AS BLOB)) + ?2), 0)
					FROM experiments e JOIN read_grants g ON g.experiment_id = e.id WHERE e.owner = ?1 AND e.deleted = 0),
				(SELECT COUNT(*)
					FROM experiments e JOIN pending_grants p ON p.experiment_id = e.id WHERE e.owner = ?1 AND e.deleted = 0),
				(SELECT COALESCE(SUM(LENGTH(CAST(p.email AS BLOB)) + ?2), 0)
					FROM experiments e JOIN pending_grants p ON p.experiment_id = e.id WHERE e.owner = ?1 AND e.deleted = 0)`,
			userID, store.RowOverheadBytes).Scan(&u.RunBytes, &u.GrantBytes, &u.PendingGrants, &pendingBytes)
	})
	u.GrantBytes += pendingBytes
	if err != nil {
		return store.Usage{}, fmt.Errorf("sqlitestore.UserUsage: %w", err)
	}
	return u, nil
}

// ListGrantedExperiments implements store.IdentityStore.
func (s *Store) ListGrantedExperiments(ctx context.Context, userID string) ([]string, error) {
	var ids []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		ids, err = queryStrings(ctx, tx, `SELECT g.experiment_id FROM read_grants g
			JOIN experiments e ON e.id = g.experiment_id
			WHERE g.user_id = ? AND e.deleted = 0 ORDER BY g.experiment_id`, userID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore.ListGrantedExperiments: %w", err)
	}
	return ids, nil
}

func optionalNanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return nanos(t)
}

func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}
