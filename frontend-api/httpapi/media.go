package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/markdown"
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

func sampledTagInfos(series []seriesInfo, samples func(seriesInfo) int64) map[string]map[string]sampledTagInfo {
	out := map[string]map[string]sampledTagInfo{}
	for _, s := range series {
		if out[s.run] == nil {
			out[s.run] = map[string]sampledTagInfo{}
		}
		out[s.run][s.tag] = sampledTagInfo{DisplayName: s.displayName, Description: markdown.ToSafeHTML(s.description), Samples: samples(s)}
	}
	return out
}

func (h *Handler) imageTags(w http.ResponseWriter, r *request) error {
	series, err := h.listBlobSequences(r, "images", nil)
	if err != nil {
		return err
	}
	return writeJSON(w, sampledTagInfos(series, func(s seriesInfo) int64 { return max(s.maxLength-2, 0) }))
}

// sampleParam is the optional sample query parameter (default 0).
func sampleParam(r *request) (int, error) {
	s := r.URL.Query().Get("sample")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errorf(http.StatusBadRequest, "sample=%q: want a non-negative integer", s)
	}
	return n, nil
}

// blobQuery is the query string that fetches one blob from the
// individual* routes.
func blobQuery(key string, extra ...string) string {
	v := url.Values{"blob_key": {key}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v.Encode()
}

type imageEntry struct {
	WallTime Float  `json:"wall_time"`
	Step     int64  `json:"step"`
	Query    string `json:"query"`
}

func (h *Handler) images(w http.ResponseWriter, r *request) error {
	run, tag, err := requireRunTag(r)
	if err != nil {
		return err
	}
	sample, err := sampleParam(r)
	if err != nil {
		return err
	}
	series, err := h.readBlobSequences(r, "images", one(run, tag), h.samples("images", samplesImages))
	if err != nil {
		return err
	}
	if len(series) == 0 {
		return errorf(http.StatusNotFound, "Not found: No image data for run=%s, tag=%s", pyRepr(run), pyRepr(tag))
	}
	out := []imageEntry{}
	for _, s := range series {
		d := s.data
		for i, step := range d.GetStep() {
			refs := d.GetValues()[i].GetBlobRefs()
			if len(refs) < sample+3 {
				continue // this step holds fewer images
			}
			out = append(out, imageEntry{Float(d.GetWallTime()[i]), step, blobQuery(refs[sample+2].GetBlobKey())})
		}
	}
	return writeJSON(w, out)
}

// imageContentType names an image's format from its first bytes; unknown
// formats are served as opaque bytes, never as something a browser runs.
func imageContentType(b []byte) string {
	ct := http.DetectContentType(b)
	if strings.HasPrefix(ct, "image/") {
		return ct
	}
	return "application/octet-stream"
}

func (h *Handler) individualImage(w http.ResponseWriter, r *request) error {
	b, err := h.readBlob(r, r.URL.Query().Get("blob_key"))
	if err != nil {
		return err
	}
	return writeImmutable(w, imageContentType(b), b)
}

func (h *Handler) audioTags(w http.ResponseWriter, r *request) error {
	series, err := h.listBlobSequences(r, "audio", nil)
	if err != nil {
		return err
	}
	return writeJSON(w, sampledTagInfos(series, func(s seriesInfo) int64 { return s.maxLength }))
}

// audioContentType is the MIME type the series' plugin data declares.
func audioContentType(content []byte) string {
	var pd tbpb.AudioPluginData
	if proto.Unmarshal(content, &pd) == nil && pd.GetEncoding() == tbpb.AudioPluginData_WAV {
		return "audio/wav"
	}
	return "application/octet-stream"
}

type audioEntry struct {
	WallTime    Float  `json:"wall_time"`
	Label       string `json:"label"`
	Step        int64  `json:"step"`
	ContentType string `json:"contentType"`
	Query       string `json:"query"`
}

// readAudio lists the clips at index sample of one audio series.
func (h *Handler) readAudio(r *request, run, tag string, sample int) ([]audioEntry, error) {
	var (
		listed []seriesInfo
		read   []blobSeries
	)
	err := parallel(
		func() (err error) { listed, err = h.listBlobSequences(r, "audio", one(run, tag)); return err },
		func() (err error) {
			read, err = h.readBlobSequences(r, "audio", one(run, tag), h.samples("audio", samplesAudio))
			return err
		},
	)
	if err != nil {
		return nil, err
	}
	if len(read) == 0 {
		return nil, errorf(http.StatusNotFound, "Not found: No audio data for run=%s, tag=%s", pyRepr(run), pyRepr(tag))
	}
	contentType := "application/octet-stream"
	if len(listed) > 0 {
		contentType = audioContentType(listed[0].content)
	}
	out := []audioEntry{}
	for _, s := range read {
		d := s.data
		for i, step := range d.GetStep() {
			refs := d.GetValues()[i].GetBlobRefs()
			if len(refs) <= sample {
				continue
			}
			out = append(out, audioEntry{Float(d.GetWallTime()[i]), "", step, contentType,
				blobQuery(refs[sample].GetBlobKey(), "content_type", contentType)})
		}
	}
	return out, nil
}

func (h *Handler) audio(w http.ResponseWriter, r *request) error {
	run, tag, err := requireRunTag(r)
	if err != nil {
		return err
	}
	sample, err := sampleParam(r)
	if err != nil {
		return err
	}
	out, err := h.readAudio(r, run, tag, sample)
	if err != nil {
		return err
	}
	return writeJSON(w, out)
}

func (h *Handler) individualAudio(w http.ResponseWriter, r *request) error {
	ct := r.URL.Query().Get("content_type")
	switch ct {
	case "":
		ct = "application/octet-stream"
	case "audio/wav", "application/octet-stream":
	default:
		return errorf(http.StatusBadRequest, "content_type=%q: want audio/wav or application/octet-stream", ct)
	}
	b, err := h.readBlob(r, r.URL.Query().Get("blob_key"))
	if err != nil {
		return err
	}
	return writeImmutable(w, ct, b)
}
