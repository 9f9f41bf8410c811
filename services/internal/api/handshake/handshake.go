// Package handshake serves the uploader handshake, TensorBoard.dev's
// `POST /api/uploader`: the body is a serialized
// tensorboard.service.ServerInfoRequest and the answer a serialized
// ServerInfoResponse telling the client whether it may upload, the gRPC
// endpoint to use, how to build an experiment's URL, which plugins it may
// upload and the limits it must respect.
package handshake

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/policy/limits"
)

// Path is where the handler is mounted.
const Path = "/api/uploader"

// IDPlaceholder stands for the experiment ID in the URL template.
const IDPlaceholder = "{{EID}}"

// DefaultPlugins are the plugins whose data tbhub stores and shows.
var DefaultPlugins = []string{
	"scalars", "histograms", "images", "audio", "text", "graphs", "hparams",
	"pr_curves", "custom_scalars", "mesh",
	// The graphs dashboard also shows run metadata and Keras models.
	"graph_tagged_run_metadata", "graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model",
}

// Config is what the handshake tells clients.
type Config struct {
	// APIEndpoint is the gRPC target of the write service, with scheme,
	// e.g. "dns:///tbhub.example:443".
	APIEndpoint string
	// PublicOrigin is where experiments are viewed, without trailing
	// slash; the URL template is PublicOrigin + "/experiment/{{EID}}/".
	PublicOrigin string
	// AllowedPlugins defaults to DefaultPlugins.
	AllowedPlugins []string
	Limits         limits.Limits
}

// maxRequestBytes bounds the request body; a ServerInfoRequest is tiny.
const maxRequestBytes = 64 << 10

// New returns the handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.APIEndpoint == "" || cfg.PublicOrigin == "" || strings.HasSuffix(cfg.PublicOrigin, "/") {
		return nil, fmt.Errorf("handshake.New: APIEndpoint and PublicOrigin (without trailing slash) are required")
	}
	if cfg.AllowedPlugins == nil {
		cfg.AllowedPlugins = DefaultPlugins
	}
	if err := cfg.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("handshake.New: %w", err)
	}
	return &handler{cfg: cfg}, nil
}

type handler struct{ cfg Config }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a serialized tensorboard.service.ServerInfoRequest", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	req := &servicepb.ServerInfoRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		http.Error(w, "body is not a serialized tensorboard.service.ServerInfoRequest", http.StatusBadRequest)
		return
	}
	out, err := proto.Marshal(h.respond(req))
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(out) //nolint:errcheck // the client went away; nothing to do
}

// respond builds the answer. Requested plugins are confirmed when all are
// allowed; any other makes the verdict ERROR, naming it.
func (h *handler) respond(req *servicepb.ServerInfoRequest) *servicepb.ServerInfoResponse {
	resp := &servicepb.ServerInfoResponse{
		Compatibility: &servicepb.Compatibility{Verdict: servicepb.CompatibilityVerdict_VERDICT_OK},
		ApiServer:     &servicepb.ApiServer{Endpoint: h.cfg.APIEndpoint},
		UrlFormat: &servicepb.ExperimentUrlFormat{
			Template:      h.cfg.PublicOrigin + "/experiment/" + IDPlaceholder + "/",
			IdPlaceholder: IDPlaceholder,
		},
		PluginControl: &servicepb.PluginControl{AllowedPlugins: h.cfg.AllowedPlugins},
		UploadLimits:  UploadLimits(h.cfg.Limits),
	}
	if want := req.GetPluginSpecification().GetUploadPlugins(); len(want) > 0 {
		var unsupported []string
		for _, p := range want {
			if !slices.Contains(h.cfg.AllowedPlugins, p) {
				unsupported = append(unsupported, p)
			}
		}
		if len(unsupported) > 0 {
			resp.Compatibility = &servicepb.Compatibility{
				Verdict: servicepb.CompatibilityVerdict_VERDICT_ERROR,
				Details: fmt.Sprintf("this server does not accept data of the plugin(s) %s; it accepts %s",
					strings.Join(unsupported, ", "), strings.Join(h.cfg.AllowedPlugins, ", ")),
			}
		}
		resp.PluginControl.AllowedPlugins = want
	}
	return resp
}

// UploadLimits is l as the handshake advertises it. Each minimum interval
// is at least the per-user write rate's (ratePace): an uploader that keeps
// to it is not refused by the rate limit, instead of sending as fast as it
// can and being told to retry.
func UploadLimits(l limits.Limits) *servicepb.UploadLimits {
	pace := ratePace(l)
	return &servicepb.UploadLimits{
		MaxBlobSize:              l.MaxBlobBytes,
		MaxTensorPointSize:       l.MaxTensorPointBytes,
		MaxScalarRequestSize:     l.MaxScalarRequestBytes,
		MaxTensorRequestSize:     l.MaxTensorRequestBytes,
		MaxBlobRequestSize:       l.MaxBlobChunkBytes,
		MinScalarRequestInterval: max(l.MinScalarRequestInterval, pace).Milliseconds(),
		MinTensorRequestInterval: max(l.MinTensorRequestInterval, pace).Milliseconds(),
		MinBlobRequestInterval:   max(l.MinBlobRequestInterval, pace).Milliseconds(),
	}
}

// ratePace is the interval between requests of the per-user write rate
// (RequestsPerSecond), rounded up to whole milliseconds (what the handshake
// carries) and at least one: 0 would mean TensorBoard's defaults. 0 when
// there is no rate limit.
func ratePace(l limits.Limits) time.Duration {
	if l.RequestsPerSecond <= 0 {
		return 0
	}
	return max(time.Duration(math.Ceil(1000/l.RequestsPerSecond))*time.Millisecond, time.Millisecond)
}
