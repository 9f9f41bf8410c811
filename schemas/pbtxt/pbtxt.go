// Package pbtxt writes protobuf messages in the text format TensorBoard
// serves: what Python's str(message) produces on protobuf's C++ backend
// (TensorBoard's graphs plugin answers str(graph)). It is Python's
// text_format.MessageToString except for float fields, written as the
// double they widen to, and map entries, written whole. The graphs dashboard fetches GraphDef and
// RunMetadata in this form and parses it line by line, expecting
// "name {" to open a message and one "name: value" per line.
//
// Go's own prototext output is not usable there: it writes "name: {" and
// deliberately varies its whitespace between builds. prototext.Unmarshal
// does read this package's output, so it remains the parser.
package pbtxt

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Marshal returns m as Python's str(m) writes it:
//   - fields in field-number order; implicit-presence fields only when
//     non-zero, fields with presence whenever set (including oneof members
//     set to a zero value); unknown fields are dropped;
//   - one line per scalar or repeated element, two spaces of indent per
//     nesting level, messages as "name {" ... "}";
//   - map entries sorted by key, each printed as a message with its key and
//     its value, zero or not;
//   - strings and bytes C-escaped, with every byte outside printable ASCII
//     written as a three-digit octal escape (also inside valid UTF-8);
//   - floating point numbers as Python's repr: shortest round-trip digits,
//     "1.0" rather than "1", exponents as "1e-05" and "1e+16"; a float32
//     as the repr of the double it widens to (0.1f is
//     "0.10000000149011612").
//
// The output ends with a newline unless m has no fields, in which case it is
// empty.
func Marshal(m proto.Message) []byte {
	w := writer{}
	w.message(m.ProtoReflect(), 0)
	return w.buf
}

// Errors of MarshalLimited.
var (
	ErrTooLarge = errors.New("pbtxt: the text is larger than the limit")
	ErrTooDeep  = errors.New("pbtxt: messages are nested deeper than the limit")
)

// Limits bound the text MarshalLimited writes. The text of a message can
// be far larger than its wire form: every line is indented two spaces per
// level of nesting, so a message nested n deep writes about n² bytes of
// indentation, and non-printable bytes are written four bytes each.
type Limits struct {
	// MaxBytes bounds the length of the text (0: unbounded).
	MaxBytes int
	// MaxDepth bounds the nesting of messages within the top one (which
	// is level 0; its message fields are level 1, and so on; 0:
	// unbounded).
	MaxDepth int
}

// MarshalLimited is Marshal within l: it stops writing as soon as the
// text would pass MaxBytes (ErrTooLarge) or a message lies deeper than
// MaxDepth (ErrTooDeep), having written no more than MaxBytes plus one
// line, so what it allocates is bounded by l whatever m holds.
func MarshalLimited(m proto.Message, l Limits) ([]byte, error) {
	w := writer{maxBytes: l.MaxBytes, maxDepth: l.MaxDepth}
	w.message(m.ProtoReflect(), 0)
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}

type writer struct {
	buf []byte
	// maxBytes and maxDepth are Limits' (0: unbounded); err is set, and
	// writing stops, when one is passed.
	maxBytes, maxDepth int
	err                error
}

// full reports whether writing n more bytes would pass maxBytes, and if
// so stops the writer.
func (w *writer) full(n int) bool {
	if w.err == nil && w.maxBytes > 0 && len(w.buf)+n > w.maxBytes {
		w.err = ErrTooLarge
	}
	return w.err != nil
}

type fieldValue struct {
	fd protoreflect.FieldDescriptor
	v  protoreflect.Value
}

func (w *writer) message(m protoreflect.Message, depth int) {
	if w.maxDepth > 0 && depth > w.maxDepth && w.err == nil {
		w.err = ErrTooDeep
	}
	if w.err != nil {
		return
	}
	var fields []fieldValue
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		fields = append(fields, fieldValue{fd, v})
		return true
	})
	slices.SortFunc(fields, func(a, b fieldValue) int { return cmp.Compare(a.fd.Number(), b.fd.Number()) })

	for _, f := range fields {
		if w.err != nil {
			return
		}
		switch {
		case f.fd.IsMap():
			w.mapField(f.fd, f.v.Map(), depth)
		case f.fd.IsList():
			list := f.v.List()
			for i := 0; i < list.Len() && w.err == nil; i++ {
				w.field(f.fd, f.fd.TextName(), list.Get(i), depth)
			}
		default:
			w.field(f.fd, f.fd.TextName(), f.v, depth)
		}
	}
}

// mapField prints a map as its entries, sorted by key, each with its key
// and value even when zero.
func (w *writer) mapField(fd protoreflect.FieldDescriptor, m protoreflect.Map, depth int) {
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, compareMapKeys)

	keyFD, valueFD := fd.MapKey(), fd.MapValue()
	for _, k := range keys {
		if w.full(2*depth + len(fd.TextName()) + 2) {
			return
		}
		w.indent(depth)
		w.buf = append(w.buf, fd.TextName()...)
		w.buf = append(w.buf, " {\n"...)
		w.field(keyFD, "key", k.Value(), depth+1)
		w.field(valueFD, "value", m.Get(k), depth+1)
		w.indent(depth)
		w.buf = append(w.buf, "}\n"...)
		w.full(0)
	}
}

// field prints one value of fd under the given name.
func (w *writer) field(fd protoreflect.FieldDescriptor, name string, v protoreflect.Value, depth int) {
	// A line is at least its indent, its name and its value's bytes
	// written plainly: refuse it before writing if that is too much.
	n := 2*depth + len(name) + 3
	switch fd.Kind() {
	case protoreflect.StringKind:
		n += len(v.String())
	case protoreflect.BytesKind:
		n += len(v.Bytes())
	}
	if w.full(n) {
		return
	}
	w.indent(depth)
	w.buf = append(w.buf, name...)
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		w.buf = append(w.buf, " {\n"...)
		w.message(v.Message(), depth+1)
		w.indent(depth)
		w.buf = append(w.buf, "}\n"...)
		w.full(0)
		return
	}
	w.buf = append(w.buf, ": "...)
	w.buf = appendScalar(w.buf, fd, v)
	w.buf = append(w.buf, '\n')
	w.full(0)
}

func (w *writer) indent(depth int) {
	for range depth {
		w.buf = append(w.buf, "  "...)
	}
}

func appendScalar(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) []byte {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10)
	case protoreflect.FloatKind:
		return appendPythonFloat(b, v.Float())
	case protoreflect.DoubleKind:
		return appendPythonFloat(b, v.Float())
	case protoreflect.StringKind:
		return appendQuoted(b, []byte(v.String()))
	case protoreflect.BytesKind:
		return appendQuoted(b, v.Bytes())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return append(b, ev.Name()...)
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10)
	}
	panic("pbtxt: unexpected field kind " + fd.Kind().String())
}

// appendQuoted writes s between double quotes with C escapes: \t \n \r \"
// \' \\ by name, any other byte below 0x20 or from 0x7f up as \ooo.
func appendQuoted(b, s []byte) []byte {
	b = append(b, '"')
	for _, c := range s {
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '"':
			b = append(b, `\"`...)
		case '\'':
			b = append(b, `\'`...)
		case '\\':
			b = append(b, `\\`...)
		default:
			if c < 0x20 || c >= 0x7f {
				b = append(b, '\\', '0'+(c>>6), '0'+((c>>3)&7), '0'+(c&7))
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// appendPythonFloat writes f the way Python's repr writes a float.
func appendPythonFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	// Shortest round-trip digits in scientific form: "-d.ddde±XX".
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	if strings.HasPrefix(sci, "-") {
		b = append(b, '-')
		sci = sci[1:]
	}
	mantissa, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mantissa, ".", "", 1)

	// Python switches to exponent notation below 1e-4 and from 1e16 up.
	if exp < -4 || exp >= 16 {
		b = append(b, digits[0])
		if len(digits) > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if exp < 0 {
			b = append(b, '-')
			exp = -exp
		} else {
			b = append(b, '+')
		}
		if exp < 10 {
			b = append(b, '0')
		}
		return strconv.AppendInt(b, int64(exp), 10)
	}
	if exp < 0 {
		b = append(b, "0."...)
		b = append(b, strings.Repeat("0", -exp-1)...)
		return append(b, digits...)
	}
	intLen := exp + 1
	if len(digits) <= intLen {
		b = append(b, digits...)
		b = append(b, strings.Repeat("0", intLen-len(digits))...)
		return append(b, ".0"...)
	}
	b = append(b, digits[:intLen]...)
	b = append(b, '.')
	return append(b, digits[intLen:]...)
}

// compareMapKeys orders keys as Python's sorted() does: numbers by value,
// false before true, strings by code point (which is UTF-8 byte order).
func compareMapKeys(a, b protoreflect.MapKey) int {
	switch av := a.Interface().(type) {
	case bool:
		bv := b.Bool()
		switch {
		case av == bv:
			return 0
		case !av:
			return -1
		default:
			return 1
		}
	case int32, int64:
		return cmp.Compare(a.Int(), b.Int())
	case uint32, uint64:
		return cmp.Compare(a.Uint(), b.Uint())
	default:
		return strings.Compare(a.String(), b.String())
	}
}
