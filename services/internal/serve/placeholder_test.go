package serve_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/serve"
)

// TestPlaceholderExperimentIsInvalid: an empty experiment id or TensorBoard's
// placeholder "defaultExperimentId" is a malformed request (INVALID_ARGUMENT), told
// apart from a missing experiment (NOT_FOUND). (Without credentials a write is
// UNAUTHENTICATED first.)
func TestPlaceholderExperimentIsInvalid(t *testing.T) {
	st, blobs := embedded(t)
	h := newHarness(t, st, blobs, nil)
	token, err := serve.IssueUserToken(t.Context(), st, h.srv.Authenticator(), "ada", "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, eid := range []string{"", "defaultExperimentId"} {
		_, err := h.writer.WriteScalar(as(t.Context(), bearer(token)), &servicepb.WriteScalarRequest{ExperimentId: eid})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("WriteScalar(%q): %v, want InvalidArgument", eid, err)
		}
	}
	_, err = h.writer.WriteScalar(as(t.Context(), bearer(token)), &servicepb.WriteScalarRequest{ExperimentId: "AAAAAAAAAAAAAAAAAAAAAA"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("a well-formed unknown experiment: %v, want NotFound", err)
	}
}
