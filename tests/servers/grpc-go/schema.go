package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/examples/helloworld/helloworld"
	"google.golang.org/grpc/examples/route_guide/routeguide"
	"google.golang.org/grpc/reflection"
	v1reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The examples module's route_guide.proto is written in edition 2023, which neither protox
// nor prost-reflect reads yet. With -proto3 the server describes it, by reflection and in
// what it writes, as the proto3 file that means exactly the same: edition 2023 with implicit
// field presence file-wide is proto3's semantics, so the messages on the wire do not change.

// servedFiles are the services' files, each after the files it imports.
func servedFiles(proto3 bool) ([]protoreflect.FileDescriptor, error) {
	var files []protoreflect.FileDescriptor
	seen := map[string]bool{}
	var add func(protoreflect.FileDescriptor) error
	add = func(f protoreflect.FileDescriptor) error {
		if seen[f.Path()] {
			return nil
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			if err := add(imports.Get(i).FileDescriptor); err != nil {
				return err
			}
		}
		if proto3 {
			var err error
			if f, err = proto3View(f); err != nil {
				return err
			}
		}
		files = append(files, f)
		return nil
	}
	for _, f := range []protoreflect.FileDescriptor{
		helloworld.File_examples_helloworld_helloworld_helloworld_proto,
		routeguide.File_examples_route_guide_routeguide_route_guide_proto,
	} {
		if err := add(f); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// proto3View is f said in proto3, when f is an edition 2023 file whose only feature is
// implicit presence file-wide; other files as they are. Any other feature, anywhere, has
// no proto3 spelling and is refused rather than dropped.
func proto3View(f protoreflect.FileDescriptor) (protoreflect.FileDescriptor, error) {
	fdp := protodesc.ToFileDescriptorProto(f)
	if fdp.GetSyntax() != "editions" {
		return f, nil
	}
	implicit := &descriptorpb.FeatureSet{FieldPresence: descriptorpb.FeatureSet_IMPLICIT.Enum()}
	if fdp.GetEdition() != descriptorpb.Edition_EDITION_2023 || !proto.Equal(fdp.GetOptions().GetFeatures(), implicit) {
		return nil, fmt.Errorf("%s: edition %s with features %v has no proto3 equivalent", f.Path(), fdp.GetEdition(), fdp.GetOptions().GetFeatures())
	}
	fdp.Options.Features = nil
	if err := noFeatures(fdp); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path(), err)
	}
	fdp.Syntax = proto.String("proto3")
	fdp.Edition = nil
	return protodesc.NewFile(fdp, protoregistry.GlobalFiles)
}

func noFeatures(fdp *descriptorpb.FileDescriptorProto) error {
	var message func(*descriptorpb.DescriptorProto) error
	message = func(m *descriptorpb.DescriptorProto) error {
		if m.GetOptions().GetFeatures() != nil || len(m.GetEnumType()) > 0 || len(m.GetOneofDecl()) > 0 {
			return fmt.Errorf("message %s: features, enums or oneofs", m.GetName())
		}
		for _, field := range m.GetField() {
			if field.GetOptions().GetFeatures() != nil {
				return fmt.Errorf("field %s.%s has features", m.GetName(), field.GetName())
			}
		}
		for _, nested := range m.GetNestedType() {
			if err := message(nested); err != nil {
				return err
			}
		}
		return nil
	}
	if len(fdp.GetEnumType()) > 0 || len(fdp.GetExtension()) > 0 {
		return errors.New("enums or extensions")
	}
	for _, m := range fdp.GetMessageType() {
		if err := message(m); err != nil {
			return err
		}
	}
	for _, s := range fdp.GetService() {
		if s.GetOptions().GetFeatures() != nil {
			return fmt.Errorf("service %s has features", s.GetName())
		}
	}
	return nil
}

// registerReflection serves reflection v1 and v1alpha; with -proto3, from a registry in which
// the proto3 views stand in for the files they view.
func registerReflection(server *grpc.Server, proto3 bool) error {
	if !proto3 {
		reflection.Register(server)
		return nil
	}
	views, err := servedFiles(true)
	if err != nil {
		return err
	}
	byPath := map[string]protoreflect.FileDescriptor{}
	for _, f := range views {
		byPath[f.Path()] = f
	}
	files := new(protoregistry.Files)
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if view, ok := byPath[f.Path()]; ok {
			f = view
		}
		err = files.RegisterFile(f)
		return err == nil
	})
	if err != nil {
		return err
	}
	opts := reflection.ServerOptions{Services: server, DescriptorResolver: files}
	v1alphareflectiongrpc.RegisterServerReflectionServer(server, reflection.NewServer(opts))
	v1reflectiongrpc.RegisterServerReflectionServer(server, reflection.NewServerV1(opts))
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

// writeProtos writes each file as proto3 source into dir, under its base name. It prints only
// what these two files hold (messages of singular and repeated fields, services), and refuses
// anything else rather than print it wrong.
func writeProtos(dir string, files []protoreflect.FileDescriptor) error {
	texts := make([]string, len(files))
	for i, f := range files {
		var err error
		if texts[i], err = proto3Source(f); err != nil {
			return fmt.Errorf("%s: %w", f.Path(), err)
		}
	}
	for i, f := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Path())), []byte(texts[i]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func proto3Source(f protoreflect.FileDescriptor) (string, error) {
	if f.Syntax() != protoreflect.Proto3 {
		return "", fmt.Errorf("syntax %s is not proto3 (-proto3 says edition 2023 files in proto3)", f.Syntax())
	}
	if f.Imports().Len() > 0 || f.Enums().Len() > 0 || f.Extensions().Len() > 0 {
		return "", errors.New("imports, enums or extensions")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s, written by grpc-servers -write-protos from the descriptor compiled into grpc-go's examples.\n", f.Path())
	fmt.Fprintf(&b, "syntax = \"proto3\";\n\npackage %s;\n", f.Package())
	services := f.Services()
	for i := range services.Len() {
		s := services.Get(i)
		fmt.Fprintf(&b, "\nservice %s {\n", s.Name())
		methods := s.Methods()
		for j := range methods.Len() {
			m := methods.Get(j)
			fmt.Fprintf(&b, "  rpc %s(%s.%s) returns (%s.%s);\n", m.Name(),
				stream(m.IsStreamingClient()), m.Input().FullName(), stream(m.IsStreamingServer()), m.Output().FullName())
		}
		b.WriteString("}\n")
	}
	messages := f.Messages()
	for i := range messages.Len() {
		m := messages.Get(i)
		if m.Messages().Len() > 0 || m.Enums().Len() > 0 || m.Oneofs().Len() > 0 {
			return "", fmt.Errorf("message %s has nested types or oneofs", m.Name())
		}
		fmt.Fprintf(&b, "\nmessage %s {\n", m.Name())
		fields := m.Fields()
		for j := range fields.Len() {
			field := fields.Get(j)
			typ := field.Kind().String()
			switch field.Kind() {
			case protoreflect.MessageKind:
				typ = "." + string(field.Message().FullName())
			case protoreflect.EnumKind, protoreflect.GroupKind:
				return "", fmt.Errorf("field %s: kind %s", field.FullName(), field.Kind())
			}
			label := ""
			if field.Cardinality() == protoreflect.Repeated {
				label = "repeated "
			}
			fmt.Fprintf(&b, "  %s%s %s = %d;\n", label, typ, field.Name(), field.Number())
		}
		b.WriteString("}\n")
	}
	return b.String(), nil
}

func stream(streaming bool) string {
	if streaming {
		return "stream "
	}
	return ""
}
