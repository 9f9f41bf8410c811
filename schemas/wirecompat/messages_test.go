package wirecompat_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// wireMessages lists, per message, every field as "name=number type". The
// entries are transcribed from TensorBoard's .proto files (see
// ../../shared/reference/tensorboard_apis.md §1, §2, §4) and must match
// exactly: a missing, extra or renumbered field fails the test.
var wireMessages = map[string][]string{
	// ---- Read API: tensorboard/data/proto/data_provider.proto (§1.2) ----
	"tensorboard.data.GetExperimentRequest":  {"experiment_id=1 string"},
	"tensorboard.data.GetExperimentResponse": {"data_location=1 string", "name=2 string", "description=3 string", "creation_time=4 google.protobuf.Timestamp"},
	"tensorboard.data.PluginFilter":          {"plugin_name=1 string"},
	"tensorboard.data.RunTagFilter":          {"runs=1 tensorboard.data.RunFilter", "tags=2 tensorboard.data.TagFilter"},
	"tensorboard.data.RunFilter":             {"names=1 repeated string"},
	"tensorboard.data.TagFilter":             {"names=1 repeated string"},
	"tensorboard.data.Downsample":            {"num_points=1 int64"},
	"tensorboard.data.ListPluginsRequest":    {"experiment_id=1 string"},
	"tensorboard.data.ListPluginsResponse":   {"plugins=1 repeated tensorboard.data.Plugin"},
	"tensorboard.data.Plugin":                {"name=1 string"},
	"tensorboard.data.ListRunsRequest":       {"experiment_id=1 string"},
	"tensorboard.data.ListRunsResponse":      {"runs=1 repeated tensorboard.data.Run"},
	"tensorboard.data.Run":                   {"name=2 string", "start_time=3 double"},

	"tensorboard.data.ListScalarsRequest":           {"experiment_id=1 string", "plugin_filter=2 tensorboard.data.PluginFilter", "run_tag_filter=3 tensorboard.data.RunTagFilter"},
	"tensorboard.data.ListScalarsResponse":          {"runs=1 repeated tensorboard.data.ListScalarsResponse.RunEntry"},
	"tensorboard.data.ListScalarsResponse.RunEntry": {"run_name=1 string", "tags=2 repeated tensorboard.data.ListScalarsResponse.TagEntry"},
	"tensorboard.data.ListScalarsResponse.TagEntry": {"tag_name=1 string", "metadata=2 tensorboard.data.ScalarMetadata"},
	"tensorboard.data.ScalarMetadata":               {"max_step=1 int64", "max_wall_time=2 double", "summary_metadata=3 tensorboard.SummaryMetadata"},
	"tensorboard.data.ReadScalarsRequest":           {"experiment_id=1 string", "plugin_filter=2 tensorboard.data.PluginFilter", "run_tag_filter=3 tensorboard.data.RunTagFilter", "downsample=4 tensorboard.data.Downsample"},
	"tensorboard.data.ReadScalarsResponse":          {"runs=1 repeated tensorboard.data.ReadScalarsResponse.RunEntry"},
	"tensorboard.data.ReadScalarsResponse.RunEntry": {"run_name=1 string", "tags=2 repeated tensorboard.data.ReadScalarsResponse.TagEntry"},
	"tensorboard.data.ReadScalarsResponse.TagEntry": {"tag_name=1 string", "data=2 tensorboard.data.ScalarData"},
	"tensorboard.data.ScalarData":                   {"step=1 repeated int64", "wall_time=2 repeated double", "value=3 repeated float"},

	"tensorboard.data.ListTensorsRequest":           {"experiment_id=1 string", "plugin_filter=2 tensorboard.data.PluginFilter", "run_tag_filter=3 tensorboard.data.RunTagFilter"},
	"tensorboard.data.ListTensorsResponse":          {"runs=1 repeated tensorboard.data.ListTensorsResponse.RunEntry"},
	"tensorboard.data.ListTensorsResponse.RunEntry": {"run_name=1 string", "tags=2 repeated tensorboard.data.ListTensorsResponse.TagEntry"},
	"tensorboard.data.ListTensorsResponse.TagEntry": {"tag_name=1 string", "metadata=2 tensorboard.data.TensorMetadata"},
	"tensorboard.data.TensorMetadata":               {"max_step=1 int64", "max_wall_time=2 double", "summary_metadata=3 tensorboard.SummaryMetadata"},
	"tensorboard.data.ReadTensorsRequest":           {"experiment_id=1 string", "plugin_filter=2 tensorboard.data.PluginFilter", "run_tag_filter=3 tensorboard.data.RunTagFilter", "downsample=4 tensorboard.data.Downsample"},
	"tensorboard.data.ReadTensorsResponse":          {"runs=1 repeated tensorboard.data.ReadTensorsResponse.RunEntry"},
	"tensorboard.data.ReadTensorsResponse.RunEntry": {"run_name=1 string", "tags=2 repeated tensorboard.data.ReadTensorsResponse.TagEntry"},
	"tensorboard.data.ReadTensorsResponse.TagEntry": {"tag_name=1 string", "data=2 tensorboard.data.TensorData"},
	"tensorboard.data.TensorData":                   {"step=1 repeated int64", "wall_time=2 repeated double", "value=3 repeated tensorboard.TensorProto"},

	"tensorboard.data.ListBlobSequencesRequest":           {"experiment_id=1 string", "plugin_filter=2 tensorboard.data.PluginFilter", "run_tag_filter=3 tensorboard.data.RunTagFilter"},
	"tensorboard.data.ListBlobSequencesResponse":          {"runs=1 repeated tensorboard.data.ListBlobSequencesResponse.RunEntry"},
	"tensorboard.data.ListBlobSequencesResponse.RunEntry": {"run_name=1 string", "tags=2 repeated tensorboard.data.ListBlobSequencesResponse.TagEntry"},
	"tensorboard.data.ListBlobSequencesResponse.TagEntry": {"tag_name=1 string", "metadata=2 tensorboard.data.BlobSequenceMetadata"},
	"tensorboard.data.BlobSequenceMetadata":               {"max_step=1 int64", "max_wall_time=2 double", "max_length=3 int64", "summary_metadata=4 tensorboard.SummaryMetadata"},
	"tensorboard.data.ReadBlobSequencesRequest":           {"experiment_id=1 string", "plugin_filter=2 tensorboard.data.PluginFilter", "run_tag_filter=3 tensorboard.data.RunTagFilter", "downsample=4 tensorboard.data.Downsample"},
	"tensorboard.data.ReadBlobSequencesResponse":          {"runs=1 repeated tensorboard.data.ReadBlobSequencesResponse.RunEntry"},
	"tensorboard.data.ReadBlobSequencesResponse.RunEntry": {"run_name=1 string", "tags=2 repeated tensorboard.data.ReadBlobSequencesResponse.TagEntry"},
	"tensorboard.data.ReadBlobSequencesResponse.TagEntry": {"tag_name=1 string", "data=2 tensorboard.data.BlobSequenceData"},
	"tensorboard.data.BlobSequenceData":                   {"step=1 repeated int64", "wall_time=2 repeated double", "values=3 repeated tensorboard.data.BlobReferenceSequence"},
	"tensorboard.data.BlobReferenceSequence":              {"blob_refs=1 repeated tensorboard.data.BlobReference"},
	"tensorboard.data.BlobReference":                      {"blob_key=1 string", "url=2 string"},
	"tensorboard.data.ReadBlobRequest":                    {"blob_key=1 string"},
	"tensorboard.data.ReadBlobResponse":                   {"data=1 bytes"},

	// ---- Write API: tensorboard/uploader/proto/write_service.proto (§2.1) ----
	"tensorboard.service.CreateExperimentRequest":         {"name=1 string", "description=2 string"},
	"tensorboard.service.CreateExperimentResponse":        {"experiment_id=1 string", "url=2 string"},
	"tensorboard.service.UpdateExperimentRequest":         {"experiment=1 tensorboard.service.Experiment", "experiment_mask=2 tensorboard.service.ExperimentMask"},
	"tensorboard.service.UpdateExperimentResponse":        {},
	"tensorboard.service.DeleteExperimentRequest":         {"experiment_id=1 string"},
	"tensorboard.service.DeleteExperimentResponse":        {},
	"tensorboard.service.PurgeDataRequest":                {"batch_limit=1 int32"},
	"tensorboard.service.PurgeDataResponse":               {"purge_stats=1 tensorboard.service.PurgeStats"},
	"tensorboard.service.PurgeStats":                      {"tags=1 int32", "experiments=2 int32", "users=3 int32"},
	"tensorboard.service.WriteScalarRequest":              {"experiment_id=1 string", "runs=2 repeated tensorboard.service.WriteScalarRequest.Run"},
	"tensorboard.service.WriteScalarRequest.Run":          {"name=1 string", "tags=2 repeated tensorboard.service.WriteScalarRequest.Tag"},
	"tensorboard.service.WriteScalarRequest.Tag":          {"name=1 string", "points=2 repeated tensorboard.service.ScalarPoint", "metadata=3 tensorboard.SummaryMetadata"},
	"tensorboard.service.WriteScalarResponse":             {},
	"tensorboard.service.WriteTensorRequest":              {"experiment_id=1 string", "runs=2 repeated tensorboard.service.WriteTensorRequest.Run"},
	"tensorboard.service.WriteTensorRequest.Run":          {"name=1 string", "tags=2 repeated tensorboard.service.WriteTensorRequest.Tag"},
	"tensorboard.service.WriteTensorRequest.Tag":          {"name=1 string", "points=2 repeated tensorboard.service.TensorPoint", "metadata=3 tensorboard.SummaryMetadata"},
	"tensorboard.service.WriteTensorResponse":             {},
	"tensorboard.service.GetOrCreateBlobSequenceRequest":  {"experiment_id=1 string", "run=2 string", "tag=3 string", "step=4 int64", "wall_time=5 google.protobuf.Timestamp", "final_sequence_length=6 int64", "metadata=7 tensorboard.SummaryMetadata"},
	"tensorboard.service.GetOrCreateBlobSequenceResponse": {"blob_sequence_id=1 string"},
	"tensorboard.service.GetBlobMetadataRequest":          {"blob_sequence_id=1 string", "index=2 int64"},
	"tensorboard.service.GetBlobMetadataResponse":         {"blob_state=1 tensorboard.service.BlobState", "size=2 int64", "crc32c=3 fixed32"},
	"tensorboard.service.WriteBlobRequest":                {"blob_sequence_id=1 string", "index=2 int64", "data=3 bytes", "offset=4 int64", "crc32c=5 fixed32", "finalize_object=6 bool", "final_crc32c=7 fixed32", "blob_bytes=8 int64"},
	"tensorboard.service.WriteBlobResponse":               {"blob_state=1 tensorboard.service.BlobState", "size=2 int64"},
	"tensorboard.service.DeleteOwnUserRequest":            {},
	"tensorboard.service.DeleteOwnUserResponse":           {},

	// ---- Export API: export_service.proto (§2.2) ----
	"tensorboard.service.StreamExperimentsRequest":                        {"read_timestamp=1 google.protobuf.Timestamp", "user_id=2 string", "limit=3 int64", "experiments_mask=4 tensorboard.service.ExperimentMask"},
	"tensorboard.service.StreamExperimentsResponse":                       {"experiment_ids=1 repeated string", "experiments=2 repeated tensorboard.service.Experiment"},
	"tensorboard.service.StreamExperimentDataRequest":                     {"experiment_id=1 string", "read_timestamp=2 google.protobuf.Timestamp"},
	"tensorboard.service.StreamExperimentDataResponse":                    {"tag_name=1 string", "run_name=2 string", "tag_metadata=3 tensorboard.SummaryMetadata", "points=4 tensorboard.service.StreamExperimentDataResponse.ScalarPoints", "tensors=5 tensorboard.service.StreamExperimentDataResponse.TensorPoints", "blob_sequences=6 tensorboard.service.StreamExperimentDataResponse.BlobSequencePoints"},
	"tensorboard.service.StreamExperimentDataResponse.ScalarPoints":       {"steps=1 repeated int64", "wall_times=2 repeated google.protobuf.Timestamp", "values=3 repeated double"},
	"tensorboard.service.StreamExperimentDataResponse.TensorPoints":       {"steps=1 repeated int64", "wall_times=2 repeated google.protobuf.Timestamp", "values=3 repeated tensorboard.TensorProto"},
	"tensorboard.service.StreamExperimentDataResponse.BlobSequencePoints": {"steps=1 repeated int64", "wall_times=2 repeated google.protobuf.Timestamp", "values=3 repeated tensorboard.service.BlobSequence"},
	"tensorboard.service.StreamBlobDataRequest":                           {"blob_id=1 string"},
	"tensorboard.service.StreamBlobDataResponse":                          {"data=1 bytes", "offset=2 int64", "final_chunk=4 bool", "final_crc32c=5 fixed32"},

	// ---- Other uploader protos (§2.3) ----
	"tensorboard.service.Experiment":          {"experiment_id=1 string", "create_time=2 google.protobuf.Timestamp", "update_time=3 google.protobuf.Timestamp", "num_scalars=4 int64", "num_runs=5 int64", "num_tags=6 int64", "name=7 string", "description=8 string", "total_tensor_bytes=9 int64", "total_blob_bytes=10 int64", "owner=11 string"},
	"tensorboard.service.ExperimentMask":      {"create_time=2 bool", "update_time=3 bool", "num_scalars=4 bool", "num_runs=5 bool", "num_tags=6 bool", "name=7 bool", "description=8 bool", "total_tensor_bytes=9 bool", "total_blob_bytes=10 bool", "owner=11 bool"},
	"tensorboard.service.ScalarPoint":         {"step=1 int64", "wall_time=2 google.protobuf.Timestamp", "value=3 double"},
	"tensorboard.service.ScalarPointMetadata": {"max_step=1 int64", "max_wall_time=2 google.protobuf.Timestamp", "summary_metadata=3 tensorboard.SummaryMetadata"},
	"tensorboard.service.TensorPoint":         {"step=1 int64", "wall_time=2 google.protobuf.Timestamp", "value=3 tensorboard.TensorProto"},
	"tensorboard.service.TensorTag":           {"max_step=1 int64", "max_wall_time=2 google.protobuf.Timestamp", "summary_metadata=3 tensorboard.SummaryMetadata"},
	"tensorboard.service.Blob":                {"blob_id=1 string", "state=2 tensorboard.service.BlobState"},
	"tensorboard.service.BlobSequenceEntry":   {"blob=1 tensorboard.service.Blob"},
	"tensorboard.service.BlobSequence":        {"entries=1 repeated tensorboard.service.BlobSequenceEntry"},
	"tensorboard.service.ServerInfoRequest":   {"version=1 string", "plugin_specification=2 tensorboard.service.PluginSpecification"},
	"tensorboard.service.ServerInfoResponse":  {"compatibility=1 tensorboard.service.Compatibility", "api_server=2 tensorboard.service.ApiServer", "url_format=3 tensorboard.service.ExperimentUrlFormat", "plugin_control=4 tensorboard.service.PluginControl", "upload_limits=5 tensorboard.service.UploadLimits"},
	"tensorboard.service.Compatibility":       {"verdict=1 tensorboard.service.CompatibilityVerdict", "details=2 string"},
	"tensorboard.service.ApiServer":           {"endpoint=1 string"},
	"tensorboard.service.ExperimentUrlFormat": {"template=1 string", "id_placeholder=2 string"},
	"tensorboard.service.PluginSpecification": {"upload_plugins=2 repeated string"},
	"tensorboard.service.PluginControl":       {"allowed_plugins=1 repeated string"},
	"tensorboard.service.UploadLimits":        {"max_blob_size=1 int64", "max_tensor_point_size=2 int64", "max_scalar_request_size=3 int64", "max_tensor_request_size=4 int64", "max_blob_request_size=5 int64", "min_scalar_request_interval=6 int64", "min_tensor_request_interval=7 int64", "min_blob_request_interval=8 int64"},

	// ---- Event files (§4.2-4.4) ----
	"tensorboard.Event":             {"wall_time=1 double", "step=2 int64", "file_version=3 string", "graph_def=4 bytes", "summary=5 tensorboard.Summary", "log_message=6 tensorboard.LogMessage", "session_log=7 tensorboard.SessionLog", "tagged_run_metadata=8 tensorboard.TaggedRunMetadata", "meta_graph_def=9 bytes", "source_metadata=10 tensorboard.SourceMetadata"},
	"tensorboard.SourceMetadata":    {"writer=1 string"},
	"tensorboard.LogMessage":        {"level=1 tensorboard.LogMessage.Level", "message=2 string"},
	"tensorboard.SessionLog":        {"status=1 tensorboard.SessionLog.SessionStatus", "checkpoint_path=2 string", "msg=3 string"},
	"tensorboard.TaggedRunMetadata": {"tag=1 string", "run_metadata=2 bytes"},

	"tensorboard.SummaryDescription":         {"type_hint=1 string"},
	"tensorboard.SummaryMetadata":            {"plugin_data=1 tensorboard.SummaryMetadata.PluginData", "display_name=2 string", "summary_description=3 string", "data_class=4 tensorboard.DataClass"},
	"tensorboard.SummaryMetadata.PluginData": {"plugin_name=1 string", "content=2 bytes"},
	"tensorboard.Summary":                    {"value=1 repeated tensorboard.Summary.Value"},
	"tensorboard.Summary.Image":              {"height=1 int32", "width=2 int32", "colorspace=3 int32", "encoded_image_string=4 bytes"},
	"tensorboard.Summary.Audio":              {"sample_rate=1 float", "num_channels=2 int64", "length_frames=3 int64", "encoded_audio_string=4 bytes", "content_type=5 string"},
	"tensorboard.Summary.Value":              {"tag=1 string", "simple_value=2 float", "obsolete_old_style_histogram=3 bytes", "image=4 tensorboard.Summary.Image", "histo=5 tensorboard.HistogramProto", "audio=6 tensorboard.Summary.Audio", "node_name=7 string", "tensor=8 tensorboard.TensorProto", "metadata=9 tensorboard.SummaryMetadata"},
	"tensorboard.HistogramProto":             {"min=1 double", "max=2 double", "num=3 double", "sum=4 double", "sum_squares=5 double", "bucket_limit=6 repeated double", "bucket=7 repeated double"},

	"tensorboard.TensorProto": {"dtype=1 tensorboard.DataType", "tensor_shape=2 tensorboard.TensorShapeProto", "version_number=3 int32", "tensor_content=4 bytes",
		"float_val=5 repeated float", "double_val=6 repeated double", "int_val=7 repeated int32", "string_val=8 repeated bytes", "scomplex_val=9 repeated float",
		"int64_val=10 repeated int64", "bool_val=11 repeated bool", "dcomplex_val=12 repeated double", "half_val=13 repeated int32",
		"resource_handle_val=14 repeated tensorboard.ResourceHandleProto", "variant_val=15 repeated tensorboard.VariantTensorDataProto",
		"uint32_val=16 repeated uint32", "uint64_val=17 repeated uint64", "float8_val=18 bytes"},
	"tensorboard.VariantTensorDataProto":            {"type_name=1 string", "metadata=2 bytes", "tensors=3 repeated tensorboard.TensorProto"},
	"tensorboard.TensorShapeProto":                  {"dim=2 repeated tensorboard.TensorShapeProto.Dim", "unknown_rank=3 bool"},
	"tensorboard.TensorShapeProto.Dim":              {"size=1 int64", "name=2 string"},
	"tensorboard.ResourceHandleProto":               {"device=1 string", "container=2 string", "name=3 string", "hash_code=4 uint64", "maybe_type_name=5 string", "dtypes_and_shapes=6 repeated tensorboard.ResourceHandleProto.DtypeAndShape"},
	"tensorboard.ResourceHandleProto.DtypeAndShape": {"dtype=1 tensorboard.DataType", "shape=2 tensorboard.TensorShapeProto"},

	// ---- Plugin data (§4.5) ----
	"tensorboard.ScalarPluginData":    {"version=1 int32"},
	"tensorboard.HistogramPluginData": {"version=1 int32"},
	"tensorboard.ImagePluginData":     {"version=1 int32", "converted_to_tensor=2 bool"},
	"tensorboard.AudioPluginData":     {"version=1 int32", "encoding=2 tensorboard.AudioPluginData.Encoding", "converted_to_tensor=3 bool"},
	"tensorboard.TextPluginData":      {"version=1 int32"},
	"tensorboard.PrCurvePluginData":   {"version=1 int32", "num_thresholds=2 uint32"},
	"tensorboard.mesh.MeshPluginData": {"version=1 int32", "name=2 string", "content_type=3 tensorboard.mesh.MeshPluginData.ContentType", "json_config=5 string", "shape=6 repeated int32", "components=7 uint32"},
	"tensorboard.hparams.HParamsPluginData": {"version=1 int32", "experiment=2 tensorboard.hparams.Experiment",
		"session_start_info=3 tensorboard.hparams.SessionStartInfo", "session_end_info=4 tensorboard.hparams.SessionEndInfo"},
	"tensorboard.hparams.SessionStartInfo": {"hparams=1 map<string,google.protobuf.Value>", "model_uri=2 string", "monitor_url=3 string", "group_name=4 string", "start_time_secs=5 double"},
	"tensorboard.hparams.SessionEndInfo":   {"status=1 tensorboard.hparams.Status", "end_time_secs=2 double"},

	// Custom scalars layout (tensorboard/plugins/custom_scalar/layout.proto).
	"tensorboard.Layout":                    {"version=1 int32", "category=2 repeated tensorboard.Category"},
	"tensorboard.Category":                  {"title=1 string", "chart=2 repeated tensorboard.Chart", "closed=3 bool"},
	"tensorboard.Chart":                     {"title=1 string", "multiline=2 tensorboard.MultilineChartContent", "margin=3 tensorboard.MarginChartContent"},
	"tensorboard.MultilineChartContent":     {"tag=1 repeated string"},
	"tensorboard.MarginChartContent":        {"series=1 repeated tensorboard.MarginChartContent.Series"},
	"tensorboard.MarginChartContent.Series": {"value=1 string", "lower=2 string", "upper=3 string"},

	// hparams HTTP API (tensorboard/plugins/hparams/api.proto).
	"tensorboard.hparams.Experiment": {"description=1 string", "user=2 string", "time_created_secs=3 double", "hparam_infos=4 repeated tensorboard.hparams.HParamInfo", "metric_infos=5 repeated tensorboard.hparams.MetricInfo", "name=6 string"},
	"tensorboard.hparams.HParamInfo": {"name=1 string", "display_name=2 string", "description=3 string", "type=4 tensorboard.hparams.DataType",
		"domain_discrete=5 google.protobuf.ListValue", "domain_interval=6 tensorboard.hparams.Interval", "differs=7 bool"},
	"tensorboard.hparams.Interval":     {"min_value=1 double", "max_value=2 double"},
	"tensorboard.hparams.MetricName":   {"group=1 string", "tag=2 string"},
	"tensorboard.hparams.MetricInfo":   {"name=1 tensorboard.hparams.MetricName", "display_name=3 string", "description=4 string", "dataset_type=5 tensorboard.hparams.DatasetType"},
	"tensorboard.hparams.SessionGroup": {"name=1 string", "hparams=2 map<string,google.protobuf.Value>", "metric_values=3 repeated tensorboard.hparams.MetricValue", "sessions=4 repeated tensorboard.hparams.Session", "monitor_url=5 string"},
	"tensorboard.hparams.MetricValue":  {"name=1 tensorboard.hparams.MetricName", "value=2 double", "training_step=3 int32", "wall_time_secs=4 double"},
	"tensorboard.hparams.Session": {"name=1 string", "start_time_secs=2 double", "end_time_secs=3 double", "status=4 tensorboard.hparams.Status",
		"model_uri=5 string", "metric_values=6 repeated tensorboard.hparams.MetricValue", "monitor_url=7 string"},
	"tensorboard.hparams.GetExperimentRequest": {"experiment_name=1 string", "include_metrics=2 bool", "hparams_limit=3 int32"},
	"tensorboard.hparams.ListSessionGroupsRequest": {"col_params=1 repeated tensorboard.hparams.ColParams", "aggregation_type=2 tensorboard.hparams.AggregationType",
		"aggregation_metric=3 tensorboard.hparams.MetricName", "start_index=4 int32", "slice_size=5 int32", "experiment_name=6 string",
		"allowed_statuses=7 repeated tensorboard.hparams.Status", "include_metrics=8 bool"},
	"tensorboard.hparams.ColParams": {"metric=1 tensorboard.hparams.MetricName", "hparam=2 string", "order=3 tensorboard.hparams.SortOrder", "missing_values_first=4 bool",
		"filter_regexp=5 string", "filter_interval=6 tensorboard.hparams.Interval", "filter_discrete=7 google.protobuf.ListValue",
		"exclude_missing_values=8 bool", "include_in_result=9 bool"},
	"tensorboard.hparams.ListSessionGroupsResponse": {"session_groups=1 repeated tensorboard.hparams.SessionGroup", "total_size=3 int32"},
	"tensorboard.hparams.ListMetricEvalsRequest":    {"session_name=1 string", "metric_name=2 tensorboard.hparams.MetricName", "experiment_name=3 string"},

	// ---- Graphs (tensorboard/compat/proto/{graph,node_def,attr_value,function,op_def,versions}.proto) ----
	"tensorboard.GraphDef": {"node=1 repeated tensorboard.NodeDef", "library=2 tensorboard.FunctionDefLibrary", "version=3 int32", "versions=4 tensorboard.VersionDef", "debug_info=5 tensorboard.GraphDebugInfo"},
	"tensorboard.NodeDef": {"name=1 string", "op=2 string", "input=3 repeated string", "device=4 string", "attr=5 map<string,tensorboard.AttrValue>",
		"experimental_debug_info=6 tensorboard.NodeDef.ExperimentalDebugInfo", "experimental_type=7 tensorboard.FullTypeDef"},
	"tensorboard.NodeDef.ExperimentalDebugInfo": {"original_node_names=1 repeated string", "original_func_names=2 repeated string"},
	"tensorboard.AttrValue": {"list=1 tensorboard.AttrValue.ListValue", "s=2 bytes", "i=3 int64", "f=4 float", "b=5 bool", "type=6 tensorboard.DataType",
		"shape=7 tensorboard.TensorShapeProto", "tensor=8 tensorboard.TensorProto", "placeholder=9 string", "func=10 tensorboard.NameAttrList"},
	"tensorboard.AttrValue.ListValue": {"s=2 repeated bytes", "i=3 repeated int64", "f=4 repeated float", "b=5 repeated bool", "type=6 repeated tensorboard.DataType",
		"shape=7 repeated tensorboard.TensorShapeProto", "tensor=8 repeated tensorboard.TensorProto", "func=9 repeated tensorboard.NameAttrList"},
	"tensorboard.NameAttrList":       {"name=1 string", "attr=2 map<string,tensorboard.AttrValue>"},
	"tensorboard.FunctionDefLibrary": {"function=1 repeated tensorboard.FunctionDef", "gradient=2 repeated tensorboard.GradientDef", "registered_gradients=3 repeated tensorboard.RegisteredGradient"},
	"tensorboard.FunctionDef": {"signature=1 tensorboard.OpDef", "node_def=3 repeated tensorboard.NodeDef", "ret=4 map<string,string>", "attr=5 map<string,tensorboard.AttrValue>",
		"control_ret=6 map<string,string>", "arg_attr=7 map<uint32,tensorboard.FunctionDef.ArgAttrs>", "resource_arg_unique_id=8 map<uint32,uint32>"},
	"tensorboard.FunctionDef.ArgAttrs": {"attr=1 map<string,tensorboard.AttrValue>"},
	"tensorboard.GradientDef":          {"function_name=1 string", "gradient_func=2 string"},
	"tensorboard.RegisteredGradient":   {"gradient_func=1 string", "registered_op_type=2 string"},
	"tensorboard.OpDef": {"name=1 string", "input_arg=2 repeated tensorboard.OpDef.ArgDef", "output_arg=3 repeated tensorboard.OpDef.ArgDef", "attr=4 repeated tensorboard.OpDef.AttrDef",
		"summary=5 string", "description=6 string", "deprecation=8 tensorboard.OpDeprecation", "is_aggregate=16 bool", "is_stateful=17 bool", "is_commutative=18 bool",
		"allows_uninitialized_input=19 bool", "control_output=20 repeated string", "is_distributed_communication=21 bool"},
	"tensorboard.OpDef.ArgDef": {"name=1 string", "description=2 string", "type=3 tensorboard.DataType", "type_attr=4 string", "number_attr=5 string", "type_list_attr=6 string",
		"handle_data=7 repeated tensorboard.ResourceHandleProto.DtypeAndShape", "is_ref=16 bool", "experimental_full_type=17 tensorboard.FullTypeDef"},
	"tensorboard.OpDef.AttrDef": {"name=1 string", "type=2 string", "default_value=3 tensorboard.AttrValue", "description=4 string", "has_minimum=5 bool", "minimum=6 int64", "allowed_values=7 tensorboard.AttrValue"},
	"tensorboard.OpDeprecation": {"version=1 int32", "explanation=2 string"},
	"tensorboard.VersionDef":    {"producer=1 int32", "min_consumer=2 int32", "bad_consumers=3 repeated int32"},
	"tensorboard.FullTypeDef":   {"type_id=1 tensorboard.FullTypeId", "args=2 repeated tensorboard.FullTypeDef", "s=3 string", "i=4 int64"},

	// ---- Run metadata (config.proto, step_stats.proto, cost_graph.proto, ...) ----
	"tensorboard.RunMetadata": {"step_stats=1 tensorboard.StepStats", "cost_graph=2 tensorboard.CostGraphDef", "partition_graphs=3 repeated tensorboard.GraphDef",
		"function_graphs=4 repeated tensorboard.RunMetadata.FunctionGraphs", "session_metadata=5 tensorboard.SessionMetadata"},
	"tensorboard.RunMetadata.FunctionGraphs": {"partition_graphs=1 repeated tensorboard.GraphDef", "pre_optimization_graph=2 tensorboard.GraphDef", "post_optimization_graph=3 tensorboard.GraphDef"},
	"tensorboard.SessionMetadata":            {"name=1 string", "version=2 int64"},
	"tensorboard.StepStats":                  {"dev_stats=1 repeated tensorboard.DeviceStepStats"},
	"tensorboard.DeviceStepStats":            {"device=1 string", "node_stats=2 repeated tensorboard.NodeExecStats", "thread_names=3 map<uint32,string>"},
	"tensorboard.NodeExecStats": {"node_name=1 string", "all_start_micros=2 int64", "op_start_rel_micros=3 int64", "op_end_rel_micros=4 int64", "all_end_rel_micros=5 int64",
		"memory=6 repeated tensorboard.AllocatorMemoryUsed", "output=7 repeated tensorboard.NodeOutput", "timeline_label=8 string", "scheduled_micros=9 int64",
		"thread_id=10 uint32", "referenced_tensor=11 repeated tensorboard.AllocationDescription", "memory_stats=12 tensorboard.MemoryStats",
		"all_start_nanos=13 int64", "op_start_rel_nanos=14 int64", "op_end_rel_nanos=15 int64", "all_end_rel_nanos=16 int64", "scheduled_nanos=17 int64"},
	"tensorboard.NodeOutput":                   {"slot=1 int32", "tensor_description=3 tensorboard.TensorDescription"},
	"tensorboard.TensorDescription":            {"dtype=1 tensorboard.DataType", "shape=2 tensorboard.TensorShapeProto", "allocation_description=4 tensorboard.AllocationDescription"},
	"tensorboard.CostGraphDef":                 {"node=1 repeated tensorboard.CostGraphDef.Node", "cost=2 repeated tensorboard.CostGraphDef.AggregatedCost"},
	"tensorboard.CostGraphDef.Node.OutputInfo": {"size=1 int64", "alias_input_port=2 int64", "shape=3 tensorboard.TensorShapeProto", "dtype=4 tensorboard.DataType"},
}

func TestWireMessages(t *testing.T) {
	for name, want := range wireMessages {
		t.Run(name, func(t *testing.T) {
			md, err := findMessage(name)
			if err != nil {
				t.Fatalf("message not registered: %v", err)
			}
			sortByNumber(want)
			got := describeFields(md)
			missing, extra := diffLists(want, got)
			if len(missing) > 0 || len(extra) > 0 {
				t.Errorf("fields differ from TensorBoard's\n  missing or changed: %s\n  unexpected:         %s\n  all fields:         %s",
					strings.Join(missing, "; "), strings.Join(extra, "; "), strings.Join(got, "; "))
			}
		})
	}
}

// TestOneofs pins oneof membership where it changes the encoding of an
// absent value or how readers dispatch.
func TestOneofs(t *testing.T) {
	tests := []struct {
		message, oneof string
		fields         []string
	}{
		{"tensorboard.Event", "what", []string{"file_version", "graph_def", "summary", "log_message", "session_log", "tagged_run_metadata", "meta_graph_def"}},
		{"tensorboard.Summary.Value", "value", []string{"simple_value", "obsolete_old_style_histogram", "image", "histo", "audio", "tensor"}},
		{"tensorboard.AttrValue", "value", []string{"s", "i", "f", "b", "type", "shape", "tensor", "list", "func", "placeholder"}},
		{"tensorboard.service.StreamExperimentDataResponse", "data", []string{"points", "tensors", "blob_sequences"}},
		{"tensorboard.hparams.HParamsPluginData", "data", []string{"experiment", "session_start_info", "session_end_info"}},
		{"tensorboard.Chart", "content", []string{"multiline", "margin"}},
	}
	for _, tt := range tests {
		md, err := findMessage(tt.message)
		if err != nil {
			t.Fatalf("%s: %v", tt.message, err)
		}
		od := md.Oneofs().ByName(protoreflect.Name(tt.oneof))
		if od == nil {
			t.Errorf("%s: no oneof %q", tt.message, tt.oneof)
			continue
		}
		var got []string
		for i := range od.Fields().Len() {
			got = append(got, string(od.Fields().Get(i).Name()))
		}
		if missing, extra := diffLists(tt.fields, got); len(missing) > 0 || len(extra) > 0 {
			t.Errorf("%s.%s: members %v, want %v", tt.message, tt.oneof, got, tt.fields)
		}
	}
}

// TestReservedFields pins numbers and names retired upstream, so that no one
// reuses them with a different meaning.
func TestReservedFields(t *testing.T) {
	tests := []struct {
		message string
		number  int32
		name    string
	}{
		{"tensorboard.data.Run", 1, "id"},
		{"tensorboard.service.ExperimentMask", 1, "experiment_id"},
		{"tensorboard.service.StreamBlobDataResponse", 3, ""},
		{"tensorboard.ResourceHandleProto", 7, ""},
		{"tensorboard.FunctionDef", 2, ""},
	}
	for _, tt := range tests {
		md, err := findMessage(tt.message)
		if err != nil {
			t.Fatalf("%s: %v", tt.message, err)
		}
		if !md.ReservedRanges().Has(protoreflect.FieldNumber(tt.number)) {
			t.Errorf("%s: field number %d not reserved", tt.message, tt.number)
		}
		if tt.name != "" && !md.ReservedNames().Has(protoreflect.Name(tt.name)) {
			t.Errorf("%s: name %q not reserved", tt.message, tt.name)
		}
	}
}
