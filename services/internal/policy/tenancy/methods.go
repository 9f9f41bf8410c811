package tenancy

import (
	"google.golang.org/grpc/health/grpc_health_v1"

	authv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/auth/v1"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Method is how the guard treats one RPC: its operation and, for
// operations on an experiment, how to find the experiment ID in a request
// message. For client-streaming RPCs every message is checked.
type Method struct {
	Op         Op
	Experiment func(req any) string // nil: the operation names no experiment
}

// Methods maps full gRPC method names to their treatment. A method that is
// not listed is refused (PERMISSION_DENIED) unless it is public (health,
// reflection): nothing is allowed by default.
var Methods = map[string]Method{
	servicepb.TensorBoardWriterService_CreateExperiment_FullMethodName: {Op: OpCreate},
	servicepb.TensorBoardWriterService_UpdateExperiment_FullMethodName: {OpWrite, func(r any) string {
		return r.(*servicepb.UpdateExperimentRequest).GetExperiment().GetExperimentId()
	}},
	servicepb.TensorBoardWriterService_DeleteExperiment_FullMethodName: {OpWrite, func(r any) string {
		return r.(*servicepb.DeleteExperimentRequest).GetExperimentId()
	}},
	servicepb.TensorBoardWriterService_WriteScalar_FullMethodName: {OpWrite, func(r any) string {
		return r.(*servicepb.WriteScalarRequest).GetExperimentId()
	}},
	servicepb.TensorBoardWriterService_WriteTensor_FullMethodName: {OpWrite, func(r any) string {
		return r.(*servicepb.WriteTensorRequest).GetExperimentId()
	}},
	servicepb.TensorBoardWriterService_GetOrCreateBlobSequence_FullMethodName: {OpWrite, func(r any) string {
		return r.(*servicepb.GetOrCreateBlobSequenceRequest).GetExperimentId()
	}},
	servicepb.TensorBoardWriterService_GetBlobMetadata_FullMethodName: {OpWrite, func(r any) string {
		return store.ExperimentOfBlobKey(r.(*servicepb.GetBlobMetadataRequest).GetBlobSequenceId())
	}},
	servicepb.TensorBoardWriterService_WriteBlob_FullMethodName: {OpWrite, func(r any) string {
		return store.ExperimentOfBlobKey(r.(*servicepb.WriteBlobRequest).GetBlobSequenceId())
	}},
	// Test-only RPCs; their handlers answer UNIMPLEMENTED unless enabled.
	servicepb.TensorBoardWriterService_PurgeData_FullMethodName:     {Op: OpAccount},
	servicepb.TensorBoardWriterService_DeleteOwnUser_FullMethodName: {Op: OpAccount},

	servicepb.TensorBoardExporterService_StreamExperiments_FullMethodName: {Op: OpList},
	servicepb.TensorBoardExporterService_StreamExperimentData_FullMethodName: {OpRead, func(r any) string {
		return r.(*servicepb.StreamExperimentDataRequest).GetExperimentId()
	}},
	servicepb.TensorBoardExporterService_StreamBlobData_FullMethodName: {OpRead, func(r any) string {
		return store.ExperimentOfBlobKey(r.(*servicepb.StreamBlobDataRequest).GetBlobId())
	}},

	experimentsv1.ExperimentService_ContinueExperiment_FullMethodName: {OpWrite, func(r any) string {
		return r.(*experimentsv1.ContinueExperimentRequest).GetExperimentId()
	}},
	experimentsv1.ExperimentService_PutRuns_FullMethodName: {OpWrite, func(r any) string {
		return r.(*experimentsv1.PutRunsRequest).GetExperimentId()
	}},
	experimentsv1.ExperimentService_GetExperiment_FullMethodName: {OpRead, func(r any) string {
		return r.(*experimentsv1.GetExperimentRequest).GetExperimentId()
	}},
	experimentsv1.ExperimentService_ListExperiments_FullMethodName:       {Op: OpList},
	experimentsv1.ExperimentService_ListPublicExperiments_FullMethodName: {Op: OpBrowse},
	experimentsv1.ExperimentService_SetVisibility_FullMethodName: {OpWrite, func(r any) string {
		return r.(*experimentsv1.SetVisibilityRequest).GetExperimentId()
	}},
	experimentsv1.ExperimentService_GrantAccess_FullMethodName: {OpWrite, func(r any) string {
		return r.(*experimentsv1.GrantAccessRequest).GetExperimentId()
	}},
	experimentsv1.ExperimentService_RevokeAccess_FullMethodName: {OpWrite, func(r any) string {
		return r.(*experimentsv1.RevokeAccessRequest).GetExperimentId()
	}},
	experimentsv1.ExperimentService_ListGrants_FullMethodName: {OpWrite, func(r any) string {
		return r.(*experimentsv1.ListGrantsRequest).GetExperimentId()
	}},
	experimentsv1.ExperimentService_GetQuotaUsage_FullMethodName: {Op: OpAccount},

	// The read service (package reader). A blob key starts with the
	// experiment it was issued for, like the blob IDs above.
	datapb.TensorBoardDataProvider_GetExperiment_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.GetExperimentRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ListPlugins_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ListPluginsRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ListRuns_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ListRunsRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ListScalars_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ListScalarsRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ReadScalars_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ReadScalarsRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ListTensors_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ListTensorsRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ReadTensors_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ReadTensorsRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ListBlobSequences_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ListBlobSequencesRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ReadBlobSequences_FullMethodName: {OpRead, func(r any) string {
		return r.(*datapb.ReadBlobSequencesRequest).GetExperimentId()
	}},
	datapb.TensorBoardDataProvider_ReadBlob_FullMethodName: {OpRead, func(r any) string {
		return store.ExperimentOfBlobKey(r.(*datapb.ReadBlobRequest).GetBlobKey())
	}},

	authv1.AuthService_WhoAmI_FullMethodName:         {Op: OpAccount},
	authv1.AuthService_CreateToken_FullMethodName:    {Op: OpCredentials},
	authv1.AuthService_ListTokens_FullMethodName:     {Op: OpCredentials},
	authv1.AuthService_RevokeToken_FullMethodName:    {Op: OpCredentials},
	authv1.AuthService_SetDisplayName_FullMethodName: {Op: OpAccount},
}

// publicServices are served to anyone without a rule: probes and
// reflection carry no tenant data.
var publicServices = []string{
	"/" + grpc_health_v1.Health_ServiceDesc.ServiceName + "/",
	"/grpc.reflection.v1.ServerReflection/",
	"/grpc.reflection.v1alpha.ServerReflection/",
}
