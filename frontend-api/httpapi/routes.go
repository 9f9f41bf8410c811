package httpapi

import (
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/account"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/compare"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/core"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/customscalars"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/graphs"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/histograms"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/hparams"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/legacy"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/media"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/mesh"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/prcurves"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/runstable"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/scalars"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/text"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/timeseries"
)

// routes registers every route: the one table of the HTTP API. Each
// plugin's routes and logic are its package's (internal/...); the account
// API (/api/) is package account. Experiment routes live under
// /experiment/{eid}/, TensorBoard's plugin routes under
// /experiment/{eid}/data/plugin/{plugin}/.
func (h *Handler) routes() {
	const e = "/experiment/{eid}/data/"
	const p = e + "plugin/"
	env := h.Env
	var (
		coreRoutes         = core.Plugin{Env: env}
		legacyRoutes       = legacy.Plugin{Env: env}
		scalarRoutes       = scalars.Plugin{Env: env}
		histogramRoutes    = histograms.Plugin{Env: env}
		mediaRoutes        = media.Plugin{Env: env}
		textRoutes         = text.Plugin{Env: env}
		graphRoutes        = graphs.New(env, h.cfg.Graphs)
		prCurveRoutes      = prcurves.Plugin{Env: env}
		customScalarRoutes = customscalars.Plugin{Env: env}
		hparamsRoutes      = hparams.Plugin{Env: env}
		meshRoutes         = mesh.Plugin{Env: env}
		timeSeriesRoutes   = timeseries.Plugin{Env: env}
		api                = account.API{Env: env, Experiments: h.exps, Writer: h.cfg.Writer, Auth: h.cfg.Auth}
	)

	// Core (TensorBoard's core plugin and application).
	h.handle("GET "+e+"environment", coreRoutes.Environment)
	h.handle("GET "+e+"plugins_listing", coreRoutes.PluginsListing)
	h.handle("GET "+e+"runs", coreRoutes.Runs)
	h.handle("GET "+e+"experiments", coreRoutes.EmptyList)
	h.handle("GET "+e+"experiment_runs", coreRoutes.EmptyList)
	h.handle("GET "+e+"notifications", coreRoutes.Notifications)
	h.handle("GET "+e+"logdir", coreRoutes.Logdir)
	h.handle("GET "+e+"window_properties", coreRoutes.WindowProperties)

	// Legacy routes (TensorBoard's original HTTP API document).
	h.handle("GET "+e+"scalars", legacyRoutes.LegacyScalars)
	h.handle("GET "+e+"histograms", legacyRoutes.LegacyHistograms)
	h.handle("GET "+e+"compressedHistograms", legacyRoutes.LegacyCompressedHistograms)
	h.handle("GET "+e+"images", legacyRoutes.LegacyImages)
	h.handle("GET "+e+"individualImage", mediaRoutes.IndividualImage)
	h.handle("GET "+e+"audio", legacyRoutes.LegacyAudio)
	h.handle("GET "+e+"individualAudio", mediaRoutes.IndividualAudio)
	h.handle("GET "+e+"graph", graphRoutes.Graph)
	h.handle("GET "+e+"run_metadata", graphRoutes.RunMetadata)

	h.handle("GET "+p+"scalars/tags", scalarRoutes.ScalarTags)
	h.handle("GET "+p+"scalars/scalars", scalarRoutes.Scalars)
	h.handle("POST "+p+"scalars/scalars_multirun", scalarRoutes.ScalarsMultirun)

	h.handle("GET "+p+"histograms/tags", histogramRoutes.HistogramTags)
	h.handle("GET "+p+"histograms/histograms", histogramRoutes.Histograms)
	h.handle("GET "+p+"distributions/tags", histogramRoutes.HistogramTags)
	h.handle("GET "+p+"distributions/distributions", histogramRoutes.Distributions)

	h.handle("GET "+p+"images/tags", mediaRoutes.ImageTags)
	h.handle("GET "+p+"images/images", mediaRoutes.Images)
	h.handle("GET "+p+"images/individualImage", mediaRoutes.IndividualImage)

	h.handle("GET "+p+"audio/tags", mediaRoutes.AudioTags)
	h.handle("GET "+p+"audio/audio", mediaRoutes.Audio)
	h.handle("GET "+p+"audio/individualAudio", mediaRoutes.IndividualAudio)

	h.handle("GET "+p+"text/tags", textRoutes.TextTags)
	h.handle("GET "+p+"text/text", textRoutes.Text)

	h.handle("GET "+p+"graphs/info", graphRoutes.GraphInfo)
	h.handle("GET "+p+"graphs/graph", graphRoutes.Graph)
	h.handle("GET "+p+"graphs/run_metadata", graphRoutes.RunMetadata)

	h.handle("GET "+p+"pr_curves/tags", prCurveRoutes.PRCurveTags)
	h.handle("GET "+p+"pr_curves/pr_curves", prCurveRoutes.PRCurves)

	h.handle("GET "+p+"custom_scalars/layout", customScalarRoutes.CustomScalarsLayout)
	h.handle("GET "+p+"custom_scalars/scalars", customScalarRoutes.CustomScalars)
	h.handle("GET "+p+"custom_scalars/download_data", customScalarRoutes.CustomScalarsDownload)

	h.handle("GET "+p+"hparams/download_data", hparamsRoutes.HParamsDownload)
	for _, route := range []string{"experiment", "session_groups", "metric_evals"} {
		h.handle("GET "+p+"hparams/"+route, hparamsRoutes.HParams(route))
		h.handle("POST "+p+"hparams/"+route, hparamsRoutes.HParams(route))
	}

	h.handle("GET "+p+"mesh/tags", meshRoutes.MeshTags)
	h.handle("GET "+p+"mesh/meshes", meshRoutes.Meshes)
	h.handle("GET "+p+"mesh/data", meshRoutes.MeshData)

	h.handle("GET "+p+"timeseries/tags", timeSeriesRoutes.TimeSeriesTags)
	h.handle("POST "+p+"timeseries/timeSeries", timeSeriesRoutes.TimeSeries)
	h.handle("GET "+p+"timeseries/imageData", timeSeriesRoutes.TimeSeriesImageData)

	// A comparison: which of its experiments the caller sees (handle
	// serves every route above under /compare/{eid}/data/ too).
	h.handle("GET /compare/{eid}/data/comparison", h.followable(compare.Routes{Env: env, Client: h.compare, Experiments: h.exps}.Comparison))

	// tbhub's own.
	h.handle("GET "+e+"runs_table", runstable.Plugin{Env: env, Limits: h.cfg.RunsTable}.RunsTable)
	h.handle("GET /api/experiments", api.ListExperiments)
	h.handle("GET /api/experiments/{eid}", h.followable(api.GetExperiment))
	h.handle("GET /api/experiments/{eid}/scalars", api.DownloadScalars)
	h.handle("GET /api/experiments/{eid}/tensors", api.DownloadTensors)

	// Management (manage.go).
	h.handle("PATCH /api/experiments/{eid}", h.mutation(staleExperiment, api.UpdateExperiment))
	h.handle("DELETE /api/experiments/{eid}", h.mutation(staleExperiment, api.DeleteExperiment))
	h.handle("GET /api/experiments/{eid}/grants", api.ListGrants)
	h.handle("POST /api/experiments/{eid}/grants", h.mutation(staleExperiment, api.Grant))
	h.handle("DELETE /api/experiments/{eid}/grants", h.mutation(staleExperiment, api.Revoke))
	h.handle("GET /api/whoami", api.WhoAmI)
	h.handle("PATCH /api/whoami", h.mutation(staleAll, api.SetDisplayName))
	h.handle("GET /api/tokens", api.ListTokens)
	h.handle("POST /api/tokens", h.mutation(staleCaller, api.CreateToken))
	h.handle("DELETE /api/tokens/{id}", h.mutation(staleAll, api.RevokeToken))
}

// Routes are the mux patterns a process mounts the Handler under. The web
// UI's pages (/experiment/{eid}/) are less specific and may sit beside them.
var Routes = []string{"/experiment/{eid}/data/", "/compare/{eid}/data/", "/api/experiments", "/api/experiments/", "/api/whoami", "/api/tokens", "/api/tokens/"}
