package wirecompat_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// wireServices lists every method of each service as
// "Name(Request) Response kind", where kind is unary, server-streaming,
// client-streaming or bidi. The gRPC path /<service>/<Name> and the
// streaming kind must match TensorBoard's for stock clients to work.
var wireServices = map[string][]string{
	"tensorboard.data.TensorBoardDataProvider": {
		"GetExperiment(tensorboard.data.GetExperimentRequest) tensorboard.data.GetExperimentResponse unary",
		"ListPlugins(tensorboard.data.ListPluginsRequest) tensorboard.data.ListPluginsResponse unary",
		"ListRuns(tensorboard.data.ListRunsRequest) tensorboard.data.ListRunsResponse unary",
		"ListScalars(tensorboard.data.ListScalarsRequest) tensorboard.data.ListScalarsResponse unary",
		"ReadScalars(tensorboard.data.ReadScalarsRequest) tensorboard.data.ReadScalarsResponse unary",
		"ListTensors(tensorboard.data.ListTensorsRequest) tensorboard.data.ListTensorsResponse unary",
		"ReadTensors(tensorboard.data.ReadTensorsRequest) tensorboard.data.ReadTensorsResponse unary",
		"ListBlobSequences(tensorboard.data.ListBlobSequencesRequest) tensorboard.data.ListBlobSequencesResponse unary",
		"ReadBlobSequences(tensorboard.data.ReadBlobSequencesRequest) tensorboard.data.ReadBlobSequencesResponse unary",
		"ReadBlob(tensorboard.data.ReadBlobRequest) tensorboard.data.ReadBlobResponse server-streaming",
	},
	"tensorboard.service.TensorBoardWriterService": {
		"CreateExperiment(tensorboard.service.CreateExperimentRequest) tensorboard.service.CreateExperimentResponse unary",
		"UpdateExperiment(tensorboard.service.UpdateExperimentRequest) tensorboard.service.UpdateExperimentResponse unary",
		"DeleteExperiment(tensorboard.service.DeleteExperimentRequest) tensorboard.service.DeleteExperimentResponse unary",
		"PurgeData(tensorboard.service.PurgeDataRequest) tensorboard.service.PurgeDataResponse unary",
		"WriteScalar(tensorboard.service.WriteScalarRequest) tensorboard.service.WriteScalarResponse unary",
		"WriteTensor(tensorboard.service.WriteTensorRequest) tensorboard.service.WriteTensorResponse unary",
		"GetOrCreateBlobSequence(tensorboard.service.GetOrCreateBlobSequenceRequest) tensorboard.service.GetOrCreateBlobSequenceResponse unary",
		"GetBlobMetadata(tensorboard.service.GetBlobMetadataRequest) tensorboard.service.GetBlobMetadataResponse unary",
		"WriteBlob(tensorboard.service.WriteBlobRequest) tensorboard.service.WriteBlobResponse bidi",
		"DeleteOwnUser(tensorboard.service.DeleteOwnUserRequest) tensorboard.service.DeleteOwnUserResponse unary",
	},
	"tensorboard.service.TensorBoardExporterService": {
		"StreamExperiments(tensorboard.service.StreamExperimentsRequest) tensorboard.service.StreamExperimentsResponse server-streaming",
		"StreamExperimentData(tensorboard.service.StreamExperimentDataRequest) tensorboard.service.StreamExperimentDataResponse server-streaming",
		"StreamBlobData(tensorboard.service.StreamBlobDataRequest) tensorboard.service.StreamBlobDataResponse server-streaming",
	},
}

func streamingKind(md protoreflect.MethodDescriptor) string {
	switch {
	case md.IsStreamingClient() && md.IsStreamingServer():
		return "bidi"
	case md.IsStreamingServer():
		return "server-streaming"
	case md.IsStreamingClient():
		return "client-streaming"
	default:
		return "unary"
	}
}

func TestWireServices(t *testing.T) {
	for name, want := range wireServices {
		t.Run(name, func(t *testing.T) {
			sd, err := findDescriptor[protoreflect.ServiceDescriptor](name)
			if err != nil {
				t.Fatalf("service not registered: %v", err)
			}
			var got []string
			for i := range sd.Methods().Len() {
				m := sd.Methods().Get(i)
				got = append(got, fmt.Sprintf("%s(%s) %s %s", m.Name(), m.Input().FullName(), m.Output().FullName(), streamingKind(m)))
			}
			if missing, extra := diffLists(want, got); len(missing) > 0 || len(extra) > 0 {
				t.Errorf("methods differ from TensorBoard's\n  missing or changed: %v\n  unexpected:         %v", missing, extra)
			}
		})
	}
}
