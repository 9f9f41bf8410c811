package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/npy"
	"github.com/tbhub/tbhub/uploader/internal/upload"
)

func init() {
	commands["export"] = command{"download an experiment losslessly: --experiment ID --outdir DIR", runExport}
}

// jsonNumber keeps NaN and infinities representable, as strings, the way
// TensorBoard's JSON does.
type jsonNumber float64

func (f jsonNumber) MarshalJSON() ([]byte, error) {
	switch v := float64(f); {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return json.Marshal(float64(f))
}

type exportPoints struct {
	Steps         []int64      `json:"steps"`
	WallTimes     []jsonNumber `json:"wall_times"`
	Values        []jsonNumber `json:"values,omitempty"`
	TensorsFile   string       `json:"tensors_file_path,omitempty"`
	BlobFilePaths [][]string   `json:"blob_file_paths,omitempty"`
}

type exportLine struct {
	Run             string       `json:"run"`
	Tag             string       `json:"tag"`
	SummaryMetadata string       `json:"summary_metadata"`
	Points          exportPoints `json:"points"`
}

func seconds(ts *timestamppb.Timestamp) jsonNumber {
	return jsonNumber(float64(ts.GetSeconds()) + float64(ts.GetNanos())/1e9)
}

func runExport(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "export", "--experiment ID --outdir DIR")
	var sf serverFlags
	sf.register(fs)
	eid := fs.String("experiment", "", "the experiment to export (required)")
	outdir := fs.String("outdir", "", "directory to write experiment_ID/ into (required); files are made 0666 and directories 0777, less your umask")
	maxGrowth := fs.Float64("max-string-growth", 64, "a string tensor's .npy pads every string to its longest; one growing past this many times its strings' bytes is skipped with a warning")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *maxGrowth < 1 {
		return missing(env, fs, "--max-string-growth must be at least 1")
	}
	if *eid == "" || *outdir == "" {
		return missing(env, fs, "--experiment and --outdir are required")
	}
	c, err := sf.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	dir := filepath.Join(*outdir, "experiment_"+*eid)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists already; choose another --outdir or remove it", dir)
	}
	// Directories 0777 and files 0666, less the user's umask, as other tools
	// make them.
	for _, d := range []string{dir, filepath.Join(dir, "tensors"), filepath.Join(dir, "blobs")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return err
		}
	}
	exp, err := experimentsv1.NewExperimentServiceClient(c.conn).GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: *eid, OmitRuns: true})
	if err != nil {
		return fmt.Errorf("experiment %s: %s", *eid, client.Describe(err))
	}
	ex := &exporter{dir: dir, api: servicepb.NewTensorBoardExporterServiceClient(c.conn), warnings: env.Stderr, maxGrowth: *maxGrowth}
	if err := ex.writeMetadata(exp.GetExperiment(), c.info.ExperimentURL(*eid)); err != nil {
		return err
	}
	if err := ex.export(ctx, *eid); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Exported %d scalar, %d tensor and %d blob-sequence series (%d blobs) to %s\n", ex.scalarSeries, ex.tensorSeries, ex.blobSeries, ex.blobs, dir)
	if ex.refused > 0 {
		return fmt.Errorf("%s could not be exported (see the warnings above); everything else was", upload.Plural(int64(ex.refused), "tensor", "tensors"))
	}
	return nil
}

type exporter struct {
	dir                                    string
	api                                    servicepb.TensorBoardExporterServiceClient
	scalarSeries, tensorSeries, blobSeries int
	blobs, files                           int
	pending                                []pendingBlob // blobs to fetch after the data
	warnings                               io.Writer     // where skipped points are reported
	refused                                int           // tensors skipped: not filling their shape, or padded past maxGrowth
	maxGrowth                              float64       // --max-string-growth: the largest StringGrowth of an array written
}

func (ex *exporter) writeMetadata(e *experimentsv1.Experiment, url string) error {
	md := map[string]any{
		"experiment_id":      e.GetExperimentId(),
		"name":               e.GetName(),
		"description":        e.GetDescription(),
		"url":                url,
		"visibility":         e.GetVisibility().String(),
		"owner":              cmp.Or(e.GetOwnerEmail(), e.GetOwnerDisplayName()), // the email only for the owner
		"create_time":        e.GetCreateTime().AsTime(),
		"update_time":        e.GetUpdateTime().AsTime(),
		"num_runs":           e.GetCounts().GetNumRuns(),
		"num_tags":           e.GetCounts().GetNumTags(),
		"num_scalars":        e.GetCounts().GetNumScalarPoints(),
		"total_tensor_bytes": e.GetCounts().GetTotalTensorBytes(),
		"total_blob_bytes":   e.GetCounts().GetTotalBlobBytes(),
	}
	b, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(ex.dir, "metadata.json"), append(b, '\n'), 0o666)
}

// export streams every series. Responses for one (run, tag) arrive together, split
// into several when long; each series becomes one JSON line. A tensor series'
// arrays go to its .npz as they arrive, so memory holds one tensor, not a series.
// A tensor that does not fill its shape is reported and left out (its step with
// it, so steps[i] stays the step of arr_i) and the export goes on.
func (ex *exporter) export(ctx context.Context, eid string) error {
	open := func(name string) (*os.File, *bufio.Writer, error) {
		f, err := os.Create(filepath.Join(ex.dir, name))
		if err != nil {
			return nil, nil, err
		}
		return f, bufio.NewWriter(f), nil
	}
	outs := map[string]*bufio.Writer{}
	var files []*os.File
	for _, name := range []string{"scalars.json", "tensors.json", "blob_sequences.json"} {
		f, w, err := open(name)
		if err != nil {
			return err
		}
		files = append(files, f)
		outs[name] = w
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	stream, err := ex.api.StreamExperimentData(ctx, &servicepb.StreamExperimentDataRequest{ExperimentId: eid})
	if err != nil {
		return errors.New(client.Describe(err))
	}
	var cur *exportLine
	var curKind string
	var archive *tensorArchive // the current tensor series' .npz
	defer func() {
		if archive != nil {
			archive.f.Close()
		}
	}()
	flush := func() error {
		if cur == nil {
			return nil
		}
		switch curKind {
		case "tensors.json":
			err := archive.close()
			archive = nil
			if err != nil {
				return err
			}
			ex.tensorSeries++
		case "scalars.json":
			ex.scalarSeries++
		default:
			ex.blobSeries++
		}
		b, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		w := outs[curKind]
		w.Write(b)
		w.WriteByte('\n')
		cur = nil
		return nil
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("exporting: %s", client.Describe(err))
		}
		kind := "scalars.json"
		switch resp.GetData().(type) {
		case *servicepb.StreamExperimentDataResponse_Tensors:
			kind = "tensors.json"
		case *servicepb.StreamExperimentDataResponse_BlobSequences:
			kind = "blob_sequences.json"
		}
		if cur == nil || cur.Run != resp.GetRunName() || cur.Tag != resp.GetTagName() || curKind != kind {
			if err := flush(); err != nil {
				return err
			}
			md, _ := proto.Marshal(resp.GetTagMetadata())
			cur = &exportLine{Run: resp.GetRunName(), Tag: resp.GetTagName(), SummaryMetadata: base64.StdEncoding.EncodeToString(md)}
			curKind = kind
			if kind == "tensors.json" {
				ex.files++
				cur.Points.TensorsFile = fmt.Sprintf("tensors/%d.npz", ex.files)
				if archive, err = createArchive(filepath.Join(ex.dir, cur.Points.TensorsFile)); err != nil {
					return err
				}
			}
		}
		p := &cur.Points
		switch d := resp.GetData().(type) {
		case *servicepb.StreamExperimentDataResponse_Points:
			p.Steps = append(p.Steps, d.Points.GetSteps()...)
			for _, t := range d.Points.GetWallTimes() {
				p.WallTimes = append(p.WallTimes, seconds(t))
			}
			for _, v := range d.Points.GetValues() {
				p.Values = append(p.Values, jsonNumber(v))
			}
		case *servicepb.StreamExperimentDataResponse_Tensors:
			steps, walls := d.Tensors.GetSteps(), d.Tensors.GetWallTimes()
			for i, tp := range d.Tensors.GetValues() {
				if i >= len(steps) || i >= len(walls) {
					return fmt.Errorf("exporting %s/%s: the server sent more tensors than steps", cur.Run, cur.Tag)
				}
				a, err := npy.FromTensorProto(tp)
				if g := a.StringGrowth(); err == nil && g > ex.maxGrowth {
					err = fmt.Errorf("its strings padded to the longest would take %.0f times their bytes, over --max-string-growth %g", g, ex.maxGrowth)
				}
				if err == nil {
					err = archive.npz.Add(a)
					if err != nil {
						return fmt.Errorf("writing %s: %w", cur.Points.TensorsFile, err)
					}
				}
				if err != nil {
					ex.refused++
					fmt.Fprintf(ex.warnings, "warning: %s/%s step %d: %v; skipped\n", cur.Run, cur.Tag, steps[i], err)
					continue
				}
				p.Steps = append(p.Steps, steps[i])
				p.WallTimes = append(p.WallTimes, seconds(walls[i]))
			}
		case *servicepb.StreamExperimentDataResponse_BlobSequences:
			p.Steps = append(p.Steps, d.BlobSequences.GetSteps()...)
			for _, t := range d.BlobSequences.GetWallTimes() {
				p.WallTimes = append(p.WallTimes, seconds(t))
			}
			for _, seq := range d.BlobSequences.GetValues() {
				var paths []string
				for _, entry := range seq.GetEntries() {
					b := entry.GetBlob()
					if b == nil || b.GetState() != servicepb.BlobState_BLOB_STATE_CURRENT {
						paths = append(paths, "") // a slot never (completely) uploaded
						continue
					}
					paths = append(paths, ex.planBlob(b.GetBlobId()))
				}
				p.BlobFilePaths = append(p.BlobFilePaths, paths)
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	for _, w := range outs {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	// Blobs are fetched once the data stream is done: a second call while that
	// stream is open can wait on what the stream holds (a read transaction).
	for _, b := range ex.pending {
		if err := ex.downloadBlob(ctx, b.id, b.path); err != nil {
			return err
		}
	}
	return nil
}

// planBlob gives a blob its path in the export; it is downloaded after the data.
func (ex *exporter) planBlob(id string) string {
	ex.blobs++
	rel := fmt.Sprintf("blobs/blob_%d.bin", ex.blobs)
	ex.pending = append(ex.pending, pendingBlob{id: id, path: rel})
	return rel
}

type pendingBlob struct{ id, path string }

// downloadBlob streams one blob to rel, a path relative to the export.
func (ex *exporter) downloadBlob(ctx context.Context, id, rel string) error {
	f, err := os.Create(filepath.Join(ex.dir, rel))
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := client.StreamBlob(ctx, ex.api, id, f); err != nil {
		return err
	}
	return f.Sync()
}

// tensorArchive is the .npz file of one tensor series, written as its
// tensors arrive.
type tensorArchive struct {
	f   *os.File
	buf *bufio.Writer
	npz *npy.NPZ
}

func createArchive(path string) (*tensorArchive, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	buf := bufio.NewWriter(f)
	return &tensorArchive{f: f, buf: buf, npz: npy.NewNPZ(buf)}, nil
}

// close finishes the archive and closes its file.
func (a *tensorArchive) close() error {
	err := a.npz.Close()
	if err == nil {
		err = a.buf.Flush()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	return err
}
