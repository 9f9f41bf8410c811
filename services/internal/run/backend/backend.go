// Package backend opens the storage a tbhub process runs on, from the
// command line's description of it: the embedded store (SQLite and a blob
// folder in one data directory) or Cloud Spanner and Cloud Storage (their
// emulators when SPANNER_EMULATOR_HOST / STORAGE_EMULATOR_HOST are set;
// the client libraries read those variables themselves).
package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cloud.google.com/go/spanner"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/fileblob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/gcsblob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/storage/store/sqlitestore"
)

// Spec says where the data is: DataDir for the embedded store, or Store
// ("spanner://projects/P/instances/I/databases/D") and Blobs
// ("gs://BUCKET[/PREFIX]") for the cloud one.
type Spec struct {
	DataDir string
	Store   string
	Blobs   string
	// SpannerEmulator says Store is on the Cloud Spanner emulator (the
	// command wiring sets it when SPANNER_EMULATOR_HOST is), which runs one
	// transaction per session at a time: the store gets several clients
	// (spannerstore.Options.SessionClients).
	SpannerEmulator bool
	// LockDataDir: the process serves DataDir, and locks it so that no
	// other server can open it at once (commands that open the store
	// briefly, like token create, do not).
	LockDataDir bool
	// MaxUploadBufferBytes bounds the memory the process's blob uploads
	// to GCS buffer at once (gcsblob.Options.MaxBufferBytes);
	// DefaultMaxUploadBufferBytes if zero, unbounded if negative. The
	// embedded store buffers nothing and ignores it.
	MaxUploadBufferBytes int64
	// MaxBucketedPoints bounds the points a bucketed read reads on Spanner
	// (spannerstore.Options.MaxBucketedPoints; 0: its default).
	MaxBucketedPoints int64
}

// DefaultMaxUploadBufferBytes is Spec.MaxUploadBufferBytes's default: a
// quarter of a 1 GiB Cloud Run instance, sixteen uploads of full 16 MiB
// chunks or a thousand small blobs at once.
const DefaultMaxUploadBufferBytes = 256 << 20

// Backend is an open store and blob store.
type Backend struct {
	Store store.Store
	Blobs blob.Store
	// Description says where the data lives, for the startup banner.
	Description string
	close       []func() error
}

// Close releases the backend.
func (b *Backend) Close() error {
	var errs []error
	for i := len(b.close) - 1; i >= 0; i-- {
		errs = append(errs, b.close[i]())
	}
	return errors.Join(errs...)
}

// Validate checks that spec names exactly one backend.
func (s Spec) Validate() error {
	switch {
	case s.Store != "" && s.DataDir != "":
		return fmt.Errorf("use --data or --store, not both")
	case s.Store != "" && s.Blobs == "":
		return fmt.Errorf("--store needs --blobs gs://BUCKET[/PREFIX]")
	case s.Store == "" && s.Blobs != "":
		return fmt.Errorf("--blobs goes with --store")
	case s.Store == "" && s.DataDir == "":
		return fmt.Errorf("no data directory")
	}
	return nil
}

// SpannerDatabase parses a --store URL into a database name.
func SpannerDatabase(u string) (string, error) {
	db, ok := strings.CutPrefix(u, "spanner://")
	parts := strings.Split(db, "/")
	if !ok || len(parts) != 6 || parts[0] != "projects" || parts[2] != "instances" || parts[4] != "databases" ||
		parts[1] == "" || parts[3] == "" || parts[5] == "" {
		return "", fmt.Errorf("--store %q: want spanner://projects/P/instances/I/databases/D", u)
	}
	return db, nil
}

// parseGCS splits gs://BUCKET[/PREFIX] into the bucket and a prefix that
// is empty or ends in a slash.
func parseGCS(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "gs://")
	bucket, prefix, _ = strings.Cut(rest, "/")
	if !ok || bucket == "" {
		return "", "", fmt.Errorf("--blobs %q: want gs://BUCKET[/PREFIX]", u)
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return bucket, prefix, nil
}

// Open opens the backend spec describes, creating the data directory and
// migrating the embedded schema as needed. A Spanner database must have
// been migrated (`tbhub migrate --store ...`).
func Open(ctx context.Context, spec Spec) (*Backend, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Store == "" {
		return openEmbedded(ctx, spec.DataDir, spec.LockDataDir)
	}
	return openCloud(ctx, spec)
}

// lockFile is the file in a data directory whose lock (lockDataDir) a
// server holds.
const lockFile = "tbhub.lock"

// openEmbedded opens the store in dir, locked for this process if lock.
// It refuses a database that knows no experiment next to a blob folder
// holding objects: the database was lost (deleted, emptied), and a new
// one would orphan the objects silently.
func openEmbedded(ctx context.Context, dir string, lock bool) (_ *Backend, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("backend: data directory: %w", err)
	}
	b := &Backend{Description: "embedded store in " + dir}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if lock {
		unlock, err := lockDataDir(dir)
		if err != nil {
			return nil, err
		}
		b.close = append(b.close, unlock)
	}
	dbFile, blobDir := filepath.Join(dir, sqlitestore.DefaultFile), filepath.Join(dir, "blobs")
	st, err := sqlitestore.Open(ctx, dbFile, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	b.close = append(b.close, st.Close)
	blobs, err := fileblob.Open(blobDir)
	if err != nil {
		return nil, err
	}
	b.close = append(b.close, blobs.Close)
	hasExperiments, err := st.HasExperiments(ctx)
	if err != nil {
		return nil, err
	}
	if !hasExperiments {
		if hasObjects, err := blobs.HasObjects(); err != nil {
			return nil, err
		} else if hasObjects {
			return nil, fmt.Errorf("the blob folder %s holds data, but the database %s knows no experiment (it was deleted, emptied or replaced): "+
				"starting would orphan that data. Stop here and restore %s (with its -wal file, if any) from a backup; "+
				"or, to start an empty store and keep the old blobs aside, move %s away", blobDir, dbFile, sqlitestore.DefaultFile, blobDir)
		}
	}
	b.Store, b.Blobs = st, blobs
	return b, nil
}

// uploadBuffers is gcsblob.Options.MaxBufferBytes for Spec's value.
func uploadBuffers(n int64) int64 {
	switch {
	case n == 0:
		return DefaultMaxUploadBufferBytes
	case n < 0:
		return 0
	}
	return n
}

// emulatorSessions is how many store calls a process runs at once on the
// Spanner emulator: one. The emulator keeps one read-write transaction at a
// time and can stay stuck behind one a client abandoned
// (GoogleCloudPlatform/cloud-spanner-emulator#137): an upload with four
// calls at once hung a CI run. Processes sharing one emulator still run
// concurrently; the store's concurrent path is tested by its conformance
// suite (spanneremu.Database.ConcurrentStore).
const emulatorSessions = 1

func openCloud(ctx context.Context, spec Spec) (*Backend, error) {
	db, err := SpannerDatabase(spec.Store)
	if err != nil {
		return nil, err
	}
	bucket, prefix, err := parseGCS(spec.Blobs)
	if err != nil {
		return nil, err
	}
	client, err := spanner.NewClient(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("backend: spanner client: %w", err)
	}
	clients := []*spanner.Client{client}
	closeClients := func() error {
		for _, c := range clients {
			c.Close()
		}
		return nil
	}
	opts := spannerstore.Options{MaxBucketedPoints: spec.MaxBucketedPoints}
	if spec.SpannerEmulator {
		// The emulator runs one transaction per session at a time and
		// each client has one session (see Options.SessionClients).
		for range emulatorSessions - 1 {
			c, err := spanner.NewClient(ctx, db)
			if err != nil {
				closeClients()
				return nil, fmt.Errorf("backend: spanner client: %w", err)
			}
			clients = append(clients, c)
		}
		opts.SessionClients = clients[1:]
	}
	st := spannerstore.New(client, opts)
	gcs, err := gcsblob.NewClient(ctx)
	if err != nil {
		closeClients()
		return nil, err
	}
	return &Backend{
		Store: st, Blobs: gcsblob.New(gcs, bucket, gcsblob.Options{Prefix: prefix, MaxBufferBytes: uploadBuffers(spec.MaxUploadBufferBytes)}),
		Description: fmt.Sprintf("Cloud Spanner %s, blobs in gs://%s/%s", db, bucket, prefix),
		close:       []func() error{closeClients, gcs.Close},
	}, nil
}
