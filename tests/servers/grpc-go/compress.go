package main

import (
	"context"

	"google.golang.org/grpc"
	// Registers gzip, so requests compressed with it are read, as most deployed servers do.
	_ "google.golang.org/grpc/encoding/gzip"
)

// compressing, when on, makes every call's replies gzip-compressed (grpc-go does so only when
// the client listed gzip in grpc-accept-encoding, as the gRPC spec asks).
type compressing bool

func (c compressing) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if c {
		_ = grpc.SetSendCompressor(ctx, "gzip")
	}
	return handler(ctx, req)
}

func (c compressing) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if c {
		_ = grpc.SetSendCompressor(ss.Context(), "gzip")
	}
	return handler(srv, ss)
}
