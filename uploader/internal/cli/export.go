package cli

import (
	"bufio"
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
	outdir := fs.String("outdir", "", "directory to write experiment_ID/ into (required)")
	if err := parse(fs, args); err != nil {
		return err
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
	for _, d := range []string{dir, filepath.Join(dir, "tensors"), filepath.Join(dir, "blobs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	exp, err := experimentsv1.NewExperimentServiceClient(c.conn).GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: *eid, OmitRuns: true})
	if err != nil {
		return fmt.Errorf("experiment %s: %s", *eid, client.Describe(err))
	}
	ex := &exporter{dir: dir, api: servicepb.NewTensorBoardExporterServiceClient(c.conn)}
	if err := ex.writeMetadata(exp.GetExperiment(), c.info.ExperimentURL(*eid)); err != nil {
		return err
	}
	if err := ex.export(ctx, *eid); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Exported %d scalar, %d tensor and %d blob-sequence series (%d blobs) to %s\n", ex.scalarSeries, ex.tensorSeries, ex.blobSeries, ex.blobs, dir)
	return nil
}

type exporter struct {
	dir                                    string
	api                                    servicepb.TensorBoardExporterServiceClient
	scalarSeries, tensorSeries, blobSeries int
	blobs, files                           int
	pending                                []pendingBlob // blobs to fetch after the data
}

func (ex *exporter) writeMetadata(e *experimentsv1.Experiment, url string) error {
	md := map[string]any{
		"experiment_id":      e.GetExperimentId(),
		"name":               e.GetName(),
		"description":        e.GetDescription(),
		"url":                url,
		"visibility":         e.GetVisibility().String(),
		"owner":              e.GetOwnerEmail(),
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
	return os.WriteFile(filepath.Join(ex.dir, "metadata.json"), append(b, '\n'), 0o644)
}

// export streams every series. Responses for one (run, tag) arrive together, split
// into several when long; each series becomes one JSON line.
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
	var tensors []npy.Array
	flush := func() error {
		if cur == nil {
			return nil
		}
		switch curKind {
		case "tensors.json":
			ex.files++
			cur.Points.TensorsFile = fmt.Sprintf("tensors/%d.npz", ex.files)
			f, err := os.Create(filepath.Join(ex.dir, cur.Points.TensorsFile))
			if err != nil {
				return err
			}
			err = npy.WriteNPZ(f, tensors)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
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
		cur, tensors = nil, nil
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
			p.Steps = append(p.Steps, d.Tensors.GetSteps()...)
			for _, t := range d.Tensors.GetWallTimes() {
				p.WallTimes = append(p.WallTimes, seconds(t))
			}
			for i, tp := range d.Tensors.GetValues() {
				a, err := npy.FromTensorProto(tp)
				if err != nil {
					return fmt.Errorf("%s/%s step %d: %v", cur.Run, cur.Tag, d.Tensors.GetSteps()[i], err)
				}
				tensors = append(tensors, a)
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
