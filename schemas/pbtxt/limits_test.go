package pbtxt_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/schemas/pbtxt"
)

// nestedAttrGraph is a GraphDef with one node whose attribute nests depth
// levels deep (a function attribute holding a function attribute ...):
// about 15 bytes per level, so 3,000 levels are about 50 KB, and its text,
// indented two spaces per message level, grows with the square of depth.
func nestedAttrGraph(depth int) *tbpb.GraphDef {
	v := &tbpb.AttrValue{Value: &tbpb.AttrValue_I{I: 1}}
	for range depth {
		v = &tbpb.AttrValue{Value: &tbpb.AttrValue_Func{Func: &tbpb.NameAttrList{Name: "f", Attr: map[string]*tbpb.AttrValue{"a": v}}}}
	}
	return &tbpb.GraphDef{Node: []*tbpb.NodeDef{{Name: "n", Op: "Op", Attr: map[string]*tbpb.AttrValue{"a": v}}}}
}

// Marshal with limits stops as soon as the text would pass them: a
// 3,000-deep attribute (216 MB of text unbounded) answers ErrTooDeep
// having allocated little, and a text over MaxBytes answers ErrTooLarge.
func TestMarshalLimitedStopsEarly(t *testing.T) {
	g := nestedAttrGraph(3000)
	if b, _ := proto.Marshal(g); len(b) > 60<<10 {
		t.Fatalf("the hostile graph is %d bytes, want about 50 KB", len(b))
	}
	lim := pbtxt.Limits{MaxBytes: 64 << 20, MaxDepth: 100}
	var err error
	// Each message written costs an allocation or two: stopping at level
	// 100 of 9,000 allocates a few hundred times.
	allocs := testing.AllocsPerRun(1, func() { _, err = pbtxt.MarshalLimited(g, lim) })
	if !errors.Is(err, pbtxt.ErrTooDeep) {
		t.Errorf("3,000 levels with MaxDepth 100: %v, want ErrTooDeep", err)
	}
	if allocs > 1000 {
		t.Errorf("refusing 3,000 levels allocated %v times, want under 1,000 (%v unbounded)", allocs, testing.AllocsPerRun(1, func() { pbtxt.Marshal(g) }))
	}

	// 40 levels fit in depth 100 (three text levels each); its text is
	// larger than 10 KB.
	g = nestedAttrGraph(30)
	want := pbtxt.Marshal(g)
	got, err := pbtxt.MarshalLimited(g, pbtxt.Limits{MaxBytes: len(want), MaxDepth: 100})
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("within the limits: %v, or not Marshal's text", err)
	}
	if _, err := pbtxt.MarshalLimited(g, pbtxt.Limits{MaxBytes: len(want) - 1, MaxDepth: 100}); !errors.Is(err, pbtxt.ErrTooLarge) {
		t.Errorf("one byte over MaxBytes: %v, want ErrTooLarge", err)
	}
	// A long string is refused before it is written: the only allocation
	// left is the small buffer of the lines before it.
	big := &tbpb.GraphDef{Node: []*tbpb.NodeDef{{Name: strings.Repeat("\xff", 8<<20)}}}
	allocs = testing.AllocsPerRun(1, func() { _, err = pbtxt.MarshalLimited(big, pbtxt.Limits{MaxBytes: 1 << 20, MaxDepth: 100}) })
	if !errors.Is(err, pbtxt.ErrTooLarge) || allocs > 10 {
		t.Errorf("an 8 MiB name with MaxBytes 1 MiB: %v after %v allocations, want ErrTooLarge and few", err, allocs)
	}
}
