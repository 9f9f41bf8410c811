package readpath_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The tenancy matrix over HTTP: every route, every kind of caller, every
// visibility. The expected outcome is the one tenancy's access table gives
// for a read (tenancy.Decide), translated by the API's one code → status
// mapping; the gRPC side of the same matrix is reader's
// TestTenancyMatrix.

// fixture writes one experiment with a series for every route.
func fixture(t *testing.T, s *server, owner string, vis store.Visibility) string {
	t.Helper()
	ctx := context.Background()
	eid := store.NewExperimentID()
	if err := s.st.CreateExperiment(ctx, store.Experiment{ID: eid, Name: "matrix", Owner: owner, Visibility: vis}); err != nil {
		t.Fatal(err)
	}
	env := &readertest.Env{Store: s.st, Blobs: s.blobs}
	env.Scalars(t, eid, "train", "loss", []store.ScalarPoint{{Step: 1, WallTime: 10, Value: 0.5}, {Step: 2, WallTime: 11, Value: 0.25}})
	str := func(vals ...string) *tbpb.TensorProto {
		tp := &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: &tbpb.TensorShapeProto{}}
		for _, v := range vals {
			tp.StringVal = append(tp.StringVal, []byte(v))
		}
		return tp
	}
	env.Tensors(t, eid, readertest.Series("train", "weights", "histograms", store.DataClassTensor, nil), []int64{1}, []float64{10},
		[]*tbpb.TensorProto{{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 1}, {Size: 3}}}, DoubleVal: []float64{0, 1, 3}}})
	env.Tensors(t, eid, readertest.Series("train", "pr", "pr_curves", store.DataClassTensor, nil), []int64{1}, []float64{10},
		[]*tbpb.TensorProto{{Dtype: tbpb.DataType_DT_DOUBLE, TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 6}, {Size: 1}}}, DoubleVal: []float64{1, 0, 0, 0, 1, 1}}})
	env.Tensors(t, eid, readertest.Series("train", "notes", "text", store.DataClassTensor, nil), []int64{1}, []float64{10},
		[]*tbpb.TensorProto{str("**hello** <script>alert(1)</script>")})
	png := []byte("\x89PNG\r\n\x1a\n tiny")
	env.BlobSequence(t, eid, readertest.Series("train", "digits", "images", store.DataClassBlobSequence, nil), 1, 10, [][]byte{[]byte("1"), []byte("1"), png})
	wav, _ := proto.Marshal(&tbpb.AudioPluginData{Encoding: tbpb.AudioPluginData_WAV})
	env.BlobSequence(t, eid, readertest.Series("train", "voice", "audio", store.DataClassBlobSequence, wav), 1, 10, [][]byte{[]byte("RIFF....WAVE")})
	graph, _ := proto.Marshal(&tbpb.GraphDef{Node: []*tbpb.NodeDef{{Name: "a", Op: "Const"}}})
	env.BlobSequence(t, eid, readertest.Series("train", "__run_graph__", "graphs", store.DataClassBlobSequence, nil), 0, 10, [][]byte{graph})
	rmd, _ := proto.Marshal(&tbpb.RunMetadata{})
	env.BlobSequence(t, eid, readertest.Series("train", "step1", "graph_tagged_run_metadata", store.DataClassBlobSequence, nil), 1, 10, [][]byte{rmd})
	return eid
}

// routeCases are every route, as paths under the experiment (or /api/),
// with parameters the fixture satisfies. {eid} and {blob} are filled in.
var routeCases = []struct {
	method, path string
	form         url.Values
}{
	{"GET", "/experiment/{eid}/data/environment", nil},
	{"GET", "/experiment/{eid}/data/plugins_listing", nil},
	{"GET", "/experiment/{eid}/data/runs", nil},
	{"GET", "/experiment/{eid}/data/runs?format=list", nil},
	{"GET", "/experiment/{eid}/data/experiments", nil},
	{"GET", "/experiment/{eid}/data/experiment_runs", nil},
	{"GET", "/experiment/{eid}/data/notifications", nil},
	{"GET", "/experiment/{eid}/data/logdir", nil},
	{"GET", "/experiment/{eid}/data/window_properties", nil},
	{"GET", "/experiment/{eid}/data/scalars?run=train&tag=loss", nil},
	{"GET", "/experiment/{eid}/data/scalars?run=train&tag=loss&format=csv", nil},
	{"GET", "/experiment/{eid}/data/scalars?sample_count=2", nil},
	{"GET", "/experiment/{eid}/data/histograms?run=train&tag=weights", nil},
	{"GET", "/experiment/{eid}/data/compressedHistograms?run=train&tag=weights", nil},
	{"GET", "/experiment/{eid}/data/images?run=train&tag=digits", nil},
	{"GET", "/experiment/{eid}/data/individualImage?blob_key={blob}", nil},
	{"GET", "/experiment/{eid}/data/audio?run=train&tag=voice", nil},
	{"GET", "/experiment/{eid}/data/individualAudio?blob_key={blob}&content_type=audio/wav", nil},
	{"GET", "/experiment/{eid}/data/graph?run=train", nil},
	{"GET", "/experiment/{eid}/data/run_metadata?run=train&tag=step1", nil},
	{"GET", "/experiment/{eid}/data/plugin/scalars/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/scalars/scalars?run=train&tag=loss", nil},
	{"POST", "/experiment/{eid}/data/plugin/scalars/scalars_multirun", url.Values{"tag": {"loss"}, "runs": {"train"}}},
	{"GET", "/experiment/{eid}/data/plugin/histograms/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/histograms/histograms?run=train&tag=weights", nil},
	{"GET", "/experiment/{eid}/data/plugin/distributions/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/distributions/distributions?run=train&tag=weights", nil},
	{"GET", "/experiment/{eid}/data/plugin/images/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/images/images?run=train&tag=digits", nil},
	{"GET", "/experiment/{eid}/data/plugin/images/individualImage?blob_key={blob}", nil},
	{"GET", "/experiment/{eid}/data/plugin/audio/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/audio/audio?run=train&tag=voice", nil},
	{"GET", "/experiment/{eid}/data/plugin/audio/individualAudio?blob_key={blob}&content_type=audio/wav", nil},
	{"GET", "/experiment/{eid}/data/plugin/text/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/text/text?run=train&tag=notes", nil},
	{"GET", "/experiment/{eid}/data/plugin/graphs/info", nil},
	{"GET", "/experiment/{eid}/data/plugin/graphs/graph?run=train", nil},
	{"GET", "/experiment/{eid}/data/plugin/graphs/run_metadata?run=train&tag=step1", nil},
	{"GET", "/experiment/{eid}/data/plugin/pr_curves/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/pr_curves/pr_curves?run=train&tag=pr", nil},
	{"GET", "/experiment/{eid}/data/plugin/custom_scalars/layout", nil},
	{"GET", "/experiment/{eid}/data/plugin/custom_scalars/scalars?run=train&tag=lo.*", nil},
	{"GET", "/experiment/{eid}/data/plugin/custom_scalars/download_data?run=train&tag=loss", nil},
	{"GET", "/experiment/{eid}/data/plugin/hparams/download_data?format=json", nil},
	{"GET", "/experiment/{eid}/data/plugin/hparams/experiment", nil},
	{"POST", "/experiment/{eid}/data/plugin/hparams/session_groups", nil},
	{"GET", "/experiment/{eid}/data/plugin/hparams/metric_evals?request=%7B%22sessionName%22%3A%22train%22%2C%22metricName%22%3A%7B%22tag%22%3A%22loss%22%7D%7D", nil},
	{"GET", "/experiment/{eid}/data/plugin/mesh/tags", nil},
	{"GET", "/experiment/{eid}/data/plugin/mesh/meshes?run=train&tag=m", nil},
	{"GET", "/experiment/{eid}/data/plugin/timeseries/tags", nil},
	{"POST", "/experiment/{eid}/data/plugin/timeseries/timeSeries", url.Values{"requests": {`[{"plugin":"scalars","tag":"loss"}]`}}},
	{"GET", "/experiment/{eid}/data/plugin/timeseries/imageData?imageId={blob}", nil},
	{"GET", "/api/experiments/{eid}", nil},
	{"GET", "/api/experiments/{eid}/scalars?run=train&tag=loss", nil},
	{"GET", "/api/experiments/{eid}/tensors?run=train&tag=weights&plugin=histograms", nil},
}

func fill(path, eid, blobKey string) string {
	return strings.NewReplacer("{eid}", eid, "{blob}", url.QueryEscape(blobKey)).Replace(path)
}

func statusOfOutcome(o tenancy.Outcome) int {
	switch o {
	case tenancy.Allow:
		return http.StatusOK
	case tenancy.NotFound:
		return http.StatusNotFound
	case tenancy.Unauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusForbidden
}

func TestTenancyMatrixHTTP(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	owner, err := s.st.GetUserByName(ctx, "researcher")
	if err != nil {
		t.Fatal(err)
	}
	token := func(name string, scopes store.TokenScopes) (string, string) {
		u, _, err := serve.EnsureUser(ctx, s.st, name)
		if err != nil {
			t.Fatal(err)
		}
		_, secret, err := s.srv.Authenticator().IssueToken(ctx, u.ID, "", "matrix", scopes, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return u.ID, secret
	}
	granteeID, granteeTok := token("grantee", store.AllScopes)
	otherID, otherTok := token("other", store.AllScopes)
	_, uploadOnly := token("researcher", store.ScopeUpload)
	callers := []struct {
		name, token string
		p           *auth.Principal
	}{
		{"anonymous", "", nil},
		{"owner", s.token, &auth.Principal{UserID: owner.ID, Scopes: store.AllScopes}},
		{"owner-upload-only", uploadOnly, &auth.Principal{UserID: owner.ID, Scopes: store.ScopeUpload}},
		{"grantee", granteeTok, &auth.Principal{UserID: granteeID, Scopes: store.AllScopes}},
		{"other", otherTok, &auth.Principal{UserID: otherID, Scopes: store.AllScopes}},
		{"invalid", auth.TokenPrefix + "forged", nil},
	}
	for _, vis := range []store.Visibility{store.VisibilityPrivate, store.VisibilityUnlisted, store.VisibilityPublic} {
		eid := fixture(t, s, owner.ID, vis)
		if err := s.st.GrantRead(ctx, eid, granteeID); err != nil {
			t.Fatal(err)
		}
		e, err := s.st.GetExperiment(ctx, eid)
		if err != nil {
			t.Fatal(err)
		}
		var images []struct{ Query string }
		s.getJSON(t, "/experiment/"+eid+"/data/plugin/images/images?run=train&tag=digits", &images)
		if len(images) != 1 {
			t.Fatalf("fixture images: %v", images)
		}
		qv, _ := url.ParseQuery(images[0].Query)
		blobKey := qv.Get("blob_key")
		for _, c := range callers {
			want := statusOfOutcome(tenancy.Decide(tenancy.OpRead, c.p, &e))
			if c.name == "invalid" {
				want = http.StatusUnauthorized
			}
			for _, rc := range routeCases {
				path := fill(rc.path, eid, blobKey)
				r := s.do(t, rc.method, path, c.token, rc.form)
				if r.status != want {
					t.Errorf("%s %s %s on %s: %d %.120s, want %d", c.name, rc.method, path, vis, r.status, r.body, want)
				}
			}
		}
	}

	// A private experiment and a missing one answer alike: same status,
	// same body, on every route.
	private := fixture(t, s, owner.ID, store.VisibilityPrivate)
	missing := store.NewExperimentID()
	for _, tok := range []string{"", otherTok} {
		for _, rc := range routeCases {
			a := s.do(t, rc.method, fill(rc.path, private, ""), tok, rc.form)
			b := s.do(t, rc.method, fill(rc.path, missing, ""), tok, rc.form)
			if a.status != b.status || string(a.body) != string(b.body) {
				t.Errorf("%s %s: private %d %q, missing %d %q", rc.method, rc.path, a.status, a.body, b.status, b.body)
			}
		}
	}

	// The text route's markdown is sanitized.
	var text []struct{ Text string }
	s.getJSON(t, "/experiment/"+private+"/data/plugin/text/text?run=train&tag=notes", &text)
	if len(text) != 1 || strings.Contains(text[0].Text, "<script") || !strings.Contains(text[0].Text, "<strong>hello</strong>") {
		t.Errorf("text = %q", text)
	}
}
