package httpapi

// routes registers every route. Experiment routes live under
// /experiment/{eid}/, TensorBoard's plugin routes under
// /experiment/{eid}/data/plugin/{plugin}/.
func (h *Handler) routes() {
	const e = "/experiment/{eid}/data/"
	const p = e + "plugin/"

	// Core (TensorBoard's core plugin and application).
	h.handle("GET "+e+"environment", h.environment)
	h.handle("GET "+e+"plugins_listing", h.pluginsListing)
	h.handle("GET "+e+"runs", h.runs)
	h.handle("GET "+e+"experiments", h.emptyList)
	h.handle("GET "+e+"experiment_runs", h.emptyList)
	h.handle("GET "+e+"logdir", h.logdir)
	h.handle("GET "+e+"window_properties", h.windowProperties)

	// Legacy routes (TensorBoard's original HTTP API document).
	h.handle("GET "+e+"scalars", h.legacyScalars)
	h.handle("GET "+e+"histograms", h.legacyHistograms)
	h.handle("GET "+e+"compressedHistograms", h.legacyCompressedHistograms)
	h.handle("GET "+e+"images", h.legacyImages)
	h.handle("GET "+e+"individualImage", h.individualImage)
	h.handle("GET "+e+"audio", h.legacyAudio)
	h.handle("GET "+e+"individualAudio", h.individualAudio)
	h.handle("GET "+e+"graph", h.graph)
	h.handle("GET "+e+"run_metadata", h.runMetadata)

	h.handle("GET "+p+"scalars/tags", h.scalarTags)
	h.handle("GET "+p+"scalars/scalars", h.scalars)
	h.handle("POST "+p+"scalars/scalars_multirun", h.scalarsMultirun)

	h.handle("GET "+p+"histograms/tags", h.histogramTags)
	h.handle("GET "+p+"histograms/histograms", h.histograms)
	h.handle("GET "+p+"distributions/tags", h.histogramTags)
	h.handle("GET "+p+"distributions/distributions", h.distributions)

	h.handle("GET "+p+"images/tags", h.imageTags)
	h.handle("GET "+p+"images/images", h.images)
	h.handle("GET "+p+"images/individualImage", h.individualImage)

	h.handle("GET "+p+"audio/tags", h.audioTags)
	h.handle("GET "+p+"audio/audio", h.audio)
	h.handle("GET "+p+"audio/individualAudio", h.individualAudio)

	h.handle("GET "+p+"text/tags", h.textTags)
	h.handle("GET "+p+"text/text", h.text)

	h.handle("GET "+p+"graphs/info", h.graphInfo)
	h.handle("GET "+p+"graphs/graph", h.graph)
	h.handle("GET "+p+"graphs/run_metadata", h.runMetadata)

	h.handle("GET "+p+"pr_curves/tags", h.prCurveTags)
	h.handle("GET "+p+"pr_curves/pr_curves", h.prCurves)

	h.handle("GET "+p+"custom_scalars/layout", h.customScalarsLayout)
	h.handle("GET "+p+"custom_scalars/scalars", h.customScalars)
	h.handle("GET "+p+"custom_scalars/download_data", h.customScalarsDownload)

	h.handle("GET "+p+"hparams/download_data", h.hparamsDownload)
	for _, route := range []string{"experiment", "session_groups", "metric_evals"} {
		h.handle("GET "+p+"hparams/"+route, h.hparams(route))
		h.handle("POST "+p+"hparams/"+route, h.hparams(route))
	}

	h.handle("GET "+p+"mesh/tags", h.meshTags)
	h.handle("GET "+p+"mesh/meshes", h.meshes)
	h.handle("GET "+p+"mesh/data", h.meshData)

	h.handle("GET "+p+"timeseries/tags", h.timeSeriesTags)
	h.handle("POST "+p+"timeseries/timeSeries", h.timeSeries)
	h.handle("GET "+p+"timeseries/imageData", h.timeSeriesImageData)

	// tbhub's own.
	h.handle("GET /api/experiments", h.apiListExperiments)
	h.handle("GET /api/experiments/{eid}", h.apiGetExperiment)
	h.handle("GET /api/experiments/{eid}/scalars", h.apiDownloadScalars)
	h.handle("GET /api/experiments/{eid}/tensors", h.apiDownloadTensors)

	// Management (manage.go).
	h.handle("PATCH /api/experiments/{eid}", h.mutation(h.apiUpdateExperiment))
	h.handle("DELETE /api/experiments/{eid}", h.mutation(h.apiDeleteExperiment))
	h.handle("GET /api/experiments/{eid}/grants", h.apiListGrants)
	h.handle("POST /api/experiments/{eid}/grants", h.mutation(h.apiGrant))
	h.handle("DELETE /api/experiments/{eid}/grants", h.mutation(h.apiRevoke))
	h.handle("GET /api/whoami", h.apiWhoAmI)
	h.handle("GET /api/tokens", h.apiListTokens)
	h.handle("POST /api/tokens", h.mutation(h.apiCreateToken))
	h.handle("DELETE /api/tokens/{id}", h.mutation(h.apiRevokeToken))
}

// Routes are the mux patterns a process mounts the Handler under. The web
// UI's pages (/experiment/{eid}/) are less specific and may sit beside them.
var Routes = []string{"/experiment/{eid}/data/", "/api/experiments", "/api/experiments/", "/api/whoami", "/api/tokens", "/api/tokens/"}
