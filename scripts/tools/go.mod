// Pinned tools: protoc plugins for scripts/gen.sh and staticcheck for scripts/test.sh. A separate module, deliberately
// not in go.work, so generator versions never leak into the product modules.
// Bump with: cd scripts/tools && GOWORK=off go get -tool <module>@<version>,
// then run scripts/gen.sh and commit the regenerated code.
module github.com/tbhub/tbhub/scripts/tools

go 1.26

tool (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
	honnef.co/go/tools/cmd/staticcheck
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.31.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/tools v0.40.1-0.20260108161641-ca281cf95054 // indirect
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.2 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	honnef.co/go/tools v0.7.0 // indirect
)
