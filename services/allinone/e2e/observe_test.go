package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/services/internal/policy/auth"
)

// observed is where TestCloudRunShape's processes can be watched from.
type observed struct {
	frontURL, writeURL, readMetricsURL string
	eid                                string
	writeLog, readLog                  string // the processes' stderr
}

// checkObservability checks, across the three processes, what an operator
// relies on: tbup's trace context reaches the write service's logs, a
// browser's traceparent crosses the frontend into the read service's logs,
// and every process serves Prometheus metrics of what it did.
func checkObservability(t *testing.T, o observed) {
	t.Helper()
	created := logLines(t, o.writeLog, "experiment created")
	if len(created) == 0 {
		t.Errorf("the write service logged no \"experiment created\"")
	}
	for _, l := range created {
		if id, _ := l["logging.googleapis.com/trace"].(string); len(id) != 32 {
			t.Errorf("\"experiment created\" log line without tbup's trace id: %v", l)
		}
	}

	const traceID = "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest(http.MethodGet, o.frontURL+"/experiment/"+o.eid+"/data/runs", nil)
	req.Header.Set("Traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	req.Header.Set("Authorization", "Bearer "+auth.TokenPrefix+"not-a-token")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
	}
	var inTrace bool
	for _, l := range logLines(t, o.readLog, "rejected credentials") {
		inTrace = inTrace || l["logging.googleapis.com/trace"] == traceID
	}
	if !inTrace {
		t.Errorf("the read service logged no \"rejected credentials\" in trace %s, the browser's", traceID)
	}

	for url, series := range map[string][]string{
		o.frontURL + "/metrics": {`tbhub_http_request_seconds_count{route="GET /experiment/{eid}/data/runs"}`},
		o.readMetricsURL + "/metrics": {
			`tbhub_grpc_requests_total{code="OK",method="tensorboard.data.TensorBoardDataProvider/ReadScalars"}`,
			`tbhub_grpc_requests_total{code="Unauthenticated",method="tensorboard.data.TensorBoardDataProvider/ListRuns"}`,
			`tbhub_store_seconds_count{op="ReadScalars"}`,
		},
		o.writeURL + "/metrics": {
			`tbhub_points_written_total{class="scalar"}`, `tbhub_upload_sessions_total`,
			`tbhub_blob_bytes_written_total`, `tbhub_store_seconds_count{op="WriteScalars"}`,
		},
	} {
		exposition := get(t, url)
		for _, s := range series {
			if v := sampleOf(exposition, s); v < 1 {
				t.Errorf("%s: %s = %v, want at least 1", url, s, v)
			}
		}
	}
}

// logLines returns the JSON lines of a process's log with the message.
func logLines(t *testing.T, path, message string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && l["message"] == message {
			out = append(out, l)
		}
	}
	return out
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// sampleOf returns the value of series in a Prometheus exposition (-1 if absent).
func sampleOf(exposition, series string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}
