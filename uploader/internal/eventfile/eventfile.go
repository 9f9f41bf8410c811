// Package eventfile reads the TFRecord framing of TensorFlow event files.
//
// A record is a little-endian uint64 length, the masked CRC32C of those 8 bytes,
// the data, and the masked CRC32C of the data. The Reader streams records from
// any byte offset with a bounded buffer and reports, for each record, where it
// starts and where the next one starts, so a later read can resume exactly there.
//
// Event files grow while a job writes them: a record cut short at the end of the
// input is reported as ErrTruncated ("not written yet"), and reading can be tried
// again later from the record's offset. A length field is never trusted for
// allocation: the buffer grows only as bytes actually arrive, and records over
// the configured cap are skipped and reported.
package eventfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

const (
	headerLen = 12 // u64 length + u32 masked CRC of the length
	footerLen = 4  // u32 masked CRC of the data

	// DefaultMaxRecordSize bounds one record's data. TensorBoard itself refuses
	// graphs over 10 MiB for upload; 256 MiB leaves room for big local graphs
	// while keeping a corrupt or hostile length from costing gigabytes.
	DefaultMaxRecordSize = 256 << 20

	defaultBufferSize = 256 << 10
)

// Errors returned by Reader.Next. Each leaves the reader in a defined state; see Next.
var (
	ErrTruncated    = errors.New("truncated record")
	ErrBadLengthCRC = errors.New("bad length crc")
	ErrBadDataCRC   = errors.New("bad data crc")
	ErrTooLarge     = errors.New("record too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC32C is TFRecord's checksum: CRC-32C rotated right by 15 bits plus a constant,
// so that a CRC of data that itself contains CRCs does not degenerate.
func MaskedCRC32C(b []byte) uint32 {
	return mask(crc32.Checksum(b, castagnoli))
}

func mask(c uint32) uint32 { return ((c >> 15) | (c << 17)) + 0xa282ead8 }

// Record is one framed record.
type Record struct {
	Offset int64  // byte offset of the record's header in the file
	Next   int64  // byte offset just past the record
	Data   []byte // the payload; valid until the next call to Next
}

// Reader reads records from a stream positioned at a known file offset.
type Reader struct {
	r         io.Reader
	buf       []byte
	start     int   // first unread byte in buf
	end       int   // end of valid bytes in buf
	off       int64 // file offset of buf[start]
	eof       bool
	readErr   error
	fatal     error // set after a bad length CRC: the rest of the file cannot be framed
	maxRecord int
}

// Option configures a Reader.
type Option func(*Reader)

// WithMaxRecordSize sets the largest record payload read into memory.
func WithMaxRecordSize(n int) Option { return func(r *Reader) { r.maxRecord = n } }

// WithBufferSize sets the initial read buffer size.
func WithBufferSize(n int) Option {
	return func(r *Reader) {
		if n >= headerLen+footerLen {
			r.buf = make([]byte, n)
		}
	}
}

// WithBuffer makes the reader use buf (e.g. one a previous Reader returned from Buffer)
// instead of allocating its own.
func WithBuffer(buf []byte) Option {
	return func(r *Reader) {
		if len(buf) >= headerLen+footerLen {
			r.buf = buf
		}
	}
}

// Buffer returns the reader's buffer, possibly grown, for reuse by the next Reader.
func (r *Reader) Buffer() []byte { return r.buf }

// NewReader reads records from r, whose first byte is at file offset offset.
func NewReader(r io.Reader, offset int64, opts ...Option) *Reader {
	rd := &Reader{r: r, off: offset, maxRecord: DefaultMaxRecordSize}
	for _, o := range opts {
		o(rd)
	}
	if rd.buf == nil {
		rd.buf = make([]byte, defaultBufferSize)
	}
	return rd
}

// Offset is the file offset of the next unread byte: where a new Reader should start
// to resume after the records returned so far.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next record.
//
//   - io.EOF: the input ended exactly at a record boundary.
//   - ErrTruncated: the input ends inside the record at rec.Offset; nothing was consumed,
//     so reading again later (from rec.Offset) picks the record up once it is complete.
//   - ErrBadLengthCRC: the length of the record at rec.Offset is corrupt; records cannot be
//     framed past it, and every later call returns the same error.
//   - ErrBadDataCRC: the record at rec.Offset was skipped; rec.Next is where reading goes on.
//   - ErrTooLarge: the record at rec.Offset exceeds the size cap and was skipped unread.
//   - any other error comes from the underlying reader.
func (r *Reader) Next() (Record, error) {
	if r.fatal != nil {
		return Record{Offset: r.off}, r.fatal
	}
	rec := Record{Offset: r.off}
	if err := r.fill(headerLen); err != nil {
		if err == io.EOF && r.end == r.start {
			return rec, io.EOF
		}
		return rec, r.truncatedOr(err)
	}
	hdr := r.buf[r.start : r.start+headerLen]
	length := binary.LittleEndian.Uint64(hdr[:8])
	if mask(crc32.Checksum(hdr[:8], castagnoli)) != binary.LittleEndian.Uint32(hdr[8:12]) {
		r.fatal = ErrBadLengthCRC
		return rec, ErrBadLengthCRC
	}
	if length > uint64(r.maxRecord) {
		return r.skipLarge(rec, length)
	}
	total := headerLen + int(length) + footerLen
	if err := r.fill(total); err != nil {
		return rec, r.truncatedOr(err)
	}
	data := r.buf[r.start+headerLen : r.start+headerLen+int(length)]
	want := binary.LittleEndian.Uint32(r.buf[r.start+headerLen+int(length) : r.start+total])
	r.start += total
	r.off += int64(total)
	rec.Next = r.off
	if mask(crc32.Checksum(data, castagnoli)) != want {
		return rec, ErrBadDataCRC
	}
	rec.Data = data
	return rec, nil
}

// skipLarge discards a record over the cap without holding it. Until the input has
// shown all of its bytes it is still "not written yet"; the reader is then left at
// EOF and the caller retries later from rec.Offset with a new Reader.
func (r *Reader) skipLarge(rec Record, length uint64) (Record, error) {
	total := uint64(headerLen) + length + footerLen
	if total < length || total > 1<<62 { // no file holds this: the length is garbage
		r.fatal = fmt.Errorf("%w: length %d", ErrBadLengthCRC, length)
		return rec, r.fatal
	}
	if have := uint64(r.end - r.start); have >= total {
		r.start += int(total)
	} else {
		left := total - have
		r.start, r.end = 0, 0
		for left > 0 {
			if r.eof {
				// Buffered bytes are gone; only a new Reader at rec.Offset can retry.
				r.fatal = ErrTruncated
				return rec, ErrTruncated
			}
			n, err := r.r.Read(r.buf)
			if uint64(n) > left { // the read ran into the next record: keep that part
				r.start, r.end = int(left), n
				left = 0
			} else {
				left -= uint64(n)
			}
			if err == io.EOF {
				r.eof = true
			} else if err != nil {
				return rec, err
			}
		}
	}
	r.off += int64(total)
	rec.Next = r.off
	return rec, fmt.Errorf("%w: %d bytes (cap %d)", ErrTooLarge, length, r.maxRecord)
}

func (r *Reader) truncatedOr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return ErrTruncated
	}
	return err
}

// fill makes at least n bytes available at buf[start:]. It grows the buffer only as
// far as the input has actually delivered bytes (doubling), so a corrupt length field
// cannot make it allocate more than about twice what the input holds.
func (r *Reader) fill(n int) error {
	for r.end-r.start < n {
		if r.eof {
			return io.EOF
		}
		if r.readErr != nil {
			return r.readErr
		}
		if r.start > 0 && (r.start+n > len(r.buf) || r.end == len(r.buf)) {
			copy(r.buf, r.buf[r.start:r.end])
			r.end -= r.start
			r.start = 0
		}
		if r.end == len(r.buf) {
			nb := make([]byte, min(2*len(r.buf), n))
			copy(nb, r.buf[:r.end])
			r.buf = nb
		}
		m, err := r.r.Read(r.buf[r.end:])
		r.end += m
		if err == io.EOF {
			r.eof = true
		} else if err != nil {
			r.readErr = err
		}
	}
	return nil
}
