package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/tbhub/tbhub/frontend-api/session"
	"github.com/tbhub/tbhub/frontend-api/session/sessiontest"
)

// env is what every test shares: one `tbhub serve` holding the corpus,
// one browser.
var env struct {
	origin    string
	token     string
	issuer    *sessiontest.Issuer // the OIDC issuer tbhub serve trusts (client oidcClient)
	tbup, dir string
	tbgen     string // writes synthetic logdirs (uploader/cmd/tbgen)
	servePID  int    // tbhub serve's process, whose CPU time benchmarks read
	eid       string // the corpus, private
	publicEID string // generated/scalars, public
	browser   context.Context
	artifacts string
	setupErr  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("browsertest: skipped in -short mode (needs Chromium, the built UI and a corpus upload)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "tbhub-browsertest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop, err := setup(dir)
	if err != nil {
		env.setupErr = err
	}
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireEnv fails the test when setup failed (a missing Chromium or
// unbuilt UI is a failure, not a skip: CI must run these).
func requireEnv(t *testing.T) {
	t.Helper()
	if env.setupErr != nil {
		t.Fatal(env.setupErr)
	}
}

// setup builds tbhub and tbup, starts `tbhub serve`, uploads the corpus
// and starts Chromium. The returned function stops what was started.
func setup(dir string) (func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	chromium, err := findChromium()
	if err != nil {
		return nil, err
	}
	tbhub, tbup := filepath.Join(dir, "tbhub"), filepath.Join(dir, "tbup")
	env.tbgen = filepath.Join(dir, "tbgen")
	for bin, pkg := range map[string]string{tbhub: "github.com/tbhub/tbhub/services/allinone/cmd/tbhub", tbup: "github.com/tbhub/tbhub/uploader/cmd/tbup",
		env.tbgen: "github.com/tbhub/tbhub/uploader/cmd/tbgen"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}

	if env.issuer, err = sessiontest.Start(oidcClient); err != nil {
		return nil, err
	}
	stops = append(stops, env.issuer.Close)
	env.tbup, env.dir = tbup, dir
	serve := exec.Command(tbhub, "serve", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0",
		"--oidc-issuer", env.issuer.URL, "--oidc-client-ids", oidcClient,
		// BenchmarkLiveManyViewers gives each of its 100 viewers a token of
		// the owner's, beside the owner's own: past the default quota (100).
		"--max-tokens-per-user", "1000")
	stderr, err := serve.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := serve.Start(); err != nil {
		return nil, err
	}
	env.servePID = serve.Process.Pid
	stops = append(stops, func() {
		serve.Process.Signal(os.Interrupt)
		serve.Wait()
	})
	if env.origin, env.token, err = readBanner(stderr); err != nil {
		stopAll()
		return nil, err
	}
	if err := checkUIBuilt(); err != nil {
		stopAll()
		return nil, err
	}
	corpusDir, err := corpusDir()
	if err != nil {
		stopAll()
		return nil, err
	}
	if env.eid, err = upload(tbup, dir, corpusDir, "corpus"); err != nil {
		stopAll()
		return nil, err
	}
	if env.publicEID, err = upload(tbup, dir, filepath.Join(corpusDir, "generated", "scalars"), "public scalars", "--visibility", "public"); err != nil {
		stopAll()
		return nil, err
	}

	env.artifacts = os.Getenv("TBHUB_UI_ARTIFACTS")
	if env.artifacts == "" {
		if env.artifacts, err = os.MkdirTemp("", "tbhub-ui-screenshots"); err != nil {
			stopAll()
			return nil, err
		}
	} else if err := os.MkdirAll(env.artifacts, 0o755); err != nil {
		stopAll()
		return nil, err
	}
	fmt.Printf("browsertest: screenshots in %s\n", env.artifacts)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(filepath.Join(dir, "chromium")),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	stops = append(stops, cancelAlloc)
	// chromedp's DOM tracking logs every DOM event its protocol version
	// does not know (Chromium's newer EventTopLayerElementsUpdated, once per
	// dialog or popover change): thousands of lines that hid the failures.
	browser, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithErrorf(func(format string, args ...any) {
		if !strings.HasPrefix(format, "unhandled node event") {
			log.Printf(format, args...)
		}
	}))
	stops = append(stops, cancelBrowser)
	if err := chromedp.Run(browser); err != nil {
		stopAll()
		return nil, fmt.Errorf("starting %s: %w", chromium, err)
	}
	env.browser = browser
	return stopAll, nil
}

func findChromium() (string, error) {
	if p := os.Getenv("TBHUB_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found: apt-get install -y chromium (or set TBHUB_CHROMIUM)")
}

// readBanner reads tbhub serve's banner for its origin and first-start
// token, then keeps draining stderr.
func readBanner(r io.Reader) (origin, token string, err error) {
	sc := bufio.NewScanner(r)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "web" && f[1] == "UI:":
			origin = strings.TrimSuffix(f[2], "/")
		case len(f) == 1 && strings.HasPrefix(f[0], "tbh_"):
			token = f[0]
		}
		if origin != "" && token != "" {
			go io.Copy(io.Discard, r)
			return origin, token, nil
		}
	}
	return "", "", fmt.Errorf("tbhub serve's banner has no web UI origin and token:\n%s", strings.Join(seen, "\n"))
}

func checkUIBuilt() error {
	resp, err := http.Get(env.origin + "/")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(b, []byte("/static/assets/")) {
		return fmt.Errorf("tbhub serves the placeholder page: build the UI first with scripts/build-ui.sh")
	}
	return nil
}

// corpusDir is ../shared/corpus beside the directory holding go.work, or
// $TBHUB_CORPUS.
func corpusDir() (string, error) {
	if d := os.Getenv("TBHUB_CORPUS"); d != "" {
		return d, nil
	}
	wd, _ := os.Getwd()
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return filepath.Join(d, "..", "shared", "corpus"), nil
		}
	}
	return "", fmt.Errorf("no go.work above %s; set TBHUB_CORPUS", wd)
}

// tbupCommand is tbup with args, as the owner, with a state and config
// directory of its own under dir.
func tbupCommand(tbup, dir string, args ...string) (*exec.Cmd, error) {
	home, err := os.MkdirTemp(dir, "tbup")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(tbup, args...)
	cmd.Env = append(os.Environ(), "TBUP_SERVER="+env.origin, "TBUP_TOKEN="+env.token,
		"TBUP_STATE_DIR="+filepath.Join(home, "state"), "TBUP_CONFIG_DIR="+filepath.Join(home, "config"))
	return cmd, nil
}

func upload(tbup, dir, logdir, name string, extra ...string) (string, error) {
	return uploadAs(tbup, dir, env.token, logdir, name, extra...)
}

// uploadAs uploads logdir as the holder of token.
func uploadAs(tbup, dir, token, logdir, name string, extra ...string) (string, error) {
	cmd, err := tbupCommand(tbup, dir, append([]string{"upload", "--one-shot", "--json", "--logdir", logdir, "--name", name}, extra...)...)
	if err != nil {
		return "", err
	}
	cmd.Env = append(cmd.Env, "TBUP_TOKEN="+token) // the last value wins
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tbup upload %s: %v\n%s", logdir, err, errOut.String())
	}
	var summary struct {
		ExperimentID string `json:"experiment_id"`
	}
	if err := json.Unmarshal(out.Bytes(), &summary); err != nil || summary.ExperimentID == "" {
		return "", fmt.Errorf("tbup --json printed %q: %v", out.String(), err)
	}
	return summary.ExperimentID, nil
}

// oidcClient is the web client tbhub serve accepts ID tokens for.
const oidcClient = "tbhub-web"

// tab opens a new browser tab for one test. The browser's cookies are
// cleared; signedIn sets the session cookie to the owner's token (the
// sign-in page sets one holding a token minted for the session).
func tab(t *testing.T, signedIn bool) context.Context {
	t.Helper()
	requireEnv(t)
	ctx, cancel := chromedp.NewContext(env.browser)
	t.Cleanup(cancel)
	// Bounds a test that hangs; the waits below have no deadlines of their own.
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	// Benchmarks sign in with a token in localStorage (src/api.ts): forget it too.
	run(t, ctx, network.ClearBrowserCookies(), navigate(env.origin+"/static/not-there"),
		chromedp.Evaluate(`localStorage.removeItem("tbhub.token")`, nil))
	if signedIn {
		run(t, ctx, network.SetCookie(session.CookieName, env.token).WithURL(env.origin+"/").WithHTTPOnly(true).WithSameSite(network.CookieSameSiteLax))
	}
	return ctx
}

func run(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var loc string
		chromedp.Run(ctx, chromedp.Location(&loc))
		t.Fatalf("browser at %s: %v", loc, err)
	}
}

// screenshot saves the page as a test artifact.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	run(t, ctx, chromedp.FullScreenshot(&png, 100))
	p := filepath.Join(env.artifacts, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// waitFor polls a JavaScript expression until it is truthy.
func waitFor(expr string) chromedp.Action {
	return inPage(chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
}

// navigate loads url and waits until its document answers JavaScript.
func navigate(url string) chromedp.Action {
	return chromedp.Tasks{chromedp.Navigate(url), waitFor(`document.readyState !== "loading"`)}
}

// inPage runs a, again if it reached the JavaScript context of the
// document being left: right after a navigation chromedp may still hold
// the old context's id for a moment (long enough to be hit on a loaded
// machine), and the browser answers "Cannot find context with specified
// id"; a call made while a click's navigation replaces the document is
// answered "Inspected target navigated or closed". Bounded: a context that
// never appears fails the test.
func inPage(a chromedp.Action) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		for attempt := range 100 {
			if err = a.Do(ctx); err == nil || !leftDocument(err) {
				return err
			}
			// Give the browser's executionContextCreated event time to arrive.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt+1) * 10 * time.Millisecond):
			}
		}
		return err
	})
}

// leftDocument says whether err is the browser's answer to a call that
// reached a document being replaced (see inPage).
func leftDocument(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Inspected target navigated or closed")
}

func experimentURL(eid string, q url.Values) string {
	u := env.origin + "/experiment/" + eid + "/"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// paintedCanvases is how many canvases matching selector have at least
// minPixels non-transparent pixels.
func paintedCanvases(selector string, minPixels int) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(c => {
		if (!c.width || !c.height) return false;
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
		return n >= %d;
	}).length`, selector, minPixels)
}

// moveOver sends a mousemove to the element at selector (a chart's
// .u-over), at fx of its width and half its height, from the page itself.
func moveOver(selector string, fx float64) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
		const over = document.querySelector(%q);
		const r = over.getBoundingClientRect();
		over.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + r.width * %g, clientY: r.top + r.height / 2, bubbles: true}));
		return true;
	})()`, selector, fx), nil)
}
