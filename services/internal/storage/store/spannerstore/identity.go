package spannerstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/spanner"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The identity tables are described in schemas/spanner/ddl/0002_identity.sql.

var _ store.IdentityStore = (*Store)(nil)

// GetOrCreateOIDCUser implements store.IdentityStore.
func (s *Store) GetOrCreateOIDCUser(ctx context.Context, issuer, subject, email, newUserID string) (store.User, error) {
	s, release := s.acquire()
	defer release()
	if issuer == "" || subject == "" || newUserID == "" {
		return store.User{}, fail("GetOrCreateOIDCUser", fmt.Errorf("issuer, subject and user id must be non-empty: %w", store.ErrInvalidArgument))
	}
	var u store.User
	var created bool
	commit, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		created = false
		row, err := tx.ReadRow(ctx, "OidcIdentities", spanner.Key{issuer, subject}, []string{"UserId", "Email"})
		switch {
		case err == nil:
			var stored string
			if err := row.Columns(&u.ID, &stored); err != nil {
				return err
			}
			if stored != email {
				if err := tx.BufferWrite([]*spanner.Mutation{spanner.Update("OidcIdentities",
					[]string{"Issuer", "Subject", "Email"}, []any{issuer, subject, email})}); err != nil {
					return err
				}
			}
			row, err := tx.ReadRow(ctx, "Users", spanner.Key{u.ID}, userColumns)
			if err != nil {
				return err
			}
			u, err = userFromRow(row)
			return err
		case spanner.ErrCode(err) != codes.NotFound:
			return err
		}
		name := newUserID
		if email != "" {
			name = email
			if _, err := tx.ReadRowUsingIndex(ctx, "Users", "UsersByName", spanner.Key{email}, []string{"UserId"}); err == nil {
				name = email + "#" + newUserID
			} else if spanner.ErrCode(err) != codes.NotFound {
				return err
			}
		}
		u, created = store.User{ID: newUserID, Name: name}, true
		claims, err := pendingGrantClaims(ctx, tx, email, u.ID)
		if err != nil {
			return err
		}
		return tx.BufferWrite(append([]*spanner.Mutation{
			spanner.Insert("Users", []string{"UserId", "Name", "CreateTime"}, []any{u.ID, u.Name, spanner.CommitTimestamp}),
			spanner.Insert("OidcIdentities", []string{"Issuer", "Subject", "UserId", "Email"}, []any{issuer, subject, u.ID, email}),
		}, claims...))
	})
	if err != nil {
		return store.User{}, fail("GetOrCreateOIDCUser", err)
	}
	if created {
		u.CreateTime = commit.UTC()
	}
	return u, nil
}

// pendingGrantClaims returns the mutations that turn the pending grants of
// email into read grants of userID (on live experiments) and delete them.
func pendingGrantClaims(ctx context.Context, tx *spanner.ReadWriteTransaction, email, userID string) ([]*spanner.Mutation, error) {
	if email == "" {
		return nil, nil
	}
	var ms []*spanner.Mutation
	it := tx.Read(ctx, "PendingGrants", spanner.KeyRange{Start: spanner.Key{email}, End: spanner.Key{email}, Kind: spanner.ClosedClosed},
		[]string{"ExperimentId"})
	err := it.Do(func(row *spanner.Row) error {
		var eid string
		if err := row.Columns(&eid); err != nil {
			return err
		}
		state, err := experimentState(ctx, tx, eid)
		if err != nil {
			return err
		}
		if state == stateLive {
			ms = append(ms, spanner.InsertOrUpdate("ReadGrants", []string{"ExperimentId", "UserId", "CreateTime"},
				[]any{eid, userID, spanner.CommitTimestamp}))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ms = append(ms, spanner.Delete("PendingGrants", spanner.KeyRange{Start: spanner.Key{email}, End: spanner.Key{email}, Kind: spanner.ClosedClosed}))
	return ms, nil
}

// AddPendingGrant implements store.IdentityStore.
func (s *Store) AddPendingGrant(ctx context.Context, eid, email string) error {
	s, release := s.acquire()
	defer release()
	if email == "" {
		return fail("AddPendingGrant", fmt.Errorf("empty email: %w", store.ErrInvalidArgument))
	}
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if err := checkLive(ctx, tx, eid); err != nil {
			return err
		}
		if limit := store.QuotasOf(ctx).PendingGrants; limit > 0 {
			// A new grant is checked against the owner's pending grants,
			// counted in this transaction: the query locks what it reads
			// (the owner's experiments and their pending grants), so two
			// grants of one owner, from any instances, serialize.
			row, err := singleRow(tx.Query(ctx, spanner.Statement{SQL: `SELECT
					(SELECT COUNT(*) FROM PendingGrants WHERE Email = @email AND ExperimentId = @eid),
					(SELECT COUNT(*) FROM Experiments e JOIN PendingGrants p ON p.ExperimentId = e.ExperimentId
						WHERE e.OwnerId = (SELECT OwnerId FROM Experiments WHERE ExperimentId = @eid) AND e.State = @live)`,
				Params: map[string]any{"email": email, "eid": eid, "live": stateLive}}))
			if err != nil {
				return err
			}
			var exists, used int64
			if err := row.Columns(&exists, &used); err != nil {
				return err
			}
			if err := store.CheckQuota(store.PendingGrantsQuotaName, limit, used, 1-exists); err != nil {
				return err
			}
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.InsertOrUpdate("PendingGrants",
			[]string{"Email", "ExperimentId", "CreateTime"}, []any{email, eid, spanner.CommitTimestamp})})
	})
	return fail("AddPendingGrant", err)
}

// RemovePendingGrant implements store.IdentityStore.
func (s *Store) RemovePendingGrant(ctx context.Context, eid, email string) error {
	s, release := s.acquire()
	defer release()
	_, err := s.client.Apply(ctx, []*spanner.Mutation{spanner.Delete("PendingGrants", spanner.Key{email, eid})})
	return fail("RemovePendingGrant", err)
}

// ListPendingGrants implements store.IdentityStore.
func (s *Store) ListPendingGrants(ctx context.Context, eid string) ([]string, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.Single()
	defer tx.Close()
	var emails []string
	it := tx.Query(ctx, spanner.Statement{
		SQL:    `SELECT Email FROM PendingGrants@{FORCE_INDEX=PendingGrantsByExperiment} WHERE ExperimentId = @eid ORDER BY Email`,
		Params: map[string]any{"eid": eid},
	})
	err := it.Do(func(row *spanner.Row) error {
		var e string
		if err := row.Columns(&e); err != nil {
			return err
		}
		emails = append(emails, e)
		return nil
	})
	if err != nil {
		return nil, fail("ListPendingGrants", err)
	}
	return emails, nil
}

// GetOIDCUser implements store.IdentityStore: two reads at one timestamp.
func (s *Store) GetOIDCUser(ctx context.Context, issuer, subject string) (store.User, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.ReadOnlyTransaction()
	defer tx.Close()
	row, err := tx.ReadRow(ctx, "OidcIdentities", spanner.Key{issuer, subject}, []string{"UserId"})
	if spanner.ErrCode(err) == codes.NotFound {
		return store.User{}, fail("GetOIDCUser", fmt.Errorf("identity %s/%s: %w", issuer, subject, store.ErrNotFound))
	}
	if err != nil {
		return store.User{}, fail("GetOIDCUser", err)
	}
	var id string
	if err := row.Columns(&id); err != nil {
		return store.User{}, fail("GetOIDCUser", err)
	}
	if row, err = tx.ReadRow(ctx, "Users", spanner.Key{id}, userColumns); err != nil {
		return store.User{}, fail("GetOIDCUser", err)
	}
	u, err := userFromRow(row)
	return u, fail("GetOIDCUser", err)
}

// SetDisplayName implements store.IdentityStore.
func (s *Store) SetDisplayName(ctx context.Context, userID, name string) (store.User, error) {
	s, release := s.acquire()
	defer release()
	var u store.User
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		row, err := tx.ReadRow(ctx, "Users", spanner.Key{userID}, userColumns)
		if err != nil {
			return err
		}
		if u, err = userFromRow(row); err != nil {
			return err
		}
		u.DisplayName = name
		return tx.BufferWrite([]*spanner.Mutation{spanner.Update("Users", []string{"UserId", "DisplayName"},
			[]any{userID, nullIfEmpty(name)})})
	})
	if err != nil {
		return store.User{}, fail("SetDisplayName", err)
	}
	return u, nil
}

// GetOIDCIdentity implements store.IdentityStore.
func (s *Store) GetOIDCIdentity(ctx context.Context, userID string) (store.OIDCIdentity, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.Single()
	defer tx.Close()
	row, err := tx.ReadRowUsingIndex(ctx, "OidcIdentities", "OidcIdentitiesByUser", spanner.Key{userID},
		[]string{"Issuer", "Subject", "Email"})
	if spanner.ErrCode(err) == codes.NotFound {
		return store.OIDCIdentity{}, fail("GetOIDCIdentity", fmt.Errorf("user %q: %w", userID, store.ErrNotFound))
	}
	if err != nil {
		return store.OIDCIdentity{}, fail("GetOIDCIdentity", err)
	}
	id := store.OIDCIdentity{UserID: userID}
	return id, fail("GetOIDCIdentity", row.Columns(&id.Issuer, &id.Subject, &id.Email))
}

var tokenColumns = []string{"TokenId", "TokenHash", "UserId", "Description", "Scopes", "SecretPrefix",
	"CreateTime", "ExpireTime", "LastUseTime", "RevokeTime", "ParentTokenId"}

func tokenFromRow(row *spanner.Row) (store.APIToken, error) {
	var t store.APIToken
	var id, prefix, parent spanner.NullString
	var hash []byte
	var scopes spanner.NullInt64
	var expire, lastUse, revoke spanner.NullTime
	if err := row.Columns(&id, &hash, &t.UserID, &t.Name, &scopes, &prefix, &t.CreateTime, &expire, &lastUse, &revoke, &parent); err != nil {
		return store.APIToken{}, err
	}
	t.ID, t.SecretPrefix, t.Scopes, t.ParentID = id.StringVal, prefix.StringVal, store.TokenScopes(scopes.Int64), parent.StringVal
	copy(t.Hash[:], hash)
	t.CreateTime = t.CreateTime.UTC()
	t.ExpireTime, t.LastUseTime, t.RevokeTime = timeOf(expire), timeOf(lastUse), timeOf(revoke)
	return t, nil
}

func timeOf(t spanner.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func nullTime(t time.Time) spanner.NullTime {
	return spanner.NullTime{Time: t, Valid: !t.IsZero()}
}

// CreateAPIToken implements store.IdentityStore.
func (s *Store) CreateAPIToken(ctx context.Context, t store.APIToken) (store.APIToken, error) {
	s, release := s.acquire()
	defer release()
	if t.ID == "" || t.UserID == "" || t.Scopes == 0 || t.Hash == (store.TokenHash{}) {
		return store.APIToken{}, fail("CreateAPIToken", fmt.Errorf("id, user, scopes and hash are required: %w", store.ErrInvalidArgument))
	}
	t.LastUseTime, t.RevokeTime = time.Time{}, time.Time{}
	commit, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		if _, err := tx.ReadRow(ctx, "Users", spanner.Key{t.UserID}, []string{"UserId"}); err != nil {
			if spanner.ErrCode(err) == codes.NotFound {
				return fmt.Errorf("user %q: %w", t.UserID, store.ErrNotFound)
			}
			return err
		}
		if _, err := tx.ReadRowUsingIndex(ctx, "ApiTokens", "ApiTokensById", spanner.Key{t.ID}, []string{"TokenId"}); err == nil {
			return fmt.Errorf("token %q: %w", t.ID, store.ErrAlreadyExists)
		} else if spanner.ErrCode(err) != codes.NotFound {
			return err
		}
		if limit := store.QuotasOf(ctx).Tokens; limit > 0 {
			// Counted in this transaction, which locks the user's token
			// rows it reads: two creates of one user serialize.
			row, err := singleRow(tx.Query(ctx, spanner.Statement{SQL: `SELECT COUNT(*) FROM ApiTokens
				WHERE UserId = @user AND RevokeTime IS NULL AND (ExpireTime IS NULL OR ExpireTime > CURRENT_TIMESTAMP())`,
				Params: map[string]any{"user": t.UserID}}))
			if err != nil {
				return err
			}
			var live int64
			if err := row.Columns(&live); err != nil {
				return err
			}
			if err := store.CheckQuota(store.TokensQuotaName, limit, live, 1); err != nil {
				return err
			}
		}
		// Insert fails with AlreadyExists if the hash is taken.
		return tx.BufferWrite([]*spanner.Mutation{spanner.Insert("ApiTokens",
			[]string{"TokenHash", "TokenId", "UserId", "Description", "Scopes", "SecretPrefix", "CreateTime", "ExpireTime", "ParentTokenId"},
			[]any{t.Hash[:], t.ID, t.UserID, t.Name, int64(t.Scopes), t.SecretPrefix, spanner.CommitTimestamp, nullTime(t.ExpireTime),
				spanner.NullString{StringVal: t.ParentID, Valid: t.ParentID != ""}})})
	})
	if err != nil {
		return store.APIToken{}, fail("CreateAPIToken", err)
	}
	t.CreateTime = commit.UTC()
	return t, nil
}

// GetAPITokenByHash implements store.IdentityStore.
func (s *Store) GetAPITokenByHash(ctx context.Context, h store.TokenHash) (store.APIToken, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.Single()
	defer tx.Close()
	row, err := tx.ReadRow(ctx, "ApiTokens", spanner.Key{h[:]}, tokenColumns)
	if err != nil {
		return store.APIToken{}, fail("GetAPITokenByHash", err)
	}
	t, err := tokenFromRow(row)
	return t, fail("GetAPITokenByHash", err)
}

// ListAPITokens implements store.IdentityStore.
func (s *Store) ListAPITokens(ctx context.Context, userID string) ([]store.APIToken, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.Single()
	defer tx.Close()
	var out []store.APIToken
	it := tx.Query(ctx, spanner.Statement{
		SQL: `SELECT ` + strings.Join(tokenColumns, ", ") + `
			FROM ApiTokens WHERE UserId = @user ORDER BY CreateTime, TokenId`,
		Params: map[string]any{"user": userID},
	})
	err := it.Do(func(row *spanner.Row) error {
		t, err := tokenFromRow(row)
		out = append(out, t)
		return err
	})
	if err != nil {
		return nil, fail("ListAPITokens", err)
	}
	return out, nil
}

// tokenHashByID finds a token's primary key through ApiTokensById.
func tokenHashByID(ctx context.Context, tx *spanner.ReadWriteTransaction, tokenID string) ([]byte, string, error) {
	row, err := tx.ReadRowUsingIndex(ctx, "ApiTokens", "ApiTokensById", spanner.Key{tokenID}, []string{"TokenHash", "UserId"})
	if err != nil {
		return nil, "", err
	}
	var hash []byte
	var user string
	return hash, user, row.Columns(&hash, &user)
}

// RevokeAPIToken implements store.IdentityStore.
func (s *Store) RevokeAPIToken(ctx context.Context, userID, tokenID string, at time.Time) error {
	s, release := s.acquire()
	defer release()
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		hash, owner, err := tokenHashByID(ctx, tx, tokenID)
		if spanner.ErrCode(err) == codes.NotFound || (err == nil && owner != userID) {
			return fmt.Errorf("token %q of user %q: %w", tokenID, userID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		row, err := tx.ReadRow(ctx, "ApiTokens", spanner.Key{hash}, []string{"RevokeTime"})
		if err != nil {
			return err
		}
		var revoked spanner.NullTime
		if err := row.Columns(&revoked); err != nil {
			return err
		}
		var ms []*spanner.Mutation
		if !revoked.Valid { // else the first revocation time stays
			ms = append(ms, spanner.Update("ApiTokens", []string{"TokenHash", "RevokeTime"}, []any{hash, at}))
		}
		// The descendants, one generation per query.
		for parents := []string{tokenID}; len(parents) > 0; {
			var children []string
			err := tx.Query(ctx, spanner.Statement{
				SQL: `SELECT TokenHash, TokenId, RevokeTime FROM ApiTokens@{FORCE_INDEX=ApiTokensByParent, spanner_emulator.disable_query_null_filtered_index_check=true}
					WHERE ParentTokenId IN UNNEST(@parents) AND UserId = @user`,
				Params: map[string]any{"parents": parents, "user": userID},
			}).Do(func(row *spanner.Row) error {
				var h []byte
				var id string
				var revoked spanner.NullTime
				if err := row.Columns(&h, &id, &revoked); err != nil {
					return err
				}
				children = append(children, id)
				if !revoked.Valid {
					ms = append(ms, spanner.Update("ApiTokens", []string{"TokenHash", "RevokeTime"}, []any{h, at}))
				}
				return nil
			})
			if err != nil {
				return err
			}
			parents = children
		}
		return tx.BufferWrite(ms)
	})
	return fail("RevokeAPIToken", err)
}

// TouchAPIToken implements store.IdentityStore.
func (s *Store) TouchAPIToken(ctx context.Context, tokenID string, at time.Time, every time.Duration) error {
	s, release := s.acquire()
	defer release()
	_, err := s.client.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {
		hash, _, err := tokenHashByID(ctx, tx, tokenID)
		if spanner.ErrCode(err) == codes.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		row, err := tx.ReadRow(ctx, "ApiTokens", spanner.Key{hash}, []string{"LastUseTime"})
		if err != nil {
			return err
		}
		var last spanner.NullTime
		if err := row.Columns(&last); err != nil || (last.Valid && (!last.Time.Before(at) || last.Time.After(at.Add(-every)))) {
			return err
		}
		return tx.BufferWrite([]*spanner.Mutation{spanner.Update("ApiTokens",
			[]string{"TokenHash", "LastUseTime"}, []any{hash, at})})
	})
	return fail("TouchAPIToken", err)
}

// UserUsage implements store.IdentityStore: experiments, points and blob
// bytes from the user's UserUsage row, the rest from the TimeSeries rows
// of the user's live experiments (one per series) and the tokens, runs
// and grants.
func (s *Store) UserUsage(ctx context.Context, userID string) (store.Usage, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.ReadOnlyTransaction()
	defer tx.Close()
	// Experiments and points by key: the row the writes keep.
	kept, err := readUsage(ctx, tx, userID)
	if err != nil {
		return store.Usage{}, fail("UserUsage", err)
	}
	u := store.Usage{Experiments: kept.experiments, Points: kept.points, BlobBytes: kept.blobBytes}
	row, err := singleRow(tx.Query(ctx, spanner.Statement{
		SQL: `SELECT COALESCE(SUM(BYTE_LENGTH(ts.SummaryMetadata)), 0)
			FROM Experiments e JOIN TimeSeries ts ON ts.ExperimentId = e.ExperimentId
			WHERE e.OwnerId = @user AND e.State = @live`,
		Params: map[string]any{"user": userID, "live": stateLive},
	}))
	if err == nil {
		err = row.Columns(&u.MetadataBytes)
	}
	if err != nil {
		return store.Usage{}, fail("UserUsage", err)
	}
	// Tokens (store.APIToken.StoredBytes each; a read-only transaction's
	// CURRENT_TIMESTAMP is its read time), runs and grants (store.RowBytes
	// each: their text's UTF-8 bytes and store.RowOverheadBytes), in one
	// statement.
	row, err = singleRow(tx.Query(ctx, spanner.Statement{
		SQL: `SELECT
				(SELECT COALESCE(SUM(CASE WHEN RevokeTime IS NULL AND (ExpireTime IS NULL OR ExpireTime > CURRENT_TIMESTAMP()) THEN 1 ELSE 0 END), 0)
					FROM ApiTokens WHERE UserId = @user),
				(SELECT COALESCE(SUM(BYTE_LENGTH(COALESCE(TokenId, '')) + BYTE_LENGTH(Description) + BYTE_LENGTH(COALESCE(SecretPrefix, ''))
					+ BYTE_LENGTH(COALESCE(ParentTokenId, '')) + @overhead), 0)
					FROM ApiTokens WHERE UserId = @user),
				(SELECT COALESCE(SUM(BYTE_LENGTH(r.RunName) + @row), 0)
					FROM Experiments e JOIN Runs r ON r.ExperimentId = e.ExperimentId WHERE e.OwnerId = @user AND e.State = @live),
				(SELECT COALESCE(SUM(BYTE_LENGTH(g.UserId) + @row), 0)
					FROM Experiments e JOIN ReadGrants g ON g.ExperimentId = e.ExperimentId WHERE e.OwnerId = @user AND e.State = @live),
				(SELECT COUNT(*)
					FROM Experiments e JOIN PendingGrants p ON p.ExperimentId = e.ExperimentId WHERE e.OwnerId = @user AND e.State = @live),
				(SELECT COALESCE(SUM(BYTE_LENGTH(p.Email) + @row), 0)
					FROM Experiments e JOIN PendingGrants p ON p.ExperimentId = e.ExperimentId WHERE e.OwnerId = @user AND e.State = @live)`,
		Params: map[string]any{"user": userID, "live": stateLive, "row": int64(store.RowOverheadBytes),
			"overhead": int64(store.TokenRecordOverhead)},
	}))
	var pendingBytes int64
	if err == nil {
		err = row.Columns(&u.Tokens, &u.TokenBytes, &u.RunBytes, &u.GrantBytes, &u.PendingGrants, &pendingBytes)
	}
	if err != nil {
		return store.Usage{}, fail("UserUsage", err)
	}
	u.GrantBytes += pendingBytes
	return u, nil
}

func singleRow(it *spanner.RowIterator) (*spanner.Row, error) {
	defer it.Stop()
	row, err := it.Next()
	if errors.Is(err, iterator.Done) {
		return nil, fmt.Errorf("query returned no row")
	}
	return row, err
}

// ListGrantedExperiments implements store.IdentityStore.
func (s *Store) ListGrantedExperiments(ctx context.Context, userID string) ([]string, error) {
	s, release := s.acquire()
	defer release()
	tx := s.client.Single()
	defer tx.Close()
	var ids []string
	it := tx.Query(ctx, spanner.Statement{
		SQL: `SELECT g.ExperimentId FROM ReadGrants@{FORCE_INDEX=ReadGrantsByUser} g
			JOIN Experiments e ON e.ExperimentId = g.ExperimentId
			WHERE g.UserId = @user AND e.State = @live ORDER BY g.ExperimentId`,
		Params: map[string]any{"user": userID, "live": stateLive},
	})
	err := it.Do(func(row *spanner.Row) error {
		var id string
		ids = append(ids, id)
		return row.Columns(&ids[len(ids)-1])
	})
	if err != nil {
		return nil, fail("ListGrantedExperiments", err)
	}
	return ids, nil
}
