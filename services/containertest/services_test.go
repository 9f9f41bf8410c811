package containertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// buildImage builds infra/docker/service.Dockerfile for one SERVICE with
// the docker CLI (the Dockerfile uses BuildKit features) and returns its
// tag.
func buildImage(t *testing.T, service string) string {
	t.Helper()
	tag := "tbhub-containertest/" + service + ":local"
	cmd := exec.Command("docker", "build", "-f", "infra/docker/service.Dockerfile",
		"--build-arg", "SERVICE="+service, "-t", tag, ".")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", service, err, out)
	}
	return tag
}

// freePort picks a loopback port for a container's published port, so
// that the URLs the services hand out (set before they start) are known.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// publish binds the container's port 8080 to 127.0.0.1:hostPort.
func publish(hostPort string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.PortBindings = mobynet.PortMap{
			mobynet.MustParsePort("8080/tcp"): {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: hostPort}},
		}
	})
}

// TestThreeServicesInContainers replays services/allinone/e2e's TestCloudRunShape
// with the deployment's images: the write service, the read service and
// the frontend, each a container of the image service.Dockerfile builds,
// configured only by environment, beside the Spanner emulator and
// fake-gcs-server containers docker-compose.yml names, on one network.
// tbup (built here) uploads the shared corpus through the write service;
// every scalar series is read back through the frontend and compared with
// EXPECTED.json; a caller without the token gets 404; tbup export
// downloads every blob.
func TestThreeServicesInContainers(t *testing.T) {
	optIn(t)
	ctx := context.Background()
	root := repoRoot(t)
	corpus := filepath.Join(filepath.Dir(root), "shared", "corpus")
	if _, err := os.Stat(filepath.Join(corpus, "EXPECTED.json")); err != nil {
		t.Fatalf("the shared corpus beside the repository: %v", err)
	}
	images := map[string]string{}
	for _, service := range []string{"tbhub", "write-service", "read-service", "frontend"} {
		images[service] = buildImage(t, service)
	}
	tbup := filepath.Join(t.TempDir(), "tbup")
	build := exec.Command("go", "build", "-o", tbup, "./uploader/cmd/tbup")
	build.Dir, build.Env = root, append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building tbup: %v\n%s", err, out)
	}

	nw, err := tcnetwork.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Remove(context.Background()) })
	run := func(image string, opts ...testcontainers.ContainerCustomizer) testcontainers.Container {
		t.Helper()
		ctr, err := testcontainers.Run(ctx, image, opts...)
		testcontainers.CleanupContainer(t, ctr)
		if err != nil {
			t.Fatalf("%s: %v", image, err)
		}
		return ctr
	}

	// The emulators. The test creates the Spanner instance, the database
	// (with the schema) and the bucket through their published ports.
	spanner := run(composeImage(t, emulatorImagePattern),
		tcnetwork.WithNetwork([]string{"spanner"}, nw),
		testcontainers.WithExposedPorts("9010/tcp"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("9010/tcp")))
	spannerHost, err := spanner.PortEndpoint(ctx, "9010/tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SPANNER_EMULATOR_HOST", spannerHost)
	emu, err := spanneremu.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Stop)
	db, err := emu.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gcs := run(composeImage(t, `fsouza/fake-gcs-server`),
		tcnetwork.WithNetwork([]string{"gcs"}, nw),
		testcontainers.WithCmd("-scheme", "http", "-port", "4443", "-backend", "memory", "-public-host", "gcs:4443"),
		testcontainers.WithExposedPorts("4443/tcp"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("4443/tcp")))
	gcsHost, err := gcs.PortEndpoint(ctx, "4443/tcp", "http")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(gcsHost+"/storage/v1/b", "application/json", strings.NewReader(`{"name":"tbhub"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("creating the bucket: HTTP %d", resp.StatusCode)
	}

	storage := map[string]string{
		"SPANNER_EMULATOR_HOST": "spanner:9010",
		"STORAGE_EMULATOR_HOST": "gcs:4443",
		"TBHUB_STORE":           "spanner://" + db.Name,
		"TBHUB_BLOBS":           "gs://tbhub/containers",
	}
	with := func(env map[string]string, more ...string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			out[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}

	tokenCtr := run(images["tbhub"],
		tcnetwork.WithNetwork(nil, nw),
		testcontainers.WithEnv(storage),
		testcontainers.WithCmd("token", "create", "--user", "researcher", "--store", storage["TBHUB_STORE"], "--blobs", storage["TBHUB_BLOBS"]),
		testcontainers.WithWaitStrategy(wait.ForExit()))
	logs, err := tokenCtr.Logs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tokenOut, _ := io.ReadAll(logs)
	logs.Close()
	token := ""
	for _, f := range strings.Fields(string(tokenOut)) {
		if strings.HasPrefix(f, "tbh_") {
			token = f
		}
	}
	if token == "" {
		t.Fatalf("tbhub token create printed no token: %q", tokenOut)
	}

	writePort, frontPort := freePort(t), freePort(t)
	frontURL := "http://127.0.0.1:" + frontPort
	run(images["write-service"],
		tcnetwork.WithNetwork([]string{"write"}, nw),
		testcontainers.WithEnv(with(storage, "PORT", "8080", "TBHUB_PUBLIC_ORIGIN", frontURL, "TBHUB_API_ENDPOINT", "127.0.0.1:"+writePort)),
		testcontainers.WithExposedPorts("8080/tcp"), publish(writePort),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/readyz").WithPort("8080/tcp")))
	run(images["read-service"],
		tcnetwork.WithNetwork([]string{"read"}, nw),
		testcontainers.WithEnv(with(storage, "PORT", "8080", "TBHUB_PUBLIC_ORIGIN", frontURL,
			"TBHUB_BLOB_KEY_SECRET", "Y29udGFpbmVyLXRlc3QtYmxvYi1rZXktc2VjcmV0")),
		testcontainers.WithExposedPorts("8080/tcp"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("8080/tcp")))
	run(images["frontend"],
		tcnetwork.WithNetwork([]string{"frontend"}, nw),
		testcontainers.WithEnv(map[string]string{"PORT": "8080", "TBHUB_READ_SERVICE": "read:8080",
			"TBHUB_EXPERIMENT_SERVICE": "write:8080", "TBHUB_GRPC_INSECURE": "true"}),
		testcontainers.WithExposedPorts("8080/tcp"), publish(frontPort),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/readyz").WithPort("8080/tcp")))

	home := t.TempDir()
	tbupRun := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := exec.Command(tbup, args...)
		cmd.Env = append(os.Environ(), "TBUP_SERVER=http://127.0.0.1:"+writePort, "TBUP_TOKEN="+token,
			"TBUP_STATE_DIR="+filepath.Join(home, "state"), "TBUP_CONFIG_DIR="+filepath.Join(home, "config"))
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("tbup %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String()
	}
	var sum struct {
		ExperimentID string `json:"experiment_id"`
		URL          string `json:"url"`
		Blobs        int64  `json:"blobs"`
	}
	out := tbupRun("upload", "--one-shot", "--json", "--logdir", corpus, "--name", "containers")
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sum); err != nil || sum.ExperimentID == "" {
		t.Fatalf("tbup upload --json printed %q: %v", out, err)
	}
	if want := frontURL + "/experiment/" + sum.ExperimentID + "/"; sum.URL != want {
		t.Errorf("experiment URL %q, want the frontend's %q", sum.URL, want)
	}

	base := frontURL + "/experiment/" + sum.ExperimentID + "/data/"
	for _, s := range expectedScalars(t, filepath.Join(corpus, "EXPECTED.json")) {
		steps, status := scalarSteps(base, token, s.run, s.tag)
		if status != http.StatusOK || len(steps) != min(s.points, 1000) || (len(steps) > 0 && steps[len(steps)-1] != s.maxStep) {
			t.Errorf("scalars %s/%s: HTTP %d, %d points; want %d ending at step %d", s.run, s.tag, status, len(steps), min(s.points, 1000), s.maxStep)
		}
	}
	if _, status := scalarSteps(base, "", "train", "loss"); status != http.StatusNotFound {
		t.Errorf("a private experiment without a token: HTTP %d, want 404", status)
	}

	exportDir := t.TempDir()
	tbupRun("export", "--experiment", sum.ExperimentID, "--outdir", exportDir)
	if n := exportedBlobFiles(t, filepath.Join(exportDir, "experiment_"+sum.ExperimentID)); n != sum.Blobs {
		t.Errorf("export holds %d blob files, the upload sent %d", n, sum.Blobs)
	}
}

// exportedBlobFiles counts the blob files blob_sequences.json lists in a
// tbup export, failing the test for any that is missing.
func exportedBlobFiles(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "blob_sequences.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l struct {
			Points struct {
				BlobFilePaths [][]string `json:"blob_file_paths"`
			} `json:"points"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("blob_sequences.json: %v", err)
		}
		for _, paths := range l.Points.BlobFilePaths {
			for _, p := range paths {
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
					t.Errorf("exported blob: %v", err)
				}
				n++
			}
		}
	}
	return n
}

type expectedSeries struct {
	run, tag string
	points   int
	maxStep  int64
}

// expectedScalars lists EXPECTED.json's scalar series.
func expectedScalars(t *testing.T, path string) []expectedSeries {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs map[string]map[string]struct {
			DataClass string `json:"data_class"`
			Points    int    `json:"points"`
			MaxStep   int64  `json:"max_step"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []expectedSeries
	for run, tags := range doc.Runs {
		for tag, s := range tags {
			if s.DataClass == "scalar" && s.Points > 0 {
				out = append(out, expectedSeries{run, tag, s.Points, s.MaxStep})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no scalar series in EXPECTED.json")
	}
	return out
}

// scalarSteps asks the frontend for data/scalars and returns the steps.
func scalarSteps(base, token, run, tag string) ([]int64, int) {
	req, err := http.NewRequest(http.MethodGet, base+"scalars?"+url.Values{"run": {run}, "tag": {tag}}.Encode(), nil)
	if err != nil {
		return nil, 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode
	}
	var points [][3]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&points); err != nil {
		return nil, -1
	}
	steps := make([]int64, len(points))
	for i, p := range points {
		if steps[i], err = strconv.ParseInt(string(p[1]), 10, 64); err != nil {
			return nil, -1
		}
	}
	return steps, resp.StatusCode
}
