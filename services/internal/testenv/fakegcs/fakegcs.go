// Package fakegcs runs fake-gcs-server in a test process the way a
// deployment meets its emulator: listening on a loopback port, reached by
// the Go client through STORAGE_EMULATOR_HOST, downloads served through
// the XML API.
package fakegcs

import (
	"fmt"
	"net"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Start runs fake-gcs-server with one bucket, objects kept in a temporary
// folder, until the test ends, and sets STORAGE_EMULATOR_HOST to it for
// the test (so the test must not be parallel). Clients made afterwards
// (gcsblob.NewClient) use it.
func Start(t testing.TB, bucket string) {
	t.Helper()
	// The fake serves XML-API downloads only when the request's Host is
	// its public host, so that must be the address it listens on: pick a
	// free port first.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		StorageRoot: t.TempDir(), Scheme: "http", Host: "127.0.0.1", Port: uint16(port),
		PublicHost: fmt.Sprintf("127.0.0.1:%d", port),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	t.Setenv("STORAGE_EMULATOR_HOST", srv.URL())
}
