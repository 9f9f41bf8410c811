package event

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// Small builders for wire bytes.
func msg(fields ...[]byte) []byte { return bytes.Join(fields, nil) }

func bytesField(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func varintField(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func fixed32Field(num protowire.Number, v uint32) []byte {
	return protowire.AppendFixed32(protowire.AppendTag(nil, num, protowire.Fixed32Type), v)
}

func fixed64Field(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
}

func simpleValue(tag string, v float32) []byte {
	return bytesField(1, msg(bytesField(1, []byte(tag)), fixed32Field(2, math.Float32bits(v))))
}

func TestDecodeScalarEvent(t *testing.T) {
	b := msg(fixed64Field(1, math.Float64bits(1.5e9)), varintField(2, 42),
		bytesField(5, msg(simpleValue("loss", 0.25), simpleValue("acc", 0.75))))
	var ev Event
	if err := Decode(b, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.WallTime != 1.5e9 || ev.Step != 42 || ev.What != WhatSummary || len(ev.Summary.Values) != 2 {
		t.Fatalf("decoded %+v", ev)
	}
	v := ev.Summary.Values[1]
	if string(v.Tag) != "acc" || v.Kind != ValueSimple || v.Simple != 0.75 {
		t.Errorf("value %+v", v)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Decode(b, &ev) }); n != 0 {
		t.Errorf("%v allocations per decode once buffers are warm, want 0", n)
	}
}

func TestMergeAndOneofRules(t *testing.T) {
	s1 := bytesField(5, simpleValue("a", 1))
	s2 := bytesField(5, simpleValue("b", 2))
	fileVersion := bytesField(3, []byte("brain.Event:2"))
	tensorA := bytesField(8, msg(varintField(1, 1), bytesField(5, protowire.AppendFixed32(nil, math.Float32bits(3)))))
	tensorB := bytesField(8, msg(varintField(1, 2), bytesField(2, bytesField(2, varintField(1, 4)))))
	cases := []struct {
		name  string
		in    []byte
		check func(t *testing.T, ev *Event)
	}{
		{"a repeated singular message merges", msg(s1, s2), func(t *testing.T, ev *Event) {
			if ev.What != WhatSummary || len(ev.Summary.Values) != 2 {
				t.Errorf("got %d values, want both summaries merged", len(ev.Summary.Values))
			}
		}},
		{"the last oneof member wins", msg(s1, fileVersion), func(t *testing.T, ev *Event) {
			if ev.What != WhatFileVersion || len(ev.Summary.Values) != 0 || string(ev.FileVersion) != "brain.Event:2" {
				t.Errorf("what=%v values=%d", ev.What, len(ev.Summary.Values))
			}
		}},
		{"switching back starts afresh", msg(s1, fileVersion, s2), func(t *testing.T, ev *Event) {
			if ev.What != WhatSummary || len(ev.Summary.Values) != 1 || string(ev.Summary.Values[0].Tag) != "b" {
				t.Errorf("what=%v values=%+v", ev.What, ev.Summary.Values)
			}
		}},
		{"an empty graph_def is still a graph", bytesField(4, nil), func(t *testing.T, ev *Event) {
			if ev.What != WhatGraphDef || ev.GraphDef == nil || len(ev.GraphDef) != 0 {
				t.Errorf("what=%v graph=%v", ev.What, ev.GraphDef)
			}
		}},
		{"tensors merge field by field", bytesField(5, bytesField(1, msg(tensorA, tensorB))), func(t *testing.T, ev *Event) {
			tn := ev.Summary.Values[0].Tensor
			if tn.DType != 2 || tn.Vals[ValFloat].N != 1 || !reflect.DeepEqual(tn.Dims, []int64{4}) || len(tn.Raw) != 2 {
				t.Errorf("tensor %+v", tn)
			}
		}},
		{"a known field with another wire type is skipped", msg(fixed64Field(2, 7), varintField(1, 9)), func(t *testing.T, ev *Event) {
			if ev.Step != 0 || ev.WallTime != 0 {
				t.Errorf("step=%d wall=%v, want both ignored", ev.Step, ev.WallTime)
			}
		}},
		{"unknown fields and groups are skipped", msg(varintField(99, 1), protowire.AppendTag(nil, 50, protowire.StartGroupType), varintField(1, 5), protowire.AppendTag(nil, 50, protowire.EndGroupType), varintField(2, 3)), func(t *testing.T, ev *Event) {
			if ev.Step != 3 {
				t.Errorf("step=%d", ev.Step)
			}
		}},
		{"packed and unpacked values count together", bytesField(5, bytesField(1, bytesField(8, msg(
			fixed32Field(5, math.Float32bits(9)),
			bytesField(5, protowire.AppendFixed32(protowire.AppendFixed32(nil, 1), 2)))))), func(t *testing.T, ev *Event) {
			l := ev.Summary.Values[0].Tensor.Vals[ValFloat]
			if l.N != 3 || math.Float32frombits(uint32(l.First)) != 9 {
				t.Errorf("float_val %+v", l)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ev Event
			if err := Decode(tc.in, &ev); err != nil {
				t.Fatal(err)
			}
			tc.check(t, &ev)
		})
	}
}

func TestRejectsWhatProtobufRejects(t *testing.T) {
	cases := map[string][]byte{
		"field number 0":            {0x00, 0x01},
		"wire type 6":               {0x0e},
		"wire type 7":               {0x0f},
		"stray end group":           protowire.AppendTag(nil, 3, protowire.EndGroupType),
		"unterminated group":        protowire.AppendTag(nil, 50, protowire.StartGroupType),
		"11-byte varint":            append([]byte{0x10}, bytes.Repeat([]byte{0x80}, 10)...),
		"truncated bytes":           {0x22, 0x05, 0x01},
		"file_version not UTF-8":    bytesField(3, []byte{0xff}),
		"tag not UTF-8":             bytesField(5, bytesField(1, bytesField(1, []byte{0xc3}))),
		"plugin name not UTF-8":     bytesField(5, bytesField(1, bytesField(9, bytesField(1, bytesField(1, []byte{0xed, 0xa0, 0x80}))))),
		"packed floats of 5 bytes":  bytesField(5, bytesField(1, bytesField(8, bytesField(5, []byte{1, 2, 3, 4, 5})))),
		"bad nested histogram":      bytesField(5, bytesField(1, bytesField(5, []byte{0x31, 0x00}))),
		"session_log msg not UTF-8": bytesField(7, bytesField(3, []byte{0x80})),
		"bad resource handle wire":  bytesField(5, bytesField(1, bytesField(8, bytesField(14, []byte{0x0f})))),
	}
	for name, in := range cases {
		var ev Event
		if err := Decode(in, &ev); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	// Bytes fields need not be UTF-8.
	var ev Event
	if err := Decode(bytesField(5, bytesField(1, bytesField(8, bytesField(8, []byte{0xff})))), &ev); err != nil {
		t.Errorf("string_val with arbitrary bytes: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(msg(fixed64Field(1, 1), varintField(2, 1), bytesField(5, simpleValue("x", 1))))
	f.Add(bytesField(5, bytesField(1, bytesField(8, msg(varintField(1, 7), bytesField(8, []byte("s")), bytesField(2, bytesField(2, varintField(1, 1))))))))
	f.Add(bytesField(8, msg(bytesField(1, []byte("t")), bytesField(2, []byte{1, 2}))))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fresh, reused Event
		errFresh := Decode(b, &fresh)
		// Decoding into a struct that held another event must give the same result.
		_ = Decode(msg(bytesField(5, simpleValue("junk", 1)), bytesField(5, bytesField(1, bytesField(8, bytesField(8, []byte("z")))))), &reused)
		errReused := Decode(b, &reused)
		if (errFresh == nil) != (errReused == nil) {
			t.Fatalf("errors differ: %v vs %v", errFresh, errReused)
		}
		if errFresh != nil {
			if !errors.Is(errFresh, ErrMalformed) {
				t.Fatalf("unexpected error kind: %v", errFresh)
			}
			return
		}
		if fresh.What != reused.What || fresh.Step != reused.Step || len(fresh.Summary.Values) != len(reused.Summary.Values) {
			t.Fatalf("results differ: %+v vs %+v", fresh, reused)
		}
		for i := range fresh.Summary.Values {
			a, b := &fresh.Summary.Values[i], &reused.Summary.Values[i]
			if !bytes.Equal(a.Tag, b.Tag) || a.Kind != b.Kind || a.Tensor.DType != b.Tensor.DType ||
				len(a.Tensor.StringVal) != len(b.Tensor.StringVal) || len(a.Tensor.Dims) != len(b.Tensor.Dims) ||
				a.Tensor.Vals != b.Tensor.Vals || len(a.Histo.Bucket) != len(b.Histo.Bucket) {
				t.Fatalf("value %d differs: %+v vs %+v", i, a, b)
			}
		}
	})
}
