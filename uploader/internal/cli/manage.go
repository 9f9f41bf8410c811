package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/upload"
)

func init() {
	commands["list"] = command{"list your experiments (and, with --shared, those shared with you)", runList}
	commands["delete"] = command{"delete experiments: --experiment ID[,ID...]", runDelete}
	commands["update-metadata"] = command{"rename, re-describe or change the visibility of an experiment", runUpdateMetadata}
}

func runList(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "list", "[--json] [--shared]")
	var sf serverFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per experiment")
	shared := fs.Bool("shared", false, "list experiments shared with you instead of your own")
	if err := parse(fs, args); err != nil {
		return err
	}
	c, err := sf.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	scope := experimentsv1.ListExperimentsRequest_SCOPE_OWNED
	if *shared {
		scope = experimentsv1.ListExperimentsRequest_SCOPE_SHARED_WITH_ME
	}
	api := experimentsv1.NewExperimentServiceClient(c.conn)
	var all []*experimentsv1.Experiment
	for page := ""; ; {
		resp, err := api.ListExperiments(ctx, &experimentsv1.ListExperimentsRequest{Scope: scope, PageToken: page, PageSize: 500})
		if err != nil {
			return errors.New(client.Describe(err))
		}
		all = append(all, resp.GetExperiments()...)
		if page = resp.GetNextPageToken(); page == "" {
			break
		}
	}
	if *asJSON {
		m := protojson.MarshalOptions{UseProtoNames: true}
		for _, e := range all {
			if e.GetUrl() == "" {
				e.Url = c.info.ExperimentURL(e.GetExperimentId())
			}
			b, err := m.Marshal(e)
			if err != nil {
				return err
			}
			var compact json.RawMessage = b
			out, _ := json.Marshal(compact)
			fmt.Fprintln(env.Stdout, string(out))
		}
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tVISIBILITY\tRUNS\tTAGS\tSCALARS\tBLOBS\tUPDATED\tURL")
	for _, e := range all {
		n := e.GetCounts()
		updated := ""
		if t := e.GetUpdateTime(); t != nil {
			updated = t.AsTime().Local().Format(time.DateTime)
		}
		url := e.GetUrl()
		if url == "" {
			url = c.info.ExperimentURL(e.GetExperimentId())
		}
		vis := strings.ToLower(strings.TrimPrefix(e.GetVisibility().String(), "VISIBILITY_"))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", e.GetExperimentId(), displayName(e), vis,
			n.GetNumRuns(), n.GetNumTags(), n.GetNumScalarPoints(), n.GetNumBlobs(), updated, url)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, upload.Plural(int64(len(all)), "experiment", "experiments"))
	return nil
}

// displayName is how an experiment is named to people: its name, with
// control characters blanked, or, unnamed, its ID, as the web UI names it.
func displayName(e *experimentsv1.Experiment) string {
	if e.GetName() == "" {
		return e.GetExperimentId()
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, e.GetName())
}

func runDelete(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "delete", "--experiment ID[,ID...]")
	var sf serverFlags
	sf.register(fs)
	ids := fs.String("experiment", "", "the experiments to delete, comma-separated (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *ids == "" {
		return missing(env, fs, "--experiment is required")
	}
	c, err := sf.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	writer := servicepb.NewTensorBoardWriterServiceClient(c.conn)
	failed := 0
	for _, id := range strings.Split(*ids, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if _, err := writer.DeleteExperiment(ctx, &servicepb.DeleteExperimentRequest{ExperimentId: id}); err != nil {
			fmt.Fprintf(env.Stderr, "%s: %s\n", id, client.Describe(err))
			failed++
			continue
		}
		fmt.Fprintf(env.Stdout, "Deleted experiment %s.\n", id)
	}
	if failed > 0 {
		return fmt.Errorf("%s not deleted", upload.Plural(int64(failed), "experiment", "experiments"))
	}
	return nil
}

func runUpdateMetadata(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "update-metadata", "--experiment ID [--name N] [--description D] [--visibility V]")
	var sf serverFlags
	sf.register(fs)
	id := fs.String("experiment", "", "the experiment to change (required)")
	var md metadataFlags
	md.register(fs, "")
	name, description, visibility := &md.name, &md.description, &md.visibility
	if err := parse(fs, args); err != nil {
		return err
	}
	if *id == "" || (*name == "" && *description == "" && *visibility == "") {
		return missing(env, fs, "--experiment and at least one of --name, --description, --visibility are required")
	}
	vis, err := md.check()
	if err != nil {
		return err
	}
	c, err := sf.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	if *name != "" || *description != "" {
		if err := updateMetadata(ctx, servicepb.NewTensorBoardWriterServiceClient(c.conn), *id, *name, *description); err != nil {
			return err
		}
	}
	if *visibility != "" {
		api := experimentsv1.NewExperimentServiceClient(c.conn)
		if _, err := api.SetVisibility(ctx, &experimentsv1.SetVisibilityRequest{ExperimentId: *id, Visibility: vis}); err != nil {
			return fmt.Errorf("setting visibility: %s", client.Describe(err))
		}
	}
	fmt.Fprintf(env.Stdout, "Updated %s\n", c.info.ExperimentURL(*id))
	return nil
}
