package logdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

// GCS is a logdir in a Cloud Storage bucket. Directories are the "/"-separated
// prefixes of object names. STORAGE_EMULATOR_HOST points the client at an emulator.
type GCS struct {
	client *storage.Client
	bucket string
	prefix string // without a trailing slash; "" for the whole bucket
}

func openGCS(ctx context.Context, url string) (*GCS, error) {
	bucket, prefix, err := ParseGCSURL(url)
	if err != nil {
		return nil, err
	}
	// JSON-API reads work the same against GCS and its emulators (fake-gcs-server
	// serves XML-API reads only for its configured public host).
	client, err := storage.NewClient(ctx, storage.WithJSONReads())
	if err != nil {
		return nil, fmt.Errorf("gcs client: %w", err)
	}
	return NewGCS(client, bucket, prefix), nil
}

// NewGCS reads the logdir at gs://bucket/prefix through client.
func NewGCS(client *storage.Client, bucket, prefix string) *GCS {
	return &GCS{client: client, bucket: bucket, prefix: strings.Trim(prefix, "/")}
}

// ParseGCSURL splits gs://bucket/prefix.
func ParseGCSURL(url string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(url, "gs://")
	if !ok {
		return "", "", fmt.Errorf("not a gs:// URL: %q", url)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("no bucket in %q", url)
	}
	return bucket, strings.Trim(prefix, "/"), nil
}

func (g *GCS) String() string {
	if g.prefix == "" {
		return "gs://" + g.bucket
	}
	return "gs://" + g.bucket + "/" + g.prefix
}

// Scan lists every object under the prefix once.
func (g *GCS) Scan(ctx context.Context) ([]Run, error) {
	q := &storage.Query{}
	if g.prefix != "" {
		q.Prefix = g.prefix + "/"
	}
	if err := q.SetAttrSelection([]string{"Name", "Size"}); err != nil {
		return nil, err
	}
	byDir := map[string][]File{}
	it := g.client.Bucket(g.bucket).Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			if errors.Is(err, storage.ErrBucketNotExist) {
				return nil, fmt.Errorf("%w: %s", ErrNotFound, g)
			}
			return nil, fmt.Errorf("listing %s: %w", g, err)
		}
		rel := strings.TrimPrefix(attrs.Name, q.Prefix)
		if rel == "" || strings.HasSuffix(rel, "/") {
			continue // directory placeholder
		}
		base := path.Base(rel)
		if !IsEventFile(base) {
			continue
		}
		dir := runName(path.Dir(rel))
		byDir[dir] = append(byDir[dir], File{Name: base, Path: attrs.Name, Size: attrs.Size})
	}
	runs := make([]Run, 0, len(byDir))
	for name, files := range byDir {
		runs = append(runs, Run{Name: name, Files: files})
	}
	return sortRuns(runs), nil
}

// Open reads an object from offset. At the object's end it reads nothing,
// as a local file does (GCS itself answers 416 to that range).
func (g *GCS) Open(ctx context.Context, name string, offset int64) (io.ReadCloser, error) {
	obj := g.client.Bucket(g.bucket).Object(name)
	rc, err := obj.NewRangeReader(ctx, offset, -1)
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && gerr.Code == http.StatusRequestedRangeNotSatisfiable {
		if attrs, aerr := obj.Attrs(ctx); aerr == nil && attrs.Size == offset {
			return io.NopCloser(strings.NewReader("")), nil
		}
	}
	return rc, err
}

// Stat returns an object's size.
func (g *GCS) Stat(ctx context.Context, name string) (int64, error) {
	attrs, err := g.client.Bucket(g.bucket).Object(name).Attrs(ctx)
	if err != nil {
		return 0, err
	}
	return attrs.Size, nil
}
