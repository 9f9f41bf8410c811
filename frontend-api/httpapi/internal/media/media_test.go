package media

import (
	"net/http"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route/routetest"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

const (
	png = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	gif = "GIF89a\x01\x00\x01\x00"
)

var (
	// Images: width and height first, then the images of each step; step
	// 1 holds two images, step 2 one.
	digits = routetest.Series{Plugin: "images", Run: "train", Tag: "digits", DisplayName: "Digits", Description: "*handwritten*",
		Steps: []int64{1, 2}, Blobs: [][][]byte{{[]byte("28"), []byte("28"), []byte(png), []byte(gif)}, {[]byte("28"), []byte("28"), []byte(gif)}}}
	// Audio: one clip per step, WAV declared.
	speech = routetest.Series{Plugin: "audio", Run: "train", Tag: "speech", Steps: []int64{3},
		Blobs: [][][]byte{{[]byte("RIFF....WAVE")}}}
)

func table(t *testing.T) Plugin {
	t.Helper()
	wav, err := proto.Marshal(&tbpb.AudioPluginData{Encoding: tbpb.AudioPluginData_WAV})
	if err != nil {
		t.Fatal(err)
	}
	s := speech
	s.Content = wav
	return Plugin{routetest.Env(t, &routetest.Provider{Series: []routetest.Series{digits, s}})}
}

// query is the query string of the individual* routes for blob index of
// step of s.
func query(s routetest.Series, step, index int64, extra ...string) string {
	return BlobQuery(routetest.BlobKey(s, step, index), extra...)
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := table(t)
	const p = "/experiment/e1/data/plugin/"
	routetest.Run(t, []routetest.Case{
		{Name: "image tags", Fn: h.ImageTags, Target: p + "images/tags",
			Want: `{"train": {"digits": {"displayName": "Digits", "description": "<p><em>handwritten</em></p>", "samples": 2}}}`},
		{Name: "images", Fn: h.Images, Target: p + "images/images?run=train&tag=digits",
			Want: `[{"wall_time": 1001, "step": 1, "query": "` + query(digits, 1, 2) + `"},
				{"wall_time": 1002, "step": 2, "query": "` + query(digits, 2, 2) + `"}]`},
		{Name: "images, second sample", Fn: h.Images, Target: p + "images/images?run=train&tag=digits&sample=1",
			Want: `[{"wall_time": 1001, "step": 1, "query": "` + query(digits, 1, 3) + `"}]`},
		{Name: "images of a missing tag", Fn: h.Images, Target: p + "images/images?run=train&tag=nope", Code: http.StatusNotFound},
		{Name: "images without a tag", Fn: h.Images, Target: p + "images/images?run=train", Code: http.StatusBadRequest},
		{Name: "images, negative sample", Fn: h.Images, Target: p + "images/images?run=train&tag=digits&sample=-1", Code: http.StatusBadRequest},
		{Name: "image of a missing key", Fn: h.IndividualImage, Target: p + "images/individualImage?blob_key=nope", Code: http.StatusNotFound},
		{Name: "image without a key", Fn: h.IndividualImage, Target: p + "images/individualImage", Code: http.StatusBadRequest},
		{Name: "audio tags", Fn: h.AudioTags, Target: p + "audio/tags",
			Want: `{"train": {"speech": {"displayName": "", "description": "", "samples": 1}}}`},
		{Name: "audio", Fn: h.Audio, Target: p + "audio/audio?run=train&tag=speech",
			Want: `[{"wall_time": 1003, "label": "", "step": 3, "contentType": "audio/wav", "query": "` + query(speech, 3, 0, "content_type", "audio/wav") + `"}]`},
		{Name: "audio past the samples", Fn: h.Audio, Target: p + "audio/audio?run=train&tag=speech&sample=1", Want: `[]`},
		{Name: "audio of a missing tag", Fn: h.Audio, Target: p + "audio/audio?run=train&tag=nope", Code: http.StatusNotFound},
		{Name: "audio as HTML", Fn: h.IndividualAudio, Target: p + "audio/individualAudio?content_type=text/html&" + query(speech, 3, 0), Code: http.StatusBadRequest},
	})
}

// The individual* routes answer the blob whole, typed by its bytes
// (images) or by the declared type (audio), never as something a browser
// runs.
func TestIndividualBlobs(t *testing.T) {
	t.Parallel()
	h := table(t)
	for _, c := range []struct {
		name     string
		get      func() (int, string, string)
		body, ct string
	}{
		{"png", call(t, h.IndividualImage, "/individualImage?"+query(digits, 1, 2)), png, "image/png"},
		{"gif", call(t, h.IndividualImage, "/individualImage?"+query(digits, 1, 3)), gif, "image/gif"},
		{"not an image", call(t, h.IndividualImage, "/individualImage?"+query(digits, 1, 0)), "28", "application/octet-stream"},
		{"wav", call(t, h.IndividualAudio, "/individualAudio?"+query(speech, 3, 0, "content_type", "audio/wav")), "RIFF....WAVE", "audio/wav"},
		{"audio, no type", call(t, h.IndividualAudio, "/individualAudio?"+query(speech, 3, 0)), "RIFF....WAVE", "application/octet-stream"},
	} {
		code, ct, body := c.get()
		if code != http.StatusOK || ct != c.ct || body != c.body {
			t.Errorf("%s: %d %s %q, want 200 %s %q", c.name, code, ct, body, c.ct, c.body)
		}
	}
}

func call(t *testing.T, fn route.Func, target string) func() (int, string, string) {
	return func() (int, string, string) {
		rec := routetest.Call(t, fn, http.MethodGet, target, "")
		return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
	}
}
