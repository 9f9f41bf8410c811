package httpapi_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Tests of the answers that must be TensorBoard's (issue 16); the golden
// comparison with TensorBoard itself on the whole corpus is
// services/internal/readpath's TestTensorBoardGoldens.

// postMultipart posts fields as multipart/form-data, as a browser's
// FormData is sent.
func postMultipart(t *testing.T, u string, fields url.Values) (int, string) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			w.WriteField(k, v)
		}
	}
	w.Close()
	resp, err := http.Post(u, w.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TensorBoard's frontend posts FormData (multipart/form-data); both POST
// form routes take it as they take a urlencoded form.
func TestPostRoutesAcceptMultipart(t *testing.T) {
	_, srv := start(t, nil)
	p := srv.URL + "/experiment/e1/data/plugin/"
	code, body := postMultipart(t, p+"scalars/scalars_multirun", url.Values{"tag": {"loss"}, "runs": {"train", "eval"}})
	if want := `{"train":[[10.5,1,"NaN"],[11.0,2,0.25]]}`; code != 200 || body != want {
		t.Errorf("scalars_multirun, multipart: %d %s, want %s", code, body, want)
	}
	code, body = postMultipart(t, p+"timeseries/timeSeries", url.Values{"requests": {`[{"plugin":"scalars","tag":"loss"}]`}})
	if code != 200 || !strings.Contains(body, `"runToSeries":{"train":[{"wallTime":10.5,"step":1,"value":"NaN"}`) {
		t.Errorf("timeSeries, multipart: %d %s", code, body)
	}
}
