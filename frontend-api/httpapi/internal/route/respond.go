package route

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/tbhub/tbhub/frontend-api/httperr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Float is a number written as TensorBoard writes it: finite values as
// JSON numbers in Python's repr form (1.0, 0.5, 1e-05), NaN and infinities
// as the strings "NaN", "Infinity" and "-Infinity".
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) { return AppendFloat(nil, float64(f)), nil }

// appendFloat appends f as Float marshals it.
func AppendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return AppendPythonFloat(b, f)
}

// appendPythonFloat appends a finite f as Python's repr writes it: the
// shortest digits that read back exactly, in positional notation with at
// least one decimal when the decimal exponent is in [-4, 16), otherwise
// in scientific notation with a signed two-digit exponent.
func AppendPythonFloat(b []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	// One shortest-digits conversion, then the digits laid out again
	// when positional: scalar answers write millions of these.
	start := len(b)
	b = strconv.AppendFloat(b, f, 'e', -1, 64)
	e := b[start:]
	i := bytes.LastIndexByte(e, 'e')
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	if exp < -4 || exp >= 16 {
		return b
	}
	var digits [32]byte
	n := 0
	neg := e[0] == '-'
	for _, c := range e[:i] {
		if c >= '0' && c <= '9' {
			digits[n] = c
			n++
		}
	}
	b = b[:start]
	if neg {
		b = append(b, '-')
	}
	switch {
	case exp < 0:
		b = append(b, "0."...)
		for range -exp - 1 {
			b = append(b, '0')
		}
		return append(b, digits[:n]...)
	case n <= exp+1:
		b = append(b, digits[:n]...)
		for range exp + 1 - n {
			b = append(b, '0')
		}
		return append(b, ".0"...)
	}
	b = append(b, digits[:exp+1]...)
	b = append(b, '.')
	return append(b, digits[exp+1:n]...)
}

// writeJSON answers with v as JSON. Floats inside v that may be
// non-finite must be of type Float.
// Like Python's json module, it leaves <, > and & as they are (the
// answers are JSON, never embedded in HTML).
func WriteJSON(w http.ResponseWriter, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding response: %w", err)
	}
	return WriteBody(w, "application/json", bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// MinGzipBytes is the smallest body worth compressing: below about one
// packet, gzip's header and CPU cost more than they save.
const MinGzipBytes = 1024

// writeBody answers 200 with body, not cached.
func WriteBody(w http.ResponseWriter, contentType string, body []byte) error {
	if len(body) < MinGzipBytes {
		SkipGzip(w)
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "private, no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, err := w.Write(body)
	return err
}

// writeImmutable answers 200 with the bytes of a blob. Its key changes
// whenever its content can, so browsers may keep it; private, because
// access to it was checked for this caller.
func WriteImmutable(w http.ResponseWriter, contentType string, body []byte) error {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, err := w.Write(body)
	return err
}

// errorf is an error answered with status and the formatted text.
func Errorf(status int, format string, args ...any) error {
	return httperr.Errorf(status, format, args...)
}

// gzipWriter compresses a response when the client accepts gzip and the
// content type is text-like (compressing PNGs only costs time).
type GzipWriter struct {
	http.ResponseWriter
	accept  bool
	decided bool
	gz      *gzip.Writer
}

// gzipWriters are reused: a new one allocates several hundred KB.
// BestSpeed: on large JSON answers (scalar charts) the default level took
// more CPU than reading the data, for about 7% fewer bytes. The
// klauspost/compress writer (already in the module graph, by Prometheus's
// client), not compress/gzip's: at BestSpeed it compressed a 100-run card's
// 2 MB columns answer in about half the CPU, for 5% more bytes
// (docs/benchmarks.md, "The card's client CPU").
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// writeGzipped sends an already compressed body, if w is (or wraps) a
// gzipWriter that has not started and whose client accepts gzip.
func WriteGzipped(w http.ResponseWriter, gzipped []byte) bool {
	for {
		switch x := w.(type) {
		case *GzipWriter:
			if !x.accept || x.decided {
				return false
			}
			x.decided = true
			x.Header().Set("Content-Encoding", "gzip")
			x.ResponseWriter.Write(gzipped)
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return false
		}
	}
}

// skipGzip makes w send the response uncompressed, if w is (or wraps) a
// gzipWriter that has not started.
func SkipGzip(w http.ResponseWriter) {
	for {
		switch x := w.(type) {
		case *GzipWriter:
			x.accept = false
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

func NewGzipWriter(w http.ResponseWriter, r *http.Request) *GzipWriter {
	w.Header().Add("Vary", "Accept-Encoding")
	return &GzipWriter{ResponseWriter: w, accept: acceptsGzip(r.Header.Get("Accept-Encoding"))}
}

func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		fields := strings.Split(part, ";")
		if !strings.EqualFold(strings.TrimSpace(fields[0]), "gzip") {
			continue
		}
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if q, err := strconv.ParseFloat(v, 64); strings.EqualFold(k, "q") && err == nil && q == 0 {
				return false
			}
		}
		return true
	}
	return false
}

func compressible(contentType string) bool {
	ct, _, _ := strings.Cut(contentType, ";")
	return strings.HasPrefix(ct, "text/") || ct == "application/json" || ct == "application/x-protobuf" || strings.HasSuffix(ct, "+json")
}

func (g *GzipWriter) decide(code int) {
	if g.decided {
		return
	}
	g.decided = true
	h := g.Header()
	if g.accept && code == http.StatusOK && h.Get("Content-Encoding") == "" && compressible(h.Get("Content-Type")) {
		h.Set("Content-Encoding", "gzip")
		h.Del("Content-Length")
		g.gz = gzipWriters.Get().(*gzip.Writer)
		g.gz.Reset(g.ResponseWriter)
	}
}

func (g *GzipWriter) WriteHeader(code int) {
	g.decide(code)
	g.ResponseWriter.WriteHeader(code)
}

func (g *GzipWriter) Write(p []byte) (int, error) {
	g.decide(http.StatusOK)
	if g.gz != nil {
		return g.gz.Write(p)
	}
	return g.ResponseWriter.Write(p)
}

// Flush sends what is buffered, for streamed downloads.
func (g *GzipWriter) Flush() {
	if g.gz != nil {
		g.gz.Flush()
	}
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (g *GzipWriter) Close() {
	if g.gz != nil {
		g.gz.Close()
		g.gz.Reset(nil)
		gzipWriters.Put(g.gz)
		g.gz = nil
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (g *GzipWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func WriteProtoJSON(w http.ResponseWriter, m proto.Message) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	return WriteBody(w, "application/json", b)
}

// writeTensorBoardProto answers with m in proto3 JSON as TensorBoard's
// plugins write it (Python's MessageToJson with
// including_default_value_fields): fields at their default value are
// written too (TensorBoard's frontend reads them unguarded), except unset
// messages and oneofs.
func WriteTensorBoardProto(w http.ResponseWriter, m proto.Message) error {
	b, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(m)
	if err != nil {
		return err
	}
	// protojson varies its whitespace on purpose; answers stay byte-stable.
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return err
	}
	return WriteBody(w, "application/json", compact.Bytes())
}

// pyRepr quotes s as Python's repr does, for error texts that name runs
// and tags as TensorBoard's do.
func PyRepr(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	var b strings.Builder
	b.WriteString(q)
	for _, c := range s {
		switch {
		case c == '\\' || string(c) == q:
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < ' ':
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteString(q)
	return b.String()
}

// floats converts for JSON output.
func Floats(vals []float64) []Float {
	out := make([]Float, len(vals))
	for i, v := range vals {
		out[i] = Float(v)
	}
	return out
}

func FloatRows(rs [][]float64) [][]Float {
	out := make([][]Float, len(rs))
	for i, r := range rs {
		out[i] = Floats(r)
	}
	return out
}

// Compressed is body gzipped as answers are, or nil when that is not worth
// it (below MinGzipBytes, or not text).
func Compressed(contentType string, body []byte) []byte {
	if len(body) < MinGzipBytes || !compressible(contentType) {
		return nil
	}
	var buf bytes.Buffer
	gz := gzipWriters.Get().(*gzip.Writer)
	gz.Reset(&buf)
	gz.Write(body)
	gz.Close()
	gz.Reset(nil)
	gzipWriters.Put(gz)
	return buf.Bytes()
}
