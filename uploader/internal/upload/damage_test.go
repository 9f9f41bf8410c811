package upload

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	"github.com/tbhub/tbhub/uploader/internal/corpustest"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// damageReports records the damaged-records reports of PutRuns requests.
type damageReports struct {
	fakeExperiments
	reports []*experimentsv1.DamagedRecords
}

func (f *damageReports) PutRuns(ctx context.Context, req *experimentsv1.PutRunsRequest, opts ...grpc.CallOption) (*experimentsv1.PutRunsResponse, error) {
	if d := req.GetDamaged(); d != nil {
		f.mu.Lock()
		f.reports = append(f.reports, proto.Clone(d).(*experimentsv1.DamagedRecords))
		f.mu.Unlock()
	}
	return f.fakeExperiments.PutRuns(ctx, req, opts...)
}

// The records the uploader skips reach the server, not only the CLI: the
// corpus's damaged files (EXPECTED.json's errors: a bad data CRC, a file
// truncated in its header, one truncated mid-record) are reported as 3
// damaged records in 3 files, named RUN/FILE, once; a later pass that finds
// nothing new reports nothing.
func TestUploadReportsDamagedRecords(t *testing.T) {
	src, err := logdir.Open(t.Context(), filepath.Join(corpustest.Dir(t), "generated", "damaged"))
	if err != nil {
		t.Fatal(err)
	}
	_, writer := newFakeServer(t)
	exps := &damageReports{fakeExperiments: fakeExperiments{starts: map[string]float64{}}}
	var saved *state.State
	save := func(st *state.State) error {
		b, err := json.Marshal(st)
		if err == nil {
			saved = new(state.State)
			err = json.Unmarshal(b, saved)
		}
		return err
	}
	cfg := newConfig(src, writer, state.New("", src.String()), save)
	cfg.Experiments = exps
	u := New(cfg)
	if err := u.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	const file = "events.out.tfevents.1795331773.vm.22642.6"
	want := &experimentsv1.DamagedRecords{Records: 3, NumFiles: 3, Files: []string{"bad_data_crc/" + file, "truncated_header/" + file, "truncated_mid_record/" + file}}
	if len(exps.reports) != 1 || !proto.Equal(exps.reports[0], want) {
		t.Fatalf("damage reports %v, want one: %v", exps.reports, want)
	}
	if err := u.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(exps.reports) != 1 {
		t.Errorf("a pass that found nothing new reported again: %v", exps.reports[1:])
	}

	// Another tbup resuming from the state file does not read the bad CRC
	// record again (it is behind the saved offset), yet reports it: the
	// state keeps what was skipped before its offsets.
	cfg.State = saved
	if err := New(cfg).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if last := exps.reports[len(exps.reports)-1]; !proto.Equal(last, want) {
		t.Errorf("after resuming: reported %v, want %v", last, want)
	}
}

// A report names the first maxDamagedFiles files found and counts the rest;
// a file whose reading stopped counts once however often it is seen.
func TestDamageReportIsBounded(t *testing.T) {
	var d damage
	for i := range 150 {
		d.skipped(fileKey{"run", fmt.Sprintf("events.%03d", i)}, 2)
	}
	k := fileKey{"run", "events.000"}
	d.stopped(k)
	d.stopped(k)
	r := d.report()
	if r.GetRecords() != 301 || r.GetNumFiles() != 150 || len(r.GetFiles()) != maxDamagedFiles || r.GetFiles()[0] != "run/events.000" ||
		!slices.IsSorted(r.GetFiles()) {
		t.Errorf("report: %d records, %d files, %d named (first %q); want 301, 150, %d", r.GetRecords(), r.GetNumFiles(), len(r.GetFiles()), r.GetFiles()[0], maxDamagedFiles)
	}
}
