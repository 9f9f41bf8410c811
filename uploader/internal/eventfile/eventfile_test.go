package eventfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
	"testing/iotest"
)

// frame builds one TFRecord record around data.
func frame(data []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint32(b, MaskedCRC32C(b[:8]))
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, MaskedCRC32C(data))
}

func TestMaskedCRC32CVectors(t *testing.T) {
	// TensorBoard's test vector: the Event {file_version: "CRC test, one two"}.
	data := append([]byte{0x1a, 0x11}, "CRC test, one two"...)
	if got := MaskedCRC32C(data); got != 0x5794d08a {
		t.Errorf("masked crc = %#x, want 0x5794d08a", got)
	}
	// RFC 3720: CRC-32C of 32 zero bytes.
	if got := crc32.Checksum(make([]byte, 32), castagnoli); got != 0x8a9136aa {
		t.Errorf("crc32c(zeros) = %#x, want 0x8a9136aa", got)
	}
}

func readAll(t *testing.T, r *Reader) (recs []Record, errs []error) {
	t.Helper()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, errs
		}
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, ErrBadDataCRC) || errors.Is(err, ErrTooLarge) {
				continue
			}
			return recs, errs
		}
		rec.Data = append([]byte(nil), rec.Data...)
		recs = append(recs, rec)
	}
}

func TestReadsRecordsWithOffsets(t *testing.T) {
	payloads := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte("xyz"), 100000), []byte("last")}
	var file []byte
	var offsets []int64
	for _, p := range payloads {
		offsets = append(offsets, int64(len(file)))
		file = append(file, frame(p)...)
	}
	// A tiny buffer and one-byte reads exercise every refill and growth path.
	for _, tc := range []struct {
		name string
		r    io.Reader
		opts []Option
	}{
		{"plain", bytes.NewReader(file), nil},
		{"one-byte reads, small buffer", iotest.OneByteReader(bytes.NewReader(file)), []Option{WithBufferSize(16)}},
		{"half reads", iotest.HalfReader(bytes.NewReader(file)), []Option{WithBufferSize(64)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, errs := readAll(t, NewReader(tc.r, 0, tc.opts...))
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if len(recs) != len(payloads) {
				t.Fatalf("got %d records, want %d", len(recs), len(payloads))
			}
			for i, rec := range recs {
				if !bytes.Equal(rec.Data, payloads[i]) || rec.Offset != offsets[i] {
					t.Errorf("record %d: offset %d (want %d), %d bytes (want %d)", i, rec.Offset, offsets[i], len(rec.Data), len(payloads[i]))
				}
				wantNext := int64(len(file))
				if i+1 < len(offsets) {
					wantNext = offsets[i+1]
				}
				if rec.Next != wantNext {
					t.Errorf("record %d: next %d, want %d", i, rec.Next, wantNext)
				}
			}
		})
	}
	// Resuming from any record's offset yields the rest.
	for i, off := range offsets {
		recs, errs := readAll(t, NewReader(bytes.NewReader(file[off:]), off))
		if len(errs) > 0 || len(recs) != len(payloads)-i || recs[0].Offset != off {
			t.Errorf("resume at %d: %d records, errors %v", off, len(recs), errs)
		}
	}
}

// TestTruncatedIsNotWrittenYet cuts a file at every byte: the complete records come
// back, the cut one is ErrTruncated at its own offset, and appending the rest later
// and resuming from that offset recovers everything.
func TestTruncatedIsNotWrittenYet(t *testing.T) {
	file := append(frame([]byte("first record")), frame([]byte("second"))...)
	first := len(frame([]byte("first record")))
	for cut := 0; cut < len(file); cut++ {
		r := NewReader(bytes.NewReader(file[:cut]), 0)
		recs, errs := readAll(t, r)
		wantRecs := 0
		if cut >= first {
			wantRecs = 1
		}
		if len(recs) != wantRecs {
			t.Fatalf("cut %d: %d records, want %d", cut, len(recs), wantRecs)
		}
		resumeAt := int64(0)
		if wantRecs == 1 {
			resumeAt = int64(first)
		}
		switch {
		case cut == 0 || cut == first:
			if len(errs) != 0 {
				t.Fatalf("cut %d at a boundary: errors %v", cut, errs)
			}
		case len(errs) != 1 || !errors.Is(errs[0], ErrTruncated):
			t.Fatalf("cut %d: errors %v, want ErrTruncated", cut, errs)
		}
		if r.Offset() != resumeAt {
			t.Fatalf("cut %d: offset %d, want %d", cut, r.Offset(), resumeAt)
		}
		rest, errs := readAll(t, NewReader(bytes.NewReader(file[resumeAt:]), resumeAt))
		if len(errs) > 0 || len(rest)+wantRecs != 2 {
			t.Fatalf("cut %d: resume got %d records, errors %v", cut, len(rest), errs)
		}
	}
}

func TestCorruption(t *testing.T) {
	good := frame([]byte("good"))
	badData := frame([]byte("data"))
	badData[len(badData)-1] ^= 0xff
	badLen := frame([]byte("len"))
	badLen[8] ^= 0xff

	recs, errs := readAll(t, NewReader(bytes.NewReader(concat(good, badData, good)), 0))
	if len(recs) != 2 || len(errs) != 1 || !errors.Is(errs[0], ErrBadDataCRC) {
		t.Errorf("bad data crc: %d records, errors %v; want the record skipped and reading on", len(recs), errs)
	}
	r := NewReader(bytes.NewReader(concat(good, badLen, good)), 0)
	recs, errs = readAll(t, r)
	if len(recs) != 1 || len(errs) != 1 || !errors.Is(errs[0], ErrBadLengthCRC) {
		t.Errorf("bad length crc: %d records, errors %v; want reading to stop", len(recs), errs)
	}
	if _, err := r.Next(); !errors.Is(err, ErrBadLengthCRC) {
		t.Errorf("after a bad length crc, Next = %v; want the same error again", err)
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestHostileLength: a valid header announcing 1 TiB on a tiny input must not
// allocate; it is simply not written (yet).
func TestHostileLength(t *testing.T) {
	var hdr []byte
	hdr = binary.LittleEndian.AppendUint64(hdr, 1<<40)
	hdr = binary.LittleEndian.AppendUint32(hdr, MaskedCRC32C(hdr[:8]))
	hdr = append(hdr, "tiny"...)
	allocs := testing.AllocsPerRun(10, func() {
		r := NewReader(bytes.NewReader(hdr), 0, WithBufferSize(64), WithMaxRecordSize(1<<41))
		if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
			t.Fatalf("err = %v, want ErrTruncated", err)
		}
	})
	if allocs > 10 {
		t.Errorf("%v allocations for a hostile length", allocs)
	}
	// Growth follows the bytes that really arrive: a 1 MiB body with a 3 GiB length
	// never grows the buffer past about twice what was read.
	var big []byte
	big = binary.LittleEndian.AppendUint64(big, 3<<30)
	big = binary.LittleEndian.AppendUint32(big, MaskedCRC32C(big[:8]))
	big = append(big, make([]byte, 1<<20)...)
	r := NewReader(bytes.NewReader(big), 0, WithMaxRecordSize(4<<30))
	if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	if len(r.buf) > 3<<20 {
		t.Errorf("buffer grew to %d bytes for 1 MiB of input", len(r.buf))
	}
}

func TestTooLargeIsSkipped(t *testing.T) {
	small, huge := frame([]byte("ok")), frame(bytes.Repeat([]byte{7}, 5000))
	for _, bufSize := range []int{16, 100, 1 << 16} {
		recs, errs := readAll(t, NewReader(iotest.HalfReader(bytes.NewReader(concat(small, huge, small))), 0, WithMaxRecordSize(1000), WithBufferSize(bufSize)))
		if len(recs) != 2 || len(errs) != 1 || !errors.Is(errs[0], ErrTooLarge) {
			t.Errorf("buffer %d: %d records, errors %v; want the big one skipped", bufSize, len(recs), errs)
		}
		if len(recs) == 2 && recs[1].Offset != int64(len(small)+len(huge)) {
			t.Errorf("buffer %d: record after the skipped one at %d", bufSize, recs[1].Offset)
		}
	}
	// Cut inside the oversized record: not written yet, not an error.
	_, errs := readAll(t, NewReader(bytes.NewReader(concat(small, huge[:3000])), 0, WithMaxRecordSize(1000), WithBufferSize(64)))
	if len(errs) != 1 || !errors.Is(errs[0], ErrTruncated) {
		t.Errorf("cut oversized record: errors %v, want ErrTruncated", errs)
	}
}

func FuzzReader(f *testing.F) {
	f.Add(frame([]byte("hello")), 16)
	f.Add(concat(frame([]byte("a")), frame([]byte("bc"))[:7]), 64)
	f.Add(concat(frame(nil), frame(bytes.Repeat([]byte{1}, 300))), 1<<10)
	f.Fuzz(func(t *testing.T, data []byte, bufSize int) {
		if bufSize < 0 {
			bufSize = -bufSize
		}
		r := NewReader(iotest.HalfReader(bytes.NewReader(data)), 0, WithBufferSize(bufSize%4096), WithMaxRecordSize(1<<12))
		last := int64(0)
		for i := 0; i < len(data)+1; i++ {
			rec, err := r.Next()
			if err == io.EOF || errors.Is(err, ErrTruncated) || errors.Is(err, ErrBadLengthCRC) {
				if rec.Offset != last {
					t.Fatalf("stopped at %d, but the last record ended at %d", rec.Offset, last)
				}
				return
			}
			if rec.Offset != last || rec.Next <= rec.Offset || rec.Next > int64(len(data)) {
				t.Fatalf("record at %d..%d after %d (input %d bytes)", rec.Offset, rec.Next, last, len(data))
			}
			if err == nil && (rec.Next-rec.Offset != int64(len(rec.Data))+headerLen+footerLen ||
				!bytes.Equal(rec.Data, data[rec.Offset+headerLen:rec.Next-footerLen])) {
				t.Fatalf("record data does not match the input at %d", rec.Offset)
			}
			last = rec.Next
		}
		t.Fatal("more records than bytes")
	})
}
