package wirecompat_test

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// Every generated package, so the global registry knows all files. A
	// duplicate full name anywhere would make these imports panic at init.
	_ "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	_ "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	_ "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	_ "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	_ "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams"
	_ "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/mesh"
	_ "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// findDescriptor looks a message, enum or service up by full name (nested
// names use dots) and checks that it is of the expected kind.
func findDescriptor[T protoreflect.Descriptor](name string) (T, error) {
	var zero T
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return zero, err
	}
	typed, ok := d.(T)
	if !ok {
		return zero, fmt.Errorf("%s is a %T, not a %T", name, d, zero)
	}
	return typed, nil
}

func findMessage(name string) (protoreflect.MessageDescriptor, error) {
	return findDescriptor[protoreflect.MessageDescriptor](name)
}

// fieldType spells a field's wire-relevant type the way the tables in this
// package write it: "int64", "repeated double", "tensorboard.TensorProto",
// "map<string,tensorboard.AttrValue>".
func fieldType(fd protoreflect.FieldDescriptor) string {
	if fd.IsMap() {
		return "map<" + fieldType(fd.MapKey()) + "," + fieldType(fd.MapValue()) + ">"
	}
	var base string
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		base = string(fd.Message().FullName())
	case protoreflect.EnumKind:
		base = string(fd.Enum().FullName())
	default:
		base = fd.Kind().String()
	}
	if fd.IsList() {
		return "repeated " + base
	}
	return base
}

// describeFields renders every field of md as "name=number type", sorted by
// number, so a mismatch shows up as a readable diff.
func describeFields(md protoreflect.MessageDescriptor) []string {
	fields := md.Fields()
	out := make([]string, 0, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		out = append(out, fmt.Sprintf("%s=%d %s", fd.Name(), fd.Number(), fieldType(fd)))
	}
	sortByNumber(out)
	return out
}

func sortByNumber(specs []string) {
	num := func(s string) int {
		var n int
		eq := strings.IndexByte(s, '=')
		fmt.Sscanf(s[eq+1:], "%d", &n)
		return n
	}
	sort.SliceStable(specs, func(i, j int) bool { return num(specs[i]) < num(specs[j]) })
}

// diffLists reports the entries only in want and only in got.
func diffLists(want, got []string) (missing, extra []string) {
	in := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, s := range list {
			m[s] = true
		}
		return m
	}
	wantSet, gotSet := in(want), in(got)
	for _, s := range want {
		if !gotSet[s] {
			missing = append(missing, s)
		}
	}
	for _, s := range got {
		if !wantSet[s] {
			extra = append(extra, s)
		}
	}
	return missing, extra
}
