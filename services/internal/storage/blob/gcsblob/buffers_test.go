package gcsblob

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
)

// A Put buffers a chunk of the blob's announced size, rounded up to the
// API's 256 KiB, never more than the configured chunk: a small image
// holds 256 KiB, not the client's default 16 MiB.
func TestChunkSizeFitsTheBlob(t *testing.T) {
	for _, tc := range []struct {
		configured int
		announced  int64
		want       int
	}{
		{0, 0, 16 << 20},            // unknown size: the default
		{0, 100, 256 << 10},         // a small blob: one quantum
		{0, 256 << 10, 256 << 10},   // exactly one quantum
		{0, 256<<10 + 1, 512 << 10}, // just over: two
		{0, 40 << 20, 16 << 20},     // larger than a chunk: the chunk
		{4 << 20, 3<<20 + 5, 3<<20 + 256<<10},
		{4 << 20, 5 << 20, 4 << 20},
	} {
		if got := chunkSize(tc.configured, tc.announced); got != tc.want {
			t.Errorf("chunkSize(%d, %d) = %d, want %d", tc.configured, tc.announced, got, tc.want)
		}
	}
}

// signalReader passes r on and closes started at its first read: by then
// the Put it feeds holds its buffer.
type signalReader struct {
	r       io.Reader
	started chan struct{}
	once    bool
}

func (s *signalReader) Read(p []byte) (int, error) {
	if !s.once {
		s.once = true
		close(s.started)
	}
	return s.r.Read(p)
}

// The buffers of the Puts in progress never pass MaxBufferBytes: while
// one Put holds all of it, another is refused with ErrBusy (which the RPC
// edge answers RESOURCE_EXHAUSTED) and stores nothing; once the first
// ends, it goes through.
func TestUploadBuffersBounded(t *testing.T) {
	name := fmt.Sprintf("bucket-%d", buckets.Add(1))
	server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	s := New(client, name, Options{ChunkSize: 1 << 20, MaxBufferBytes: 1 << 20})
	ctx := t.Context()

	big := bytes.Repeat([]byte{7}, 1<<20)
	pr, pw := io.Pipe()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := s.Put(ctx, "experiments/e/big", &signalReader{r: pr, started: started}, blob.PutOptions{Size: int64(len(big))})
		done <- err
	}()
	<-started
	small := []byte("small")
	_, err := s.Put(ctx, "experiments/e/small", bytes.NewReader(small), blob.PutOptions{Size: int64(len(small))})
	if !errors.Is(err, blob.ErrBusy) {
		t.Fatalf("a Put while the buffers are all in use: %v; want ErrBusy", err)
	}
	if _, err := s.Stat(ctx, "experiments/e/small"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("the refused object: %v; want none stored", err)
	}
	if _, err := pw.Write(big); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("the first Put: %v", err)
	}
	if _, err := s.Put(ctx, "experiments/e/small", bytes.NewReader(small), blob.PutOptions{Size: int64(len(small))}); err != nil {
		t.Errorf("a Put once the buffers are free: %v", err)
	}
}
