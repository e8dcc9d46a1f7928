// Package externalscaler is KEDA's external scaler interface
// (externalscaler.proto, from KEDA under the Apache License 2.0) compiled
// for Go: the messages and the ExternalScaler gRPC service that a KEDA
// trigger of type external or external-push calls.
//
// The generated files are committed. After changing the .proto, run
//
//	go generate ./alerting/keda/externalscaler
//
// It needs protoc on PATH (Debian package protobuf-compiler); the plugins
// protoc-gen-go and protoc-gen-go-grpc are the tool lines of go.mod, built
// at the versions go.mod pins.
package externalscaler

//go:generate sh -c "protoc --plugin=protoc-gen-go=$DOLLAR(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$DOLLAR(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative externalscaler.proto"
