// Package blobtest is the acceptance suite every blob.Store backend passes.
// A backend's test calls Run with a Harness that makes fresh, empty stores.
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
)

// Harness adapts one backend to the suite.
type Harness struct {
	// New returns an empty store; it is called once per subtest.
	New func(t *testing.T) blob.Store
	// Corrupt changes one byte of the stored content of key while keeping
	// the checksum the backend recorded for it, as a disk or bucket fault
	// would.
	Corrupt func(t *testing.T, s blob.Store, key string)
	// MaxStreamAlloc, when positive, bounds the bytes the process may
	// allocate while a 64 MiB object is written and read back, proving the
	// backend streams. Leave it zero for backends whose test server lives in
	// this process and buffers objects itself (fake-gcs-server).
	MaxStreamAlloc uint64
}

// LargeSize is the size of the object streamed by the large-object test.
const LargeSize = 64 << 20

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"NotFound", testNotFound},
		{"Overwrite", testOverwrite},
		{"Generations", testGenerations},
		{"RowReader", testRowReader},
		{"Ranges", testRanges},
		{"DeclaredChecksum", testDeclaredChecksum},
		{"CorruptionDetected", testCorruption},
		{"InvalidKeys", testInvalidKeys},
		{"ListAndDeletePrefix", testListAndDeletePrefix},
		{"ObjectKeys", testObjectKeys},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ContextCancelled", testContextCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
	// Not parallel: the allocation bound must not count other subtests.
	t.Run("Large64MiB", func(t *testing.T) { testLarge(t, h) })
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, blob.CastagnoliTable) }

func put(t *testing.T, s blob.Store, key string, data []byte) blob.Attrs {
	t.Helper()
	a, err := s.Put(t.Context(), key, bytes.NewReader(data), blob.PutOptions{})
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return a
}

func read(t *testing.T, s blob.Store, key string, off, n int64) ([]byte, error) {
	t.Helper()
	r, err := s.NewRangeReader(t.Context(), key, off, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func mustRead(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	b, err := read(t, s, key, 0, -1)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return b
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func testRoundTrip(t *testing.T, h Harness) {
	s := h.New(t)
	for i, n := range []int{0, 1, 4097, 1<<20 + 3} {
		key := fmt.Sprintf("experiments/e1/rt/%d", i)
		data := pattern(n, byte(i))
		a := put(t, s, key, data)
		if a.Key != key || a.Size != int64(n) || a.CRC32C != crcOf(data) {
			t.Errorf("Put(%q) attrs = %+v, want size %d crc %08x", key, a, n, crcOf(data))
		}
		st, err := s.Stat(t.Context(), key)
		if err != nil {
			t.Fatalf("Stat(%q): %v", key, err)
		}
		if st.Key != key || st.Size != int64(n) || st.CRC32C != crcOf(data) {
			t.Errorf("Stat(%q) = %+v, want size %d crc %08x", key, st, n, crcOf(data))
		}
		if got := mustRead(t, s, key); !bytes.Equal(got, data) {
			t.Errorf("read(%q) returned %d bytes differing from the %d written", key, len(got), n)
		}
	}
}

func testNotFound(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := t.Context()
	const key = "experiments/e1/missing"
	if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat(missing) error = %v, want ErrNotFound", err)
	}
	if _, err := read(t, s, key, 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("read(missing) error = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Errorf("Delete(missing) = %v, want nil", err)
	}
	put(t, s, "experiments/e1/dir/file", []byte("x"))
	if _, err := s.Stat(ctx, "experiments/e1/dir"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat(key prefix) error = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "experiments/e1/dir/file"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(ctx, "experiments/e1/dir/file"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after Delete error = %v, want ErrNotFound", err)
	}
}

func testOverwrite(t *testing.T, h Harness) {
	s := h.New(t)
	const key = "experiments/e1/over"
	put(t, s, key, pattern(5000, 1))
	second := pattern(300, 2)
	put(t, s, key, second)
	if got := mustRead(t, s, key); !bytes.Equal(got, second) {
		t.Errorf("after overwrite read %d bytes, want the 300 of the second write", len(got))
	}
}

// Every write gives the object a new generation; a conditional Put or a
// DeleteGeneration that expects another one changes nothing.
func testGenerations(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := t.Context()
	const key = "experiments/e1/gen"
	condPut := func(data []byte, gen int64) (blob.Attrs, error) {
		return s.Put(ctx, key, bytes.NewReader(data), blob.PutOptions{IfGeneration: &gen})
	}
	first, err := condPut(pattern(100, 1), blob.NoObject)
	if err != nil {
		t.Fatalf("Put if no object, on none: %v", err)
	}
	if first.Generation == blob.NoObject {
		t.Fatal("a written object has generation NoObject")
	}
	if st, err := s.Stat(ctx, key); err != nil || st.Generation != first.Generation {
		t.Errorf("Stat = %+v, %v; want generation %d", st, err, first.Generation)
	}
	if _, err := condPut(pattern(50, 2), blob.NoObject); !errors.Is(err, blob.ErrPrecondition) {
		t.Errorf("Put if no object, on one: %v; want ErrPrecondition", err)
	}
	second, err := condPut(pattern(200, 3), first.Generation)
	if err != nil {
		t.Fatalf("Put if at the current generation: %v", err)
	}
	if second.Generation == first.Generation {
		t.Errorf("a rewrite kept generation %d", first.Generation)
	}
	if _, err := condPut(pattern(60, 4), first.Generation); !errors.Is(err, blob.ErrPrecondition) {
		t.Errorf("Put if at a replaced generation: %v; want ErrPrecondition", err)
	}
	if got := mustRead(t, s, key); !bytes.Equal(got, pattern(200, 3)) {
		t.Errorf("after refused writes read %d bytes; want the 200 of the last accepted one", len(got))
	}
	if err := s.DeleteGeneration(ctx, key, first.Generation); err != nil {
		t.Errorf("DeleteGeneration of a replaced generation: %v", err)
	}
	if _, err := s.Stat(ctx, key); err != nil {
		t.Errorf("the object after deleting a replaced generation: %v", err)
	}
	if err := s.DeleteGeneration(ctx, key, second.Generation); err != nil {
		t.Errorf("DeleteGeneration of the current generation: %v", err)
	}
	if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after deleting the current generation: %v; want ErrNotFound", err)
	}
	if err := s.DeleteGeneration(ctx, key, second.Generation); err != nil {
		t.Errorf("DeleteGeneration of a missing object: %v", err)
	}
}

// RowReader checks an object against the size and checksum a row
// recorded, so an object replaced behind the row fails to read.
func testRowReader(t *testing.T, h Harness) {
	s := h.New(t)
	const key = "experiments/e1/row"
	data := pattern(1000, 5)
	put(t, s, key, data)
	readRow := func(size int64, crc uint32) ([]byte, error) {
		r, err := blob.RowReader(t.Context(), s, key, size, crc)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	if got, err := readRow(1000, crcOf(data)); err != nil || !bytes.Equal(got, data) {
		t.Errorf("RowReader with the right row = %d bytes, %v", len(got), err)
	}
	other := pattern(1000, 6)
	put(t, s, key, other)
	if _, err := readRow(1000, crcOf(data)); !errors.Is(err, blob.ErrChecksum) {
		t.Errorf("RowReader of a replaced object: %v; want ErrChecksum", err)
	}
	if _, err := readRow(999, crcOf(other)); !errors.Is(err, blob.ErrChecksum) {
		t.Errorf("RowReader with another size: %v; want ErrChecksum", err)
	}
}

func testRanges(t *testing.T, h Harness) {
	s := h.New(t)
	const key = "experiments/e1/ranges"
	data := pattern(10000, 3)
	put(t, s, key, data)
	for _, tc := range []struct{ off, n int64 }{
		{0, 10}, {0, 10000}, {0, 20000}, {1, -1}, {9999, 1}, {9999, 5}, {5000, 0}, {10000, -1}, {12000, 4}, {4096, 4096},
	} {
		got, err := read(t, s, key, tc.off, tc.n)
		if err != nil {
			t.Errorf("range(%d, %d): %v", tc.off, tc.n, err)
			continue
		}
		lo := min(tc.off, int64(len(data)))
		hi := int64(len(data))
		if tc.n >= 0 {
			hi = min(hi, lo+tc.n)
		}
		if !bytes.Equal(got, data[lo:hi]) {
			t.Errorf("range(%d, %d) = %d bytes, want bytes [%d:%d]", tc.off, tc.n, len(got), lo, hi)
		}
	}
}

func testDeclaredChecksum(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := t.Context()
	const key = "experiments/e1/declared"
	data := pattern(70000, 4)
	good := crcOf(data)
	if _, err := s.Put(ctx, key, bytes.NewReader(data), blob.PutOptions{WantCRC32C: &good}); err != nil {
		t.Fatalf("Put with the right checksum: %v", err)
	}
	bad := good ^ 1
	_, err := s.Put(ctx, key, bytes.NewReader(pattern(70000, 5)), blob.PutOptions{WantCRC32C: &bad})
	if !errors.Is(err, blob.ErrChecksum) {
		t.Fatalf("Put with a wrong checksum error = %v, want ErrChecksum", err)
	}
	if got := mustRead(t, s, key); !bytes.Equal(got, data) {
		t.Errorf("a rejected Put changed the stored object")
	}
	_, err = s.Put(ctx, "experiments/e1/never", bytes.NewReader(data), blob.PutOptions{WantCRC32C: &bad})
	if !errors.Is(err, blob.ErrChecksum) {
		t.Fatalf("Put of a new object with a wrong checksum error = %v, want ErrChecksum", err)
	}
	if _, err := s.Stat(ctx, "experiments/e1/never"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("a rejected Put left an object behind (Stat error = %v)", err)
	}
}

func testCorruption(t *testing.T, h Harness) {
	s := h.New(t)
	const key = "experiments/e1/corrupt"
	data := pattern(100000, 6)
	put(t, s, key, data)
	h.Corrupt(t, s, key)
	if _, err := read(t, s, key, 0, -1); !errors.Is(err, blob.ErrChecksum) {
		t.Errorf("full read of a corrupted object error = %v, want ErrChecksum", err)
	}
}

func testInvalidKeys(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := t.Context()
	for _, key := range []string{
		"", "/etc/passwd", "../outside", "a/../../outside", "a/./b", "a//b", "a/", ".hidden", "a/.tmp/x", "a\\..\\b", "a\x00b",
	} {
		if _, err := s.Put(ctx, key, bytes.NewReader([]byte("x")), blob.PutOptions{}); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Put(%q) error = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Stat(%q) error = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.NewRangeReader(ctx, key, 0, -1); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("NewRangeReader(%q) error = %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Delete(%q) error = %v, want ErrInvalidKey", key, err)
		}
	}
	if err := s.DeletePrefix(ctx, ""); !errors.Is(err, blob.ErrInvalidKey) {
		t.Errorf("DeletePrefix(\"\") error = %v, want ErrInvalidKey", err)
	}
}

func listKeys(t *testing.T, s blob.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(t.Context(), prefix, func(a blob.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	}); err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

func testListAndDeletePrefix(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := t.Context()
	all := []string{
		"experiments/a/1", "experiments/a/2/x", "experiments/a/2/y", "experiments/a-b/1",
		"experiments/ab/1", "experiments/b/1",
	}
	for i, k := range all {
		put(t, s, k, pattern(10+i, byte(i)))
	}
	withPrefix := func(prefix string) []string {
		var keys []string
		for _, k := range all {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys
	}
	for _, prefix := range []string{"experiments/a/", "experiments/a", "experiments/a/2/", "experiments/c/", "nothing", ""} {
		if got, want := listKeys(t, s, prefix), withPrefix(prefix); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
	var sizes []int64
	_ = s.List(ctx, "experiments/b/", func(a blob.Attrs) error {
		sizes = append(sizes, a.Size)
		if a.CRC32C != crcOf(pattern(15, 5)) {
			t.Errorf("List attrs CRC32C = %08x, want %08x", a.CRC32C, crcOf(pattern(15, 5)))
		}
		return nil
	})
	if !slices.Equal(sizes, []int64{15}) {
		t.Errorf("List sizes = %v, want [15]", sizes)
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.List(ctx, "experiments/", func(blob.Attrs) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("List with a failing callback = %v after %d calls, want stop after 1", err, calls)
	}
	if err := s.DeletePrefix(ctx, "experiments/a/"); err != nil {
		t.Fatalf("DeletePrefix: %v", err)
	}
	deleted := withPrefix("experiments/a/")
	remaining := slices.DeleteFunc(withPrefix(""), func(k string) bool { return slices.Contains(deleted, k) })
	if got, want := listKeys(t, s, ""), remaining; !slices.Equal(got, want) {
		t.Errorf("after DeletePrefix(experiments/a/) List = %q, want %q", got, want)
	}
	if err := s.DeletePrefix(ctx, "experiments/zzz/"); err != nil {
		t.Errorf("DeletePrefix of nothing = %v", err)
	}
}

// IssueRunName is the run name of issue 12 (46 characters, 102 bytes) that
// the old layout could not store on a local file system.
const IssueRunName = "实验_学习率0.001_批量大小256_优化器adam_数据增强开启_标签平滑_余弦退火调度"

// HostileNames are run and tag names that object keys must survive: path
// syntax, escapes, spaces, long multi-byte UTF-8 (255 bytes: one file-name
// component's limit on most file systems; 1,024: the writer's limit) and
// emoji. The store suite uses them too.
func HostileNames() []string {
	long := IssueRunName
	for len(long)+len(IssueRunName) <= 1024 {
		long += IssueRunName
	}
	return []string{
		"", "/", "a/b", "/lead/and/trail/", ".", "..", "../x", "./.", "a/../../b",
		"%", "a%2Fb", "100%", "%00", "with space", " ", "tab\tand\nnewline",
		"ünï", "🔥", "🚀 run 🔥/第一", strings.Repeat("😀", 63) + "abc",
		strings.Repeat("学", 85), // 255 bytes
		IssueRunName, long,
	}
}

// testObjectKeys: keys made from hostile names are valid, bounded, distinct,
// independent of the names' length, and name objects the backend stores
// and gives back.
func testObjectKeys(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := t.Context()
	names := HostileNames()
	const eid = "eidAAAAAAAAAAAAAAAAAAA"
	seen := map[string]string{}
	want := map[string][]byte{}
	keyLen := len(blob.ObjectKey(eid, "r", "t", 0, 0))
	for i, run := range names {
		for j, tag := range names {
			key := blob.ObjectKey(eid, run, tag, 0, 0)
			if err := blob.ValidateKey(key); err != nil {
				t.Fatalf("ObjectKey(%q, %q) = %q is invalid: %v", run, tag, key, err)
			}
			if rest := strings.TrimPrefix(key, blob.ExperimentPrefix(eid)); strings.Trim(rest, "losb0123456789acdef/-") != "" {
				t.Fatalf("ObjectKey(%q, %q) = %q holds characters that may need escaping somewhere", run, tag, key)
			}
			if len(key) != keyLen {
				t.Fatalf("ObjectKey(%q, %q) has %d bytes, ObjectKey(r, t) %d: keys grow with names", run, tag, len(key), keyLen)
			}
			if prev, ok := seen[key]; ok {
				t.Fatalf("ObjectKey(%q, %q) = %q collides with %s", run, tag, key, prev)
			}
			seen[key] = fmt.Sprintf("(%q, %q)", run, tag)
			// Every name as a run and as a tag; all pairs would be slow on GCS.
			if i == j || i == 0 || j == 0 {
				want[key] = []byte(run + "\x00" + tag)
			}
		}
	}
	for key, data := range want {
		if _, err := s.Put(ctx, key, bytes.NewReader(data), blob.PutOptions{}); err != nil {
			t.Fatalf("Put(%s of %s): %v", key, seen[key], err)
		}
	}
	for key, data := range want {
		got, err := read(t, s, key, 0, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("read %s of %s = %q, %v; want %q", key, seen[key], got, err, data)
		}
	}
	got := listKeys(t, s, blob.ExperimentPrefix(eid))
	wantKeys := slices.Sorted(maps.Keys(want))
	if !slices.Equal(got, wantKeys) {
		t.Errorf("List(experiment prefix) = %d keys %q, want %d", len(got), got, len(wantKeys))
	}
	if max := blob.ObjectKey(strings.Repeat("E", 64), names[len(names)-1], "t", math.MinInt64, math.MinInt64); len(max) > blob.MaxObjectKeyBytes {
		t.Errorf("ObjectKey with the largest step and index has %d bytes, over MaxObjectKeyBytes (%d)", len(max), blob.MaxObjectKeyBytes)
	}
}

// testConcurrentWriters races writers on one key and on distinct keys while
// readers read the shared key: every read must see one writer's bytes whole.
func testConcurrentWriters(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := t.Context()
	const writers = 8
	const shared = "experiments/e1/shared"
	contents := make([][]byte, writers)
	for i := range contents {
		contents[i] = pattern(200000+i, byte(i))
	}
	put(t, s, shared, contents[0])
	isOneOf := func(b []byte) bool {
		return slices.ContainsFunc(contents, func(c []byte) bool { return bytes.Equal(b, c) })
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*writers)
	for i := range writers {
		wg.Go(func() {
			for range 3 {
				if _, err := s.Put(ctx, shared, bytes.NewReader(contents[i]), blob.PutOptions{}); err != nil {
					errs <- fmt.Errorf("put shared: %w", err)
				}
				own := fmt.Sprintf("experiments/w%d/own", i)
				if _, err := s.Put(ctx, own, bytes.NewReader(contents[i]), blob.PutOptions{}); err != nil {
					errs <- fmt.Errorf("put %s: %w", own, err)
				}
			}
		})
		wg.Go(func() {
			for range 3 {
				b, err := read(t, s, shared, 0, -1)
				if err != nil {
					errs <- fmt.Errorf("read shared during writes: %w", err)
				} else if !isOneOf(b) {
					errs <- fmt.Errorf("read shared during writes: %d bytes that no writer wrote", len(b))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !isOneOf(mustRead(t, s, shared)) {
		t.Errorf("shared object holds bytes no single writer wrote")
	}
	for i := range writers {
		if got := mustRead(t, s, fmt.Sprintf("experiments/w%d/own", i)); !bytes.Equal(got, contents[i]) {
			t.Errorf("writer %d's own object is wrong", i)
		}
	}
}

func testContextCancelled(t *testing.T, h Harness) {
	s := h.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	r := &generator{n: 8 << 20, onRead: func(done int64) {
		if done > 1<<20 {
			cancel()
		}
	}}
	if _, err := s.Put(ctx, "experiments/e1/cancelled", r, blob.PutOptions{}); err == nil {
		t.Fatalf("Put with a context cancelled mid-stream succeeded")
	}
	if _, err := s.Stat(t.Context(), "experiments/e1/cancelled"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("a cancelled Put left an object (Stat error = %v)", err)
	}
}

// generator streams n deterministic pseudo-random bytes without storing them.
type generator struct {
	n, done int64
	x       uint32
	onRead  func(done int64)
}

func (g *generator) Read(p []byte) (int, error) {
	if g.done >= g.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.n-g.done)]
	for i := range p {
		g.x = g.x*1664525 + 1013904223
		p[i] = byte(g.x >> 24)
	}
	g.done += int64(len(p))
	if g.onRead != nil {
		g.onRead(g.done)
	}
	return len(p), nil
}

func testLarge(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("-short: the 64 MiB object is the slow tier")
	}
	s := h.New(t)
	ctx := t.Context()
	const key = "experiments/e1/large"
	want := crc32.New(blob.CastagnoliTable)
	if _, err := io.Copy(want, &generator{n: LargeSize}); err != nil {
		t.Fatal(err)
	}
	wantCRC := want.Sum32()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := s.Put(ctx, key, &generator{n: LargeSize}, blob.PutOptions{WantCRC32C: &wantCRC})
	if err != nil {
		t.Fatalf("Put 64 MiB: %v", err)
	}
	if a.Size != LargeSize || a.CRC32C != wantCRC {
		t.Errorf("Put attrs = %+v, want size %d crc %08x", a, LargeSize, wantCRC)
	}
	r, err := s.NewRangeReader(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got := crc32.New(blob.CastagnoliTable)
	n, err := io.Copy(got, r)
	r.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != LargeSize || got.Sum32() != wantCRC {
		t.Errorf("streamed read = %d bytes crc %08x err %v, want %d bytes crc %08x", n, got.Sum32(), err, LargeSize, wantCRC)
	}
	if h.MaxStreamAlloc > 0 {
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > h.MaxStreamAlloc {
			t.Errorf("writing and reading 64 MiB allocated %d bytes, want at most %d (not streaming?)", alloc, h.MaxStreamAlloc)
		}
	}

	// A range in the middle matches the generator's bytes there.
	const off, length = 40<<20 + 7, 1 << 20
	g := &generator{n: off + length}
	if _, err := io.CopyN(io.Discard, g, off); err != nil {
		t.Fatal(err)
	}
	wantRange, _ := io.ReadAll(g)
	gotRange, err := read(t, s, key, off, length)
	if err != nil || !bytes.Equal(gotRange, wantRange) {
		t.Errorf("range read in the middle of 64 MiB: %d bytes, err %v; want the %d generated bytes", len(gotRange), err, len(wantRange))
	}
}

// FlipByte damages the file at path by inverting one bit of the byte at
// offset; backends whose objects are files use it to implement Corrupt.
func FlipByte(t *testing.T, path string, offset int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, offset); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
}

// benchObjectSize is the object size of the throughput benchmarks.
const benchObjectSize = 16 << 20

// cycleReader streams n bytes by repeating buf, so benchmarks measure the
// store, not a generator.
type cycleReader struct {
	buf  []byte
	n, i int64
}

func (c *cycleReader) Read(p []byte) (int, error) {
	if c.i >= c.n {
		return 0, io.EOF
	}
	off := c.i % int64(len(c.buf))
	m := copy(p[:min(int64(len(p)), c.n-c.i)], c.buf[off:])
	c.i += int64(m)
	return m, nil
}

// BenchmarkPut writes 16 MiB objects to s; with b.SetBytes, go test
// reports the write throughput in MB/s.
func BenchmarkPut(b *testing.B, s blob.Store) {
	buf := pattern(1<<20, 42)
	b.SetBytes(benchObjectSize)
	i := 0
	for b.Loop() {
		key := fmt.Sprintf("experiments/bench/put/%d", i%4)
		if _, err := s.Put(b.Context(), key, &cycleReader{buf: buf, n: benchObjectSize}, blob.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkGet reads a 16 MiB object from s in full (checksum verified);
// go test reports the read throughput in MB/s.
func BenchmarkGet(b *testing.B, s blob.Store) {
	const key = "experiments/bench/get"
	if _, err := s.Put(b.Context(), key, &cycleReader{buf: pattern(1<<20, 43), n: benchObjectSize}, blob.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchObjectSize)
	for b.Loop() {
		r, err := s.NewRangeReader(b.Context(), key, 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, r)
		r.Close()
		if err != nil || n != benchObjectSize {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
}
