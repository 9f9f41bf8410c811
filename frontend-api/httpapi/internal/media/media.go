// Package media serves the images and audio plugins' routes: tags,
// the entries of a series, and the bytes of one image or clip.
package media

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// Images and audio are blob sequences. An image datum is [width, height,
// image, image, ...] (ASCII decimal sizes, then encoded images); an audio
// datum is [clip, clip, ...].

type sampledTagInfo struct {
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	Samples     int64  `json:"samples"`
}

func (h Plugin) sampledTagInfos(series []route.SeriesInfo, samples func(route.SeriesInfo) int64) map[string]map[string]sampledTagInfo {
	out := map[string]map[string]sampledTagInfo{}
	for _, s := range series {
		if out[s.Run] == nil {
			out[s.Run] = map[string]sampledTagInfo{}
		}
		out[s.Run][s.Tag] = sampledTagInfo{DisplayName: s.DisplayName, Description: h.Markdown.ToSafeHTML(s.Description), Samples: samples(s)}
	}
	return out
}

func (h Plugin) ImageTags(w http.ResponseWriter, r *route.Request) error {
	series, err := h.ListBlobSequences(r, "images", nil)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, h.sampledTagInfos(series, func(s route.SeriesInfo) int64 { return max(s.MaxLength-2, 0) }))
}

// sampleParam is the optional sample query parameter (default 0).
func sampleParam(r *route.Request) (int, error) {
	s := r.URL.Query().Get("sample")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, route.Errorf(http.StatusBadRequest, "sample=%q: want a non-negative integer", s)
	}
	return n, nil
}

// blobQuery is the query string that fetches one blob from the
// individual* routes.
func BlobQuery(key string, extra ...string) string {
	v := url.Values{"blob_key": {key}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v.Encode()
}

type ImageEntry struct {
	WallTime route.Float `json:"wall_time"`
	Step     int64       `json:"step"`
	Query    string      `json:"query"`
}

func (h Plugin) Images(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	sample, err := sampleParam(r)
	if err != nil {
		return err
	}
	series, err := h.ReadBlobSequences(r, "images", route.One(run, tag), h.Samples("images", route.SamplesImages))
	if err != nil {
		return err
	}
	if len(series) == 0 {
		return route.Errorf(http.StatusNotFound, "Not found: No image data for run=%s, tag=%s", route.PyRepr(run), route.PyRepr(tag))
	}
	out := []ImageEntry{}
	for _, s := range series {
		d := s.Data
		for i, step := range d.GetStep() {
			refs := d.GetValues()[i].GetBlobRefs()
			if len(refs) < sample+3 {
				continue // this step holds fewer images
			}
			out = append(out, ImageEntry{route.Float(d.GetWallTime()[i]), step, BlobQuery(refs[sample+2].GetBlobKey())})
		}
	}
	return route.WriteJSON(w, out)
}

// imageContentType names an image's format from its first bytes; unknown
// formats are served as opaque bytes, never as something a browser runs.
func ImageContentType(b []byte) string {
	ct := http.DetectContentType(b)
	if strings.HasPrefix(ct, "image/") {
		return ct
	}
	return "application/octet-stream"
}

func (h Plugin) IndividualImage(w http.ResponseWriter, r *route.Request) error {
	b, err := h.ReadBlob(r, r.URL.Query().Get("blob_key"))
	if err != nil {
		return err
	}
	return route.WriteImmutable(w, ImageContentType(b), b)
}

func (h Plugin) AudioTags(w http.ResponseWriter, r *route.Request) error {
	series, err := h.ListBlobSequences(r, "audio", nil)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, h.sampledTagInfos(series, func(s route.SeriesInfo) int64 { return s.MaxLength }))
}

// audioContentType is the MIME type the series' plugin data declares.
func audioContentType(content []byte) string {
	var pd tbpb.AudioPluginData
	if proto.Unmarshal(content, &pd) == nil && pd.GetEncoding() == tbpb.AudioPluginData_WAV {
		return "audio/wav"
	}
	return "application/octet-stream"
}

type AudioEntry struct {
	WallTime    route.Float `json:"wall_time"`
	Label       string      `json:"label"`
	Step        int64       `json:"step"`
	ContentType string      `json:"contentType"`
	Query       string      `json:"query"`
}

// readAudio lists the clips at index sample of one audio series.
func (h Plugin) ReadAudio(r *route.Request, run, tag string, sample int) ([]AudioEntry, error) {
	var (
		listed []route.SeriesInfo
		read   []route.BlobSeries
	)
	err := route.Parallel(
		func() (err error) { listed, err = h.ListBlobSequences(r, "audio", route.One(run, tag)); return err },
		func() (err error) {
			read, err = h.ReadBlobSequences(r, "audio", route.One(run, tag), h.Samples("audio", route.SamplesAudio))
			return err
		},
	)
	if err != nil {
		return nil, err
	}
	if len(read) == 0 {
		return nil, route.Errorf(http.StatusNotFound, "Not found: No audio data for run=%s, tag=%s", route.PyRepr(run), route.PyRepr(tag))
	}
	contentType := "application/octet-stream"
	if len(listed) > 0 {
		contentType = audioContentType(listed[0].Content)
	}
	out := []AudioEntry{}
	for _, s := range read {
		d := s.Data
		for i, step := range d.GetStep() {
			refs := d.GetValues()[i].GetBlobRefs()
			if len(refs) <= sample {
				continue
			}
			out = append(out, AudioEntry{route.Float(d.GetWallTime()[i]), "", step, contentType,
				BlobQuery(refs[sample].GetBlobKey(), "content_type", contentType)})
		}
	}
	return out, nil
}

func (h Plugin) Audio(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	sample, err := sampleParam(r)
	if err != nil {
		return err
	}
	out, err := h.ReadAudio(r, run, tag, sample)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, out)
}

func (h Plugin) IndividualAudio(w http.ResponseWriter, r *route.Request) error {
	ct := r.URL.Query().Get("content_type")
	switch ct {
	case "":
		ct = "application/octet-stream"
	case "audio/wav", "application/octet-stream":
	default:
		return route.Errorf(http.StatusBadRequest, "content_type=%q: want audio/wav or application/octet-stream", ct)
	}
	b, err := h.ReadBlob(r, r.URL.Query().Get("blob_key"))
	if err != nil {
		return err
	}
	return route.WriteImmutable(w, ct, b)
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
