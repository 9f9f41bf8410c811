// Pinned protoc plugins for scripts/gen.sh. A separate module, deliberately
// not in go.work, so generator versions never leak into the product modules.
// Bump with: cd scripts/tools && GOWORK=off go get -tool <module>@<version>,
// then run scripts/gen.sh and commit the regenerated code.
module github.com/tbhub/tbhub/scripts/tools

go 1.26

tool (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
)

require (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.2 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
