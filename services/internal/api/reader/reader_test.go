package reader_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/readhint"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/policy/auth"
	"github.com/tbhub/tbhub/services/internal/policy/tenancy"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func newEmbedded(t *testing.T, cfg reader.Config) *readertest.Env {
	st, bs := readertest.OpenEmbedded(t)
	return readertest.Start(t, st, st, bs, cfg)
}

func TestCompatEmbedded(t *testing.T) {
	t.Parallel()
	readertest.RunCompat(t, func(t *testing.T) *readertest.Env {
		return newEmbedded(t, reader.Config{BlobChunkBytes: 5})
	})
}

// Every RPC, every caller, every visibility: the outcome is the one the
// tenancy table (tenancy.Decide) gives for a read.
func TestTenancyMatrix(t *testing.T) {
	t.Parallel()
	env := newEmbedded(t, reader.Config{})
	ownerID, ownerTok := env.User(t, "owner")
	readerID, readerTok := env.User(t, "grantee")
	otherID, otherTok := env.User(t, "other")
	_, uploadOnlyTok := env.UserWithScopes(t, "owner", store.ScopeUpload)
	_, readOnlyTok := env.UserWithScopes(t, "owner", store.ScopeRead)
	callers := []struct {
		name  string
		token string
		p     *auth.Principal
	}{
		{"anonymous", "", nil},
		{"owner", ownerTok, &auth.Principal{UserID: ownerID, Scopes: store.AllScopes}},
		{"owner-read-only", readOnlyTok, &auth.Principal{UserID: ownerID, Scopes: store.ScopeRead}},
		{"owner-upload-only", uploadOnlyTok, &auth.Principal{UserID: ownerID, Scopes: store.ScopeUpload}},
		{"grantee", readerTok, &auth.Principal{UserID: readerID, Scopes: store.AllScopes}},
		{"other", otherTok, &auth.Principal{UserID: otherID, Scopes: store.AllScopes}},
		{"invalid-token", auth.TokenPrefix + "not-a-real-token", nil},
	}
	outcomeCode := map[tenancy.Outcome]codes.Code{
		tenancy.Allow: codes.OK, tenancy.NotFound: codes.NotFound,
		tenancy.PermissionDenied: codes.PermissionDenied, tenancy.Unauthenticated: codes.Unauthenticated,
	}
	for _, vis := range []store.Visibility{store.VisibilityPrivate, store.VisibilityUnlisted, store.VisibilityPublic} {
		eid := env.Experiment(t, ownerID, vis)
		if err := env.Store.GrantRead(context.Background(), eid, readerID); err != nil {
			t.Fatal(err)
		}
		env.Scalars(t, eid, "r", "t", []store.ScalarPoint{{Step: 1, WallTime: 1, Value: 1}})
		img := readertest.Series("r", "img", "images", store.DataClassBlobSequence, nil)
		env.BlobSequence(t, eid, img, 1, 1, [][]byte{[]byte("1"), []byte("1"), []byte("png")})
		e, err := env.Store.GetExperiment(context.Background(), eid)
		if err != nil {
			t.Fatal(err)
		}
		// A blob key, issued to the owner.
		ownerCtx := readertest.WithToken(context.Background(), ownerTok)
		bs, err := env.Client.ReadBlobSequences(ownerCtx, &datapb.ReadBlobSequencesRequest{
			ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "images"}, Downsample: &datapb.Downsample{NumPoints: 1}})
		if err != nil {
			t.Fatal(err)
		}
		key := bs.GetRuns()[0].GetTags()[0].GetData().GetValues()[0].GetBlobRefs()[2].GetBlobKey()

		for _, caller := range callers {
			want := outcomeCode[tenancy.Decide(tenancy.OpRead, caller.p, &e)]
			if caller.name == "invalid-token" {
				want = codes.Unauthenticated
			}
			ctx := readertest.WithToken(context.Background(), caller.token)
			for name, err := range readCalls(ctx, env.Client, eid, key) {
				if got := status.Code(err); got != want {
					t.Errorf("%s %s on %s experiment: %v, want %v", caller.name, name, vis, err, want)
				}
			}
		}
	}
}

// readCalls makes one call of each of the ten RPCs on eid.
func readCalls(ctx context.Context, c datapb.TensorBoardDataProviderClient, eid, blobKey string) map[string]error {
	pf := &datapb.PluginFilter{PluginName: "scalars"}
	ds := &datapb.Downsample{NumPoints: 10}
	errs := map[string]error{}
	_, errs["GetExperiment"] = c.GetExperiment(ctx, &datapb.GetExperimentRequest{ExperimentId: eid})
	_, errs["ListPlugins"] = c.ListPlugins(ctx, &datapb.ListPluginsRequest{ExperimentId: eid})
	_, errs["ListRuns"] = c.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: eid})
	_, errs["ListScalars"] = c.ListScalars(ctx, &datapb.ListScalarsRequest{ExperimentId: eid, PluginFilter: pf})
	_, errs["ReadScalars"] = c.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: eid, PluginFilter: pf, Downsample: ds})
	_, errs["ListTensors"] = c.ListTensors(ctx, &datapb.ListTensorsRequest{ExperimentId: eid, PluginFilter: pf})
	_, errs["ReadTensors"] = c.ReadTensors(ctx, &datapb.ReadTensorsRequest{ExperimentId: eid, PluginFilter: pf, Downsample: ds})
	_, errs["ListBlobSequences"] = c.ListBlobSequences(ctx, &datapb.ListBlobSequencesRequest{ExperimentId: eid, PluginFilter: pf})
	_, errs["ReadBlobSequences"] = c.ReadBlobSequences(ctx, &datapb.ReadBlobSequencesRequest{ExperimentId: eid, PluginFilter: pf, Downsample: ds})
	_, _, errs["ReadBlob"] = readertest.ReadBlob(ctx, c, blobKey)
	return errs
}

// A blob key names its experiment: handing a key of a private experiment
// to someone else gets NOT_FOUND, and grafting the key's tail onto another
// experiment's ID fails the MAC.
func TestBlobKeysAreBoundToTheirExperiment(t *testing.T) {
	t.Parallel()
	env := newEmbedded(t, reader.Config{})
	alice, aliceTok := env.User(t, "alice")
	_, bobTok := env.User(t, "bob")
	private := env.Experiment(t, alice, store.VisibilityPrivate)
	public := env.Experiment(t, alice, store.VisibilityPublic)
	img := readertest.Series("r", "img", "images", store.DataClassBlobSequence, nil)
	env.BlobSequence(t, private, img, 1, 1, [][]byte{[]byte("secret")})
	env.BlobSequence(t, public, img, 1, 1, [][]byte{[]byte("public")})

	keyOf := func(eid string) string {
		resp, err := env.Client.ReadBlobSequences(readertest.WithToken(context.Background(), aliceTok), &datapb.ReadBlobSequencesRequest{
			ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "images"}, Downsample: &datapb.Downsample{NumPoints: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetRuns()[0].GetTags()[0].GetData().GetValues()[0].GetBlobRefs()[0].GetBlobKey()
	}
	privKey, pubKey := keyOf(private), keyOf(public)
	bob := readertest.WithToken(context.Background(), bobTok)
	if got, _, err := readertest.ReadBlob(bob, env.Client, pubKey); err != nil || string(got) != "public" {
		t.Errorf("bob reads the public blob: %q, %v", got, err)
	}
	if _, _, err := readertest.ReadBlob(bob, env.Client, privKey); status.Code(err) != codes.NotFound {
		t.Errorf("bob reads the private blob: %v, want NotFound", err)
	}
	grafted := public + strings.TrimPrefix(privKey, private)
	if _, _, err := readertest.ReadBlob(bob, env.Client, grafted); status.Code(err) != codes.InvalidArgument {
		t.Errorf("grafted key: %v, want InvalidArgument", err)
	}
	// Keys are URL-safe as they are.
	for _, r := range privKey {
		if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.", r) {
			t.Fatalf("key %q has %q", privKey, r)
		}
	}
	// Another server (another secret) does not accept the key.
	other := readertest.Start(t, env.Store, env.IDs, env.Blobs, reader.Config{})
	if _, _, err := readertest.ReadBlob(readertest.WithToken(context.Background(), aliceTok), other.Client, privKey); status.Code(err) != codes.InvalidArgument {
		t.Errorf("key from another secret: %v, want InvalidArgument", err)
	}
}

func TestBoundExperiment(t *testing.T) {
	t.Parallel()
	st, bs := readertest.OpenEmbedded(t)
	setup := readertest.Start(t, st, st, bs, reader.Config{})
	owner, tok := setup.User(t, "owner")
	eid := setup.Experiment(t, owner, store.VisibilityPrivate)
	setup.Scalars(t, eid, "train", "loss", []store.ScalarPoint{{Step: 3, WallTime: 5, Value: 1}})

	bound := readertest.Start(t, st, st, bs, reader.Config{BoundExperiment: eid})
	ctx := readertest.WithToken(context.Background(), tok)
	for _, id := range []string{"", reader.DefaultExperimentID, eid} {
		resp, err := bound.Client.ListRuns(ctx, &datapb.ListRunsRequest{ExperimentId: id})
		if err != nil || len(resp.GetRuns()) != 1 || resp.GetRuns()[0].GetName() != "train" {
			t.Errorf("bound ListRuns(%q) = %v, %v", id, resp, err)
		}
	}
	// The binding does not bypass the access check.
	if _, err := bound.Client.ListRuns(context.Background(), &datapb.ListRunsRequest{}); status.Code(err) != codes.NotFound {
		t.Errorf("anonymous on bound private experiment: %v, want NotFound", err)
	}
	if _, err := reader.New(st, bs, reader.Config{BlobKeySecret: reader.RandomSecret(), BoundExperiment: "nope"}); err == nil {
		t.Error("reader.New accepted a malformed bound experiment")
	}
}

func TestResponseBound(t *testing.T) {
	t.Parallel()
	env := newEmbedded(t, reader.Config{MaxResponsePoints: 25})
	owner, tok := env.User(t, "owner")
	eid := env.Experiment(t, owner, store.VisibilityPrivate)
	var pts []store.ScalarPoint
	for i := range 20 {
		pts = append(pts, store.ScalarPoint{Step: int64(i), WallTime: 1, Value: 1})
	}
	env.Scalars(t, eid, "a", "x", pts)
	env.Scalars(t, eid, "b", "x", pts)
	ctx := readertest.WithToken(context.Background(), tok)
	read := func(k int64) error {
		_, err := env.Client.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: eid,
			PluginFilter: &datapb.PluginFilter{PluginName: "scalars"}, Downsample: &datapb.Downsample{NumPoints: k}})
		return err
	}
	if err := read(12); err != nil {
		t.Errorf("2 series × 12 points: %v", err)
	}
	err := read(13)
	if status.Code(err) != codes.OutOfRange || !strings.Contains(status.Convert(err).Message(), "num_points") {
		t.Errorf("2 series × 13 points over a bound of 25: %v, want OutOfRange naming num_points", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	st, bs := readertest.OpenEmbedded(t)
	for name, cfg := range map[string]reader.Config{
		"no secret":           {},
		"short secret":        {BlobKeySecret: []byte("short")},
		"origin with a slash": {BlobKeySecret: reader.RandomSecret(), PublicOrigin: "http://x/"},
	} {
		if _, err := reader.New(st, bs, cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A key names content: once the step is uploaded again with other bytes,
// the old key is NOT_FOUND and the new listing gives a key that reads the
// new bytes, so a client may cache a key's bytes forever.
func TestBlobKeyNamesContent(t *testing.T) {
	t.Parallel()
	env := newEmbedded(t, reader.Config{})
	owner, tok := env.User(t, "owner")
	eid := env.Experiment(t, owner, store.VisibilityPrivate)
	ctx := readertest.WithToken(context.Background(), tok)
	img := readertest.Series("r", "img", "images", store.DataClassBlobSequence, nil)
	key := func() string {
		resp, err := env.Client.ReadBlobSequences(ctx, &datapb.ReadBlobSequencesRequest{
			ExperimentId: eid, PluginFilter: &datapb.PluginFilter{PluginName: "images"}, Downsample: &datapb.Downsample{NumPoints: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetRuns()[0].GetTags()[0].GetData().GetValues()[0].GetBlobRefs()[0].GetBlobKey()
	}
	env.BlobSequence(t, eid, img, 1, 1, [][]byte{[]byte("first")})
	old := key()
	env.BlobSequence(t, eid, img, 1, 1, [][]byte{[]byte("second")})
	if _, _, err := readertest.ReadBlob(ctx, env.Client, old); status.Code(err) != codes.NotFound {
		t.Errorf("old key after a rewrite: %v, want NotFound", err)
	}
	if got, _, err := readertest.ReadBlob(ctx, env.Client, key()); err != nil || string(got) != "second" {
		t.Errorf("new key: %q, %v", got, err)
	}
}

// With the readhint.MaxStringBytesKey hint, ReadTensors sends at most that
// many bytes of each string (a hostile 900 KB text summary travels as its
// first bytes); without it, strings whole, as TensorBoard expects. Other
// fields of the tensor are kept.
func TestReadTensorsCutsStringsWhenAsked(t *testing.T) {
	t.Parallel()
	env := newEmbedded(t, reader.Config{})
	owner, tok := env.User(t, "owner")
	eid := env.Experiment(t, owner, store.VisibilityPrivate)
	long, short := strings.Repeat(">", 900_000), "*short*"
	shape := &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 2}}}
	var tensors []*tbpb.TensorProto
	var steps []int64
	var walls []float64
	for i := range 10 {
		tensors = append(tensors, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, TensorShape: shape,
			StringVal: [][]byte{[]byte(long[i:]), []byte(short)}})
		steps, walls = append(steps, int64(i)), append(walls, 1)
	}
	env.Tensors(t, eid, readertest.Series("r", "evil", "text", store.DataClassTensor, nil), steps, walls, tensors)
	read := func(ctx context.Context) *datapb.ReadTensorsResponse {
		t.Helper()
		resp, err := env.Client.ReadTensors(ctx, &datapb.ReadTensorsRequest{ExperimentId: eid,
			PluginFilter: &datapb.PluginFilter{PluginName: "text"}, Downsample: &datapb.Downsample{NumPoints: 100}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ctx := readertest.WithToken(context.Background(), tok)
	whole := read(ctx)
	cut := read(readhint.WithMaxStringBytes(ctx, 1001))
	if n := proto.Size(cut); n > 10*(1001+100) {
		t.Errorf("the cut answer is %d bytes; 10 strings of at most 1001 bytes were asked for", n)
	}
	for i, v := range cut.GetRuns()[0].GetTags()[0].GetData().GetValue() {
		want := proto.Clone(tensors[i]).(*tbpb.TensorProto)
		want.StringVal[0] = want.StringVal[0][:1001]
		if !proto.Equal(v, want) {
			t.Errorf("step %d cut: %.100v", i, v)
		}
		if w := whole.GetRuns()[0].GetTags()[0].GetData().GetValue()[i]; !proto.Equal(w, tensors[i]) {
			t.Errorf("step %d without the hint: %d bytes, want the stored tensor", i, proto.Size(w))
		}
	}
}
