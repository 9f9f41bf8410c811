package export

import (
	"testing"
	"time"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func TestExperimentProtoMask(t *testing.T) {
	e := &store.Experiment{ID: "id", Name: "n", Description: "d", Owner: "o", NumScalars: 3, NumRuns: 2, NumTags: 1,
		TotalTensorBytes: 4, TotalBlobBytes: 5, CreateTime: time.Unix(10, 0), UpdateTime: time.Unix(20, 0)}
	all := experimentProto(e, nil)
	if all.GetName() != "n" || all.GetOwner() != "o" || all.GetNumScalars() != 3 || all.GetTotalBlobBytes() != 5 ||
		all.GetUpdateTime().GetSeconds() != 20 {
		t.Errorf("no mask: %v", all)
	}
	some := experimentProto(e, &servicepb.ExperimentMask{Name: true, NumRuns: true})
	if some.GetExperimentId() != "id" || some.GetName() != "n" || some.GetNumRuns() != 2 ||
		some.GetDescription() != "" || some.GetOwner() != "" || some.GetCreateTime() != nil || some.GetNumScalars() != 0 {
		t.Errorf("mask name+num_runs: %v", some)
	}
}
