package main

import (
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/examples/helloworld/helloworld"
	"google.golang.org/grpc/examples/route_guide/routeguide"
	"google.golang.org/grpc/reflection"
	v1reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The examples module's route_guide.proto is written in edition 2023, and the server
// describes it as it is, by reflection and in the descriptor set it writes.

// servedFiles are the services' files, each after the files it imports.
func servedFiles() []protoreflect.FileDescriptor {
	var files []protoreflect.FileDescriptor
	seen := map[string]bool{}
	var add func(protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		files = append(files, f)
	}
	add(helloworld.File_examples_helloworld_helloworld_helloworld_proto)
	add(routeguide.File_examples_route_guide_routeguide_route_guide_proto)
	return files
}

// registerReflection serves reflection in the versions asked: "both" (grpc-go's default,
// v1 and v1alpha), or only "v1" or "v1alpha" (as older servers do).
func registerReflection(server *grpc.Server, versions string) error {
	opts := reflection.ServerOptions{Services: server}
	switch versions {
	case "both":
		reflection.Register(server)
	case "v1":
		v1reflectiongrpc.RegisterServerReflectionServer(server, reflection.NewServerV1(opts))
	case "v1alpha":
		v1alphareflectiongrpc.RegisterServerReflectionServer(server, reflection.NewServer(opts))
	default:
		return fmt.Errorf("-reflection %q: both, v1 or v1alpha", versions)
	}
	return nil
}

// writeProtoset writes files as a FileDescriptorSet, as `protoc --include_imports
// --descriptor_set_out` would: the schema the server was compiled from, with nothing to parse.
func writeProtoset(path string, files []protoreflect.FileDescriptor) error {
	var set descriptorpb.FileDescriptorSet
	for _, f := range files {
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	bytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(&set)
	if err != nil {
		return err
	}
	return os.WriteFile(path, bytes, 0o644)
}
