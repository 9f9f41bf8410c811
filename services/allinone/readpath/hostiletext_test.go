package readpath_test

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/services/allinone/readpath"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// A hostile text series (issue 14 #3: ten texts of "[a](" × 225,000, each
// under the tensor limit) is answered without moving the texts whole
// through the read service, gRPC and the HTTP API: the read service cuts
// each string to what the text route shows (32 KiB + 1 byte) as it
// decodes the store's rows. What is left is the store reading the rows
// (two copies in SQLite's driver and database/sql). Before, the route
// also answered the whole of each text with markdown=false, and one read
// allocated about 22 times the texts' size (196 MB); now
// about 3 times (26 MB, two of them the store's).
func TestHostileTextIsReadFromBoundedMemory(t *testing.T) {
	s := startServerWith(t, readpath.Config{CacheTTL: -1})
	eid := ownedExperiment(t, s)
	const steps, size = 10, 900_000
	var tensors []*tbpb.TensorProto
	var stepNums []int64
	var walls []float64
	for i := range steps {
		text := strings.Repeat("[a](", size/4)[i:]
		tensors = append(tensors, &tbpb.TensorProto{Dtype: tbpb.DataType_DT_STRING, StringVal: [][]byte{[]byte(text)}})
		stepNums, walls = append(stepNums, int64(i)), append(walls, 1)
	}
	env := &readertest.Env{Store: s.st, Blobs: s.blobs}
	env.Tensors(t, eid, readertest.Series("r", "evil", "text", store.DataClassTensor, nil), stepNums, walls, tensors)
	tensors = nil
	// markdown=false: the same read, without renders running beside it
	// (their allocations are bounded by --markdown-max-input-bytes).
	path := "/experiment/" + eid + "/data/plugin/text/text?run=r&tag=evil&markdown=false"
	read := func() {
		t.Helper()
		r := s.do(t, http.MethodGet, path, s.token, nil)
		var got []struct{ Text string }
		if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil || len(got) != steps {
			t.Fatalf("GET %s: %d %.200s", path, r.status, r.body)
		}
		for _, e := range got {
			if !strings.Contains(e.Text, "Truncated") || len(e.Text) > 33<<10 {
				t.Fatalf("a %d-byte answer without the note: %.200s", len(e.Text), e.Text)
			}
		}
	}
	read() // warm: connections, caches
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	read()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("one read of %d × %d bytes allocated %d MB", steps, size, allocated>>20)
	if stored := uint64(steps * size); allocated > 4*stored {
		t.Errorf("one read of %d bytes of texts allocated %d bytes; the texts travel whole", stored, allocated)
	}
}
