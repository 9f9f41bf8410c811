package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/schemas/writehint"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/state"
	"github.com/tbhub/tbhub/uploader/internal/upload"
)

// DefaultServer is where tbup uploads unless told otherwise: a `tbhub serve` on
// this machine.
const DefaultServer = "http://localhost:6006"

// serverFlags are the flags every command that talks to a server takes.
type serverFlags struct {
	server string
	token  string
}

func (sf *serverFlags) register(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&sf.server, "server", "", "the tbhub server's URL (default $TBUP_SERVER, else the server of the last 'tbup auth login', else "+DefaultServer+")")
	fs.StringVar(&sf.token, "token", "", "an API token (default $TBUP_TOKEN, else the credentials of 'tbup auth login')")
}

// resolve fills server and token from the environment and stored credentials.
// The server is the flag's, else $TBUP_SERVER, else the one 'tbup auth login'
// remembered, else DefaultServer.
func (sf *serverFlags) resolve(ctx context.Context, env Env) error {
	var creds *credentials
	var credsErr error
	if sf.server == "" {
		sf.server = env.Getenv("TBUP_SERVER")
	}
	if sf.server == "" {
		// A damaged file is reported below, when a token is wanted from it.
		if creds, credsErr = loadCredentials(env); credsErr == nil {
			sf.server = creds.Server
		}
	}
	if sf.server == "" {
		sf.server = DefaultServer
	}
	sf.server = strings.TrimRight(sf.server, "/")
	if sf.token == "" {
		sf.token = env.Getenv("TBUP_TOKEN")
	}
	if sf.token != "" {
		return nil
	}
	if creds == nil && credsErr == nil {
		creds, credsErr = loadCredentials(env)
	}
	if credsErr != nil {
		return credsErr
	}
	var err error
	sf.token, err = creds.tokenFor(ctx, env, sf.server)
	return err
}

// connection is a handshaken, dialled server.
type connection struct {
	info *client.ServerInfo
	conn *grpc.ClientConn
}

func (sf *serverFlags) connect(ctx context.Context, env Env, plugins []string) (*connection, error) {
	if err := sf.resolve(ctx, env); err != nil {
		return nil, err
	}
	info, err := client.Handshake(ctx, http.DefaultClient, sf.server, plugins)
	if err != nil {
		return nil, err
	}
	if info.Warning != "" {
		fmt.Fprintf(env.Stderr, "Note from the server: %s\n", info.Warning)
	}
	conn, err := dialEndpoint(info.Endpoint, *sf)
	if err != nil {
		return nil, err
	}
	return &connection{info: info, conn: conn}, nil
}

// dialEndpoint connects to a gRPC endpoint of the server with the user's token,
// over TLS when the server's URL is https.
func dialEndpoint(endpoint string, sf serverFlags) (*grpc.ClientConn, error) {
	conn, err := client.Dial(endpoint, strings.HasPrefix(sf.server, "https://"), sf.token)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	return conn, nil
}

// metadataFlags are an experiment's name, description and visibility.
type metadataFlags struct{ name, description, visibility string }

func (m *metadataFlags) register(fs *flag.FlagSet, visibilityNote string) {
	fs.StringVar(&m.name, "name", "", "experiment name (at most 100 characters; a new experiment without one is named after the logdir's folder)")
	fs.StringVar(&m.description, "description", "", "experiment description, markdown (at most 600 characters)")
	fs.StringVar(&m.visibility, "visibility", "", "private, unlisted or public "+visibilityNote)
}

// check validates the flags and returns the visibility (unspecified if not given).
func (m *metadataFlags) check() (experimentsv1.Visibility, error) {
	vis, ok := visibilities[m.visibility]
	if m.visibility != "" && !ok {
		return vis, fmt.Errorf("--visibility must be private, unlisted or public, not %q", m.visibility)
	}
	if len([]rune(m.name)) > 100 || len([]rune(m.description)) > 600 {
		return vis, errors.New("--name is limited to 100 characters and --description to 600")
	}
	return vis, nil
}

var visibilities = map[string]experimentsv1.Visibility{
	"private":  experimentsv1.Visibility_VISIBILITY_PRIVATE,
	"unlisted": experimentsv1.Visibility_VISIBILITY_UNLISTED,
	"public":   experimentsv1.Visibility_VISIBILITY_PUBLIC,
}

func runUpload(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "upload", "[--logdir] DIR|gs://BUCKET/PREFIX [flags]")
	var sf serverFlags
	sf.register(fs)
	dir := fs.String("logdir", "", "the log directory to upload: a local path or gs://bucket/prefix")
	graph := fs.String("graph", "", "instead of a logdir, upload a model graph: a GraphDef file, binary (.pb) or text format (.pbtxt)")
	var md metadataFlags
	md.register(fs, "(new experiments are private)")
	name, description, visibility := &md.name, &md.description, &md.visibility
	experimentID := fs.String("experiment", "", "continue this experiment instead of the one this logdir was last uploaded to")
	plugins := fs.String("plugins", "", "comma-separated plugins to upload (default: all the server accepts)")
	oneShot := fs.Bool("one-shot", false, "upload what is there now and exit, instead of watching the logdir")
	dryRun := fs.Bool("dry-run", false, "read everything and report what would be sent, without a server")
	asJSON := fs.Bool("json", false, "print one JSON object at the end: experiment_id, url, scalars, tensors, blobs, blob_bytes")
	verbose := fs.Bool("verbose", false, "report every skipped series")
	quiet := fs.Bool("quiet", false, "print warnings and the experiment URL only")
	poll := fs.Duration("poll", 5*time.Second, "how often a continuous upload looks for new data (a local logdir is also read at once when its files change)")
	inFlight := fs.Int("parallel", 4, "requests in flight at once")
	allowEmpty := fs.Bool("allow-empty", false, "create the experiment even if the logdir holds no event files yet")
	verifyAfter := fs.Bool("verify", false, "with --one-shot: then compare the logdir with the experiment as 'tbup verify' does, and exit non-zero on a difference")
	positional, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(positional) == 1 {
		if *dir != "" && !sameLogdir(*dir, positional[0]) {
			return fmt.Errorf("two logdirs given, %s and --logdir %s: give one", positional[0], *dir)
		}
		*dir = positional[0]
	}
	if *verifyAfter && (!*oneShot && *graph == "" || *dryRun) {
		return missing(env, fs, "--verify needs --one-shot (and a server: not with --dry-run)")
	}
	if (*dir == "") == (*graph == "") {
		return missing(env, fs, "give either a logdir (tbup upload DIR, or --logdir DIR) or --graph")
	}
	vis, err := md.check()
	if err != nil {
		return err
	}
	var src logdir.Source
	if *graph != "" {
		src, err = graphSource(*graph)
		*oneShot = true // a model file does not grow
	} else {
		src, err = logdir.Open(ctx, *dir)
	}
	if err != nil {
		return err
	}
	prog := &upload.Progress{Out: env.Stderr, TTY: isTerminal(env.Stderr), Width: terminalWidth(env.Stderr), Quiet: *quiet, Verbose: *verbose}
	var wanted []string
	if *plugins != "" {
		wanted = strings.Split(*plugins, ",")
	}
	if *dryRun {
		return dryRunUpload(ctx, env, src, wanted, prog, *asJSON)
	}
	if *graph == "" && !*allowEmpty {
		if found, err := waitForEventFiles(ctx, env, src, *oneShot, *poll); err != nil || !found {
			return err
		}
	}

	c, err := sf.connect(ctx, env, wanted)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	writer := servicepb.NewTensorBoardWriterServiceClient(c.conn)
	experiments := experimentsv1.NewExperimentServiceClient(c.conn)

	allowed := map[string]bool{}
	for _, p := range c.info.AllowedPlugins {
		if len(wanted) == 0 || contains(wanted, p) {
			allowed[p] = true
		}
	}
	stateDir, err := state.DefaultDir()
	if err != nil {
		return err
	}
	logdirKey := src.String()
	if abs, err := filepath.Abs(*dir); err == nil && *dir != "" && !strings.HasPrefix(*dir, "gs://") {
		logdirKey = abs
	}
	statePath := state.Path(stateDir, sf.server, logdirKey)
	st, err := state.Load(statePath)
	if err != nil {
		return err
	}
	if st == nil {
		st = state.New(sf.server, logdirKey)
	}
	save := func(s *state.State) error { return state.Save(statePath, s) }

	crash, err := crashHook(env.Getenv("TBUP_CRASH_AT"))
	if err != nil {
		return err
	}
	retry := client.DefaultRetry
	newName := ""
	if *graph == "" {
		newName = logdirName(*dir)
	}
	eid, err := chooseExperiment(ctx, env, writer, experiments, st, save, *experimentID, *name, newName, *description, sayRetries(env, retry))
	if err != nil {
		return err
	}
	if err := save(st); err != nil {
		return err
	}
	if *visibility != "" {
		if _, err := experiments.SetVisibility(ctx, &experimentsv1.SetVisibilityRequest{ExperimentId: eid, Visibility: vis}); err != nil {
			return fmt.Errorf("setting visibility: %s", client.Describe(err))
		}
	}
	url := c.info.ExperimentURL(eid)
	if !*asJSON || !*quiet {
		fmt.Fprintf(env.Stderr, "Experiment: %s\n", url)
	}
	if !*oneShot {
		prog.Printf("Uploading %s and watching it for new data; press Ctrl-C to stop.", src)
	}
	up := upload.New(upload.Config{
		Source:       src,
		Writer:       writer,
		Experiments:  experiments,
		ExperimentID: eid,
		Limits:       c.info.Limits,
		Plugins:      allowed,
		State:        st,
		SaveState:    save,
		OneShot:      *oneShot,
		Poll:         *poll,
		Retry:        retry,
		InFlight:     *inFlight,
		Progress:     prog,
		Crash:        crash,
	})
	prog.Start()
	runErr := up.Run(ctx)
	prog.Stop()
	if ctx.Err() != nil && runErr == nil {
		fmt.Fprintln(env.Stderr, "Interrupted; everything read so far was sent. Run the same command to continue.")
	}
	if runErr == nil && ctx.Err() == nil && !*quiet {
		// The counts above are of points sent; say what was kept.
		if err := reportStored(ctx, env.Stderr, experiments, eid); err != nil {
			fmt.Fprintf(env.Stderr, "tbup: %v\n", err)
		}
	}
	fmt.Fprintf(env.Stderr, "Experiment: %s\n", url)
	if *asJSON {
		if err := json.NewEncoder(env.Stdout).Encode(up.Summary(url)); err != nil {
			return err
		}
	}
	if runErr == nil && *verifyAfter && ctx.Err() == nil {
		out := env.Stdout
		if *asJSON {
			out = env.Stderr // stdout holds the one JSON object
		}
		return verifyExperiment(ctx, env, out, c, src, eid, wanted, 0) // as the upload read it
	}
	return runErr
}

// sameLogdir says whether two spellings name the same logdir: equal once
// cleaned, or, for local paths, as absolute paths.
func sameLogdir(a, b string) bool {
	if strings.HasPrefix(a, "gs://") || strings.HasPrefix(b, "gs://") {
		return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// chooseExperiment continues the experiment named by --experiment or by the state
// file, or creates one, and leaves its ID in the state. name (--name) renames
// a continued experiment; a created one without it is named newName (the
// logdir's folder). A create carries a
// request ID that is saved in the state (with save) before the first
// attempt and kept until the server answers, so a retry whose first answer
// was lost, or a later tbup after one killed meanwhile, gets the same
// experiment instead of a second one (package schemas/writehint).
func chooseExperiment(ctx context.Context, env Env, writer servicepb.TensorBoardWriterServiceClient, experiments experimentsv1.ExperimentServiceClient,
	st *state.State, save func(*state.State) error, requested, name, newName, description string, retry client.Retry) (string, error) {
	eid := requested
	if eid == "" {
		eid = st.ExperimentID
	}
	if eid != "" {
		err := retry.Do(ctx, func(ctx context.Context) error {
			_, err := experiments.ContinueExperiment(ctx, &experimentsv1.ContinueExperimentRequest{ExperimentId: eid})
			return err
		})
		switch {
		case err == nil:
			if eid != st.ExperimentID {
				st.Reset(eid) // another experiment: what this logdir sent before does not count
			}
			if name != "" || description != "" {
				if err := updateMetadata(ctx, writer, eid, name, description); err != nil {
					return "", err
				}
			}
			return eid, nil
		case status.Code(err) == codes.NotFound && requested == "":
			fmt.Fprintf(env.Stderr, "The experiment this logdir was uploaded to before (%s) no longer exists or is not yours; starting a new one.\n", eid)
		default:
			return "", fmt.Errorf("continuing experiment %s: %s", eid, client.Describe(err))
		}
	}
	if st.CreateRequestID == "" {
		st.CreateRequestID = writehint.NewRequestID()
		if err := save(st); err != nil {
			return "", err
		}
	}
	var resp *servicepb.CreateExperimentResponse
	err := retry.Do(writehint.WithRequestID(ctx, st.CreateRequestID), func(ctx context.Context) error {
		var err error
		resp, err = writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: cmp.Or(name, newName), Description: description})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("creating the experiment: %s", client.Describe(err))
	}
	st.Reset(resp.GetExperimentId())
	return resp.GetExperimentId(), nil
}

// logdirName is the name of an experiment uploaded from dir without --name:
// the logdir's folder ("~/runs/ppo_sweep" -> "ppo_sweep"; "." -> the
// current folder's name; "gs://bucket/a/b/" -> "b"), cut to the 100
// characters a name may have; "" for a root.
func logdirName(dir string) string {
	var name string
	if rest, ok := strings.CutPrefix(dir, "gs://"); ok {
		name = path.Base(path.Clean("/" + rest))
	} else {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		name = filepath.Base(filepath.Clean(dir))
	}
	if name == "/" || name == "." || name == string(filepath.Separator) {
		return ""
	}
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100])
	}
	return name
}

// sayRetries is r telling each retry on stderr: before the upload's
// progress line starts, a server that does not answer would otherwise
// leave tbup silent for the minute its retries last.
func sayRetries(env Env, r client.Retry) client.Retry {
	r.OnRetry = func(err error, wait time.Duration) {
		fmt.Fprintf(env.Stderr, "tbup: %s; trying again in %v\n", client.Describe(err), wait.Round(100*time.Millisecond))
	}
	return r
}

func updateMetadata(ctx context.Context, writer servicepb.TensorBoardWriterServiceClient, eid, name, description string) error {
	req := &servicepb.UpdateExperimentRequest{Experiment: &servicepb.Experiment{ExperimentId: eid}, ExperimentMask: &servicepb.ExperimentMask{}}
	if name != "" {
		req.Experiment.Name, req.ExperimentMask.Name = name, true
	}
	if description != "" {
		req.Experiment.Description, req.ExperimentMask.Description = description, true
	}
	if _, err := writer.UpdateExperiment(ctx, req); err != nil {
		return fmt.Errorf("updating the experiment: %s", client.Describe(err))
	}
	return nil
}

// dryRunUpload reads the logdir as an upload would, sending nothing.
func dryRunUpload(ctx context.Context, env Env, src logdir.Source, wanted []string, prog *upload.Progress, asJSON bool) error {
	allowed := map[string]bool{}
	for _, p := range knownPlugins {
		if len(wanted) == 0 || contains(wanted, p) {
			allowed[p] = true
		}
	}
	limits := client.DefaultLimits // nothing is sent: no pacing
	limits.MinScalarInterval, limits.MinTensorInterval, limits.MinBlobInterval = 0, 0, 0
	up := upload.New(upload.Config{
		Source: src, Limits: limits, Plugins: allowed, State: state.New("", src.String()),
		OneShot: true, Retry: client.DefaultRetry, Progress: prog,
	})
	prog.Start()
	err := up.Run(ctx)
	prog.Stop()
	if asJSON {
		if jerr := json.NewEncoder(env.Stdout).Encode(up.Summary("")); jerr != nil {
			return jerr
		}
	}
	return err
}

// knownPlugins are the plugins tbhub stores and shows.
var knownPlugins = []string{"scalars", "histograms", "images", "audio", "text", "pr_curves", "hparams", "mesh", "custom_scalars",
	"graphs", "graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model", "graph_tagged_run_metadata"}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// terminalWidth is how to learn the width of the terminal w is, now (0 if
// it cannot be known); nil if w is not a terminal.
func terminalWidth(w any) func() int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return nil
	}
	return func() int {
		width, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return width
	}
}

// waitForEventFiles checks that src holds an event file before anything is
// created on the server: a one-shot upload of a folder without any (a
// typo, the wrong folder) is an error; a watching upload says so and waits
// for the first (training that has not written yet). found is false, with
// a nil error, when ctx ended the wait (Ctrl-C).
func waitForEventFiles(ctx context.Context, env Env, src logdir.Source, oneShot bool, poll time.Duration) (found bool, err error) {
	for waited := false; ; waited = true {
		runs, err := src.Scan(ctx)
		if err != nil {
			return false, err
		}
		for _, r := range runs {
			if len(r.Files) > 0 {
				return true, nil
			}
		}
		if oneShot {
			return false, fmt.Errorf("no event files (names holding \"tfevents\") in %s: nothing uploaded, no experiment created (--allow-empty creates an empty one)", src)
		}
		if !waited {
			fmt.Fprintf(env.Stderr, "No event files in %s yet; waiting for the first before creating the experiment (Ctrl-C to stop, --allow-empty to create it now).\n", src)
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-time.After(poll):
		}
	}
}

// reportStored says what the server holds of experiment eid after an
// upload, counted as 'tbup list' counts: one point per step, a step written
// more than once keeping its last point. The upload's own counts are of
// points sent, which a logdir that rewrites steps makes larger.
func reportStored(ctx context.Context, out io.Writer, api experimentsv1.ExperimentServiceClient, eid string) error {
	resp, err := api.GetExperiment(ctx, &experimentsv1.GetExperimentRequest{ExperimentId: eid})
	if err != nil {
		return fmt.Errorf("asking what the experiment holds: %s", client.Describe(err))
	}
	n := resp.GetExperiment().GetCounts()
	_, err = fmt.Fprintf(out, "The experiment holds %s: %d scalar points, %d tensor points, %s (%s); one point per step, the last written, as 'tbup list' and 'tbup verify' count.\n",
		upload.Plural(n.GetNumRuns(), "run", "runs"), n.GetNumScalarPoints(), n.GetNumTensorPoints(),
		upload.Plural(n.GetNumBlobs(), "blob", "blobs"), upload.Size(n.GetTotalBlobBytes()))
	return err
}
