package wirecompat_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// TestMatchesUpstream compares every message, enum and service we define
// under tensorboard/ with TensorBoard's own .proto files, element by
// element: names, numbers, types, labels, oneofs, packing, JSON names,
// reserved ranges, method signatures. It needs a TensorBoard source tree
// and protoc, so it runs only when asked:
//
//	TBHUB_TENSORBOARD_SRC=/path/to/tensorboard go test ./wirecompat -run Upstream
func TestMatchesUpstream(t *testing.T) {
	src := os.Getenv("TBHUB_TENSORBOARD_SRC")
	if src == "" {
		t.Skip("set TBHUB_TENSORBOARD_SRC to a tensorflow/tensorboard checkout to compare with upstream")
	}
	var paths []string
	ours := map[string]string{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(fd.Path(), "tensorboard/") {
			paths = append(paths, fd.Path())
			describeFile(fd, ours)
		}
		return true
	})
	sort.Strings(paths)

	upstream := compileUpstream(t, src, paths)
	theirs := map[string]string{}
	upstream.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		describeFile(fd, theirs)
		return true
	})

	var problems []string
	for k, v := range ours {
		u, ok := theirs[k]
		switch {
		case !ok:
			problems = append(problems, "only ours: "+k+" "+v)
		case u != v:
			problems = append(problems, fmt.Sprintf("differs: %s\n    upstream: %s\n    ours:     %s", k, u, v))
		}
	}
	// Upstream members of containers we define must exist here too. Whole
	// upstream messages we left out (e.g. ConfigProto) are fine.
	for k, v := range theirs {
		if _, ok := ours[k]; ok {
			continue
		}
		if parent, ok := containerOf(k); ok {
			if _, defined := ours[parent]; defined {
				problems = append(problems, "missing here: "+k+" "+v)
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("compared %d elements of %d files", len(ours), len(paths))
}

// compileUpstream runs protoc on TensorBoard's copies of the given files.
func compileUpstream(t *testing.T, src string, paths []string) *protoregistry.Files {
	t.Helper()
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Fatalf("protoc not found (scripts/gen.sh installs it): %v", err)
	}
	var wkt string
	for _, d := range []string{"/usr/include", "/usr/local/include"} {
		if _, err := os.Stat(filepath.Join(d, "google/protobuf/timestamp.proto")); err == nil {
			wkt = d
			break
		}
	}
	if wkt == "" {
		t.Fatal("well-known .proto files not found; install libprotobuf-dev")
	}
	out := filepath.Join(t.TempDir(), "upstream.pb")
	args := append([]string{"-I", src, "-I", wkt, "--include_imports", "--descriptor_set_out=" + out}, paths...)
	if msg, err := exec.Command(protoc, args...).CombinedOutput(); err != nil {
		t.Fatalf("protoc on upstream files: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// describeFile adds one entry per message, field, reserved range or name,
// enum, enum value, service and method of fd to out. Keys name the element;
// values hold everything about it that affects the wire, text or JSON form.
func describeFile(fd protoreflect.FileDescriptor, out map[string]string) {
	var message func(md protoreflect.MessageDescriptor)
	enum := func(ed protoreflect.EnumDescriptor) {
		out["enum "+string(ed.FullName())] = "file=" + fd.Path()
		for i := range ed.Values().Len() {
			v := ed.Values().Get(i)
			out["value "+string(ed.FullName())+"."+string(v.Name())] = fmt.Sprint(v.Number())
		}
	}
	message = func(md protoreflect.MessageDescriptor) {
		name := string(md.FullName())
		out["message "+name] = fmt.Sprintf("file=%s syntax=%s", fd.Path(), fd.Syntax())
		for i := range md.Fields().Len() {
			f := md.Fields().Get(i)
			oneof := ""
			if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
				oneof = string(o.Name())
			}
			out["field "+name+"."+string(f.Name())] = fmt.Sprintf("number=%d type=%s cardinality=%s oneof=%s presence=%v packed=%v json=%s",
				f.Number(), fieldType(f), f.Cardinality(), oneof, f.HasPresence(), f.IsPacked(), f.JSONName())
		}
		for i := range md.ReservedRanges().Len() {
			r := md.ReservedRanges().Get(i)
			out[fmt.Sprintf("reserved %s.%d-%d", name, r[0], r[1])] = ""
		}
		for i := range md.ReservedNames().Len() {
			out["reserved "+name+"."+string(md.ReservedNames().Get(i))] = ""
		}
		for i := range md.Messages().Len() {
			if nested := md.Messages().Get(i); !nested.IsMapEntry() {
				message(nested)
			}
		}
		for i := range md.Enums().Len() {
			enum(md.Enums().Get(i))
		}
	}
	for i := range fd.Messages().Len() {
		message(fd.Messages().Get(i))
	}
	for i := range fd.Enums().Len() {
		enum(fd.Enums().Get(i))
	}
	for i := range fd.Services().Len() {
		sd := fd.Services().Get(i)
		out["service "+string(sd.FullName())] = "file=" + fd.Path()
		for j := range sd.Methods().Len() {
			m := sd.Methods().Get(j)
			out["method "+string(sd.FullName())+"."+string(m.Name())] = fmt.Sprintf("%s -> %s %s", m.Input().FullName(), m.Output().FullName(), streamingKind(m))
		}
	}
}

// containerOf maps a member key ("field a.B.c") to its container's key
// ("message a.B").
func containerOf(key string) (string, bool) {
	kind, name, _ := strings.Cut(key, " ")
	var parentKind string
	switch kind {
	case "field", "reserved":
		parentKind = "message"
	case "value":
		parentKind = "enum"
	case "method":
		parentKind = "service"
	default:
		return "", false
	}
	// The last dot ends the container's name, also in "reserved a.B.1-2".
	dot := strings.LastIndexByte(name, '.')
	return parentKind + " " + name[:dot], true
}
