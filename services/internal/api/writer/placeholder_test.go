package writer_test

import (
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// TestPlaceholderExperimentIsInvalid: an empty experiment id or TensorBoard's
// placeholder "defaultExperimentId" is a malformed request (INVALID_ARGUMENT), told
// apart from a missing experiment (NOT_FOUND). (Without credentials a write is
// UNAUTHENTICATED first.)
func TestPlaceholderExperimentIsInvalid(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, nil)
	ctx := h.UserContext(t, "ada")
	for _, eid := range []string{"", "defaultExperimentId"} {
		_, err := h.Writer.WriteScalar(ctx, &servicepb.WriteScalarRequest{ExperimentId: eid})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("WriteScalar(%q): %v, want InvalidArgument", eid, err)
		}
	}
	_, err := h.Writer.WriteScalar(ctx, &servicepb.WriteScalarRequest{ExperimentId: "AAAAAAAAAAAAAAAAAAAAAA"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("a well-formed unknown experiment: %v, want NotFound", err)
	}
}
