package gcsblob

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/blobtest"
)

// server is an in-process fake-gcs-server on a loopback port. The client
// reaches it through STORAGE_EMULATOR_HOST, the same way a deployment
// reaches an emulator.
var (
	server  *fakestorage.Server
	root    string
	client  *storage.Client
	buckets atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The fake serves XML-API downloads (the client's default read path)
	// only when the request's Host is its public host, so that has to be
	// the address it listens on; pick a free port first.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// Objects live in files under root so that Corrupt can damage one
	// behind the server's back while its recorded CRC32C stays.
	root, err = os.MkdirTemp("", "fake-gcs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	server, err = fakestorage.NewServerWithOptions(fakestorage.Options{
		StorageRoot: root,
		Scheme:      "http",
		Host:        "127.0.0.1",
		Port:        uint16(port),
		PublicHost:  fmt.Sprintf("127.0.0.1:%d", port),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting fake-gcs-server:", err)
		return 1
	}
	defer server.Stop()
	os.Setenv("STORAGE_EMULATOR_HOST", server.URL())
	client, err = NewClient(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer client.Close()
	return m.Run()
}

func newStore(prefix string) (*Store, string) {
	name := fmt.Sprintf("bucket-%d", buckets.Add(1))
	server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return New(client, name, Options{Prefix: prefix, ChunkSize: 4 << 20}), name
}

func TestAcceptance(t *testing.T) {
	for _, prefix := range []string{"", "deploy/"} {
		t.Run(fmt.Sprintf("prefix=%q", prefix), func(t *testing.T) {
			bucketOf := map[blob.Store]string{}
			var mu sync.Mutex
			blobtest.Run(t, blobtest.Harness{
				New: func(t *testing.T) blob.Store {
					s, name := newStore(prefix)
					mu.Lock()
					bucketOf[s] = name
					mu.Unlock()
					return s
				},
				Corrupt: func(t *testing.T, s blob.Store, key string) {
					mu.Lock()
					name := bucketOf[s]
					mu.Unlock()
					blobtest.FlipByte(t, filepath.Join(root, name, filepath.FromSlash(prefix+key)), 10)
				},
			})
		})
	}
}

// The benchmarks measure this client against the in-process fake, which
// keeps objects in files; they say nothing about GCS itself.
func BenchmarkPut(b *testing.B) {
	s, _ := newStore("")
	blobtest.BenchmarkPut(b, s)
}

func BenchmarkGet(b *testing.B) {
	s, _ := newStore("")
	blobtest.BenchmarkGet(b, s)
}
