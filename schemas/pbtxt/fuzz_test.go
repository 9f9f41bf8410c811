package pbtxt_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/schemas/pbtxt"
)

// FuzzMarshalGraphDef feeds arbitrary bytes through the binary parser and,
// when they parse as a GraphDef (or as RunMetadata, which embeds graphs),
// checks that the text output has the dashboard's line shape and parses back
// into an equal message.
func FuzzMarshalGraphDef(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.binpb"))
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range []proto.Message{&tbpb.GraphDef{}, &tbpb.RunMetadata{}} {
			if proto.Unmarshal(data, m) != nil {
				continue
			}
			discardUnknown(m.ProtoReflect())
			text := pbtxt.Marshal(m)
			for _, line := range strings.Split(string(text), "\n") {
				if strings.HasSuffix(line, ": {") {
					t.Fatalf("line %q opens a message with a colon", line)
				}
			}
			back := m.ProtoReflect().New().Interface()
			if err := prototext.Unmarshal(text, back); err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, text)
			}
			if !proto.Equal(m, back) {
				t.Fatalf("round trip changed the message\nwant: %v\ngot:  %v", m, back)
			}
		}
	})
}

// discardUnknown drops unknown fields everywhere in m; the text format has
// no way to show them.
func discardUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					discardUnknown(mv.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				for i := range v.List().Len() {
					discardUnknown(v.List().Get(i).Message())
				}
			}
		case fd.Message() != nil:
			discardUnknown(v.Message())
		}
		return true
	})
}
