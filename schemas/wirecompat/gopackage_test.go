package wirecompat_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// goPackages is the fixed mapping from proto package to Go import path and
// package name that the rest of the repository imports.
var goPackages = map[string]string{
	"tensorboard":          "github.com/tbhub/tbhub/schemas/gen/go/tensorboard;tbpb",
	"tensorboard.data":     "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data;datapb",
	"tensorboard.service":  "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service;servicepb",
	"tensorboard.hparams":  "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/hparams;hparamspb",
	"tensorboard.mesh":     "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/mesh;meshpb",
	"tbhub.auth.v1":        "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1;authv1",
	"tbhub.experiments.v1": "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1;experimentsv1",
}

func TestGoPackages(t *testing.T) {
	seen := 0
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		path := fd.Path()
		if !strings.HasPrefix(path, "tensorboard/") && !strings.HasPrefix(path, "tbhub/") {
			return true
		}
		seen++
		pkg := string(fd.Package())
		want, ok := goPackages[pkg]
		if !ok {
			if !strings.HasPrefix(pkg, "tbhub.") {
				t.Errorf("%s: proto package %q has no Go package assigned", path, pkg)
				return true
			}
			// tbhub.<area>.v1 -> .../tbhub/<area>/v1;<area>v1
			parts := strings.Split(pkg, ".")
			if len(parts) != 3 || parts[2] != "v1" {
				t.Errorf("%s: own packages are named tbhub.<area>.v1, got %q", path, pkg)
				return true
			}
			want = "github.com/tbhub/tbhub/schemas/gen/go/tbhub/" + parts[1] + "/v1;" + parts[1] + "v1"
		}
		got := fd.Options().(*descriptorpb.FileOptions).GetGoPackage()
		if got != want {
			t.Errorf("%s: go_package = %q, want %q", path, got, want)
		}
		return true
	})
	if seen == 0 {
		t.Fatal("no tensorboard/ or tbhub/ files registered")
	}
}
