// Package wirecompat holds the tests that pin what makes tbhub's generated
// protobuf code interchangeable with TensorBoard's on the wire: full names,
// field numbers and types, enum values, gRPC method names and streaming
// kinds, and the Go import path of each proto package. It has no code of its
// own; a failing test here means a .proto edit broke compatibility.
package wirecompat
