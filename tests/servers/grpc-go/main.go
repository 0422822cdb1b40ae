// Command grpc-servers is the real gRPC server strain's integration tests load: grpc-go
// itself, serving the generated helloworld Greeter and RouteGuide services of grpc-go's
// examples module with server reflection, so strain is checked against the implementation
// most gRPC clients are written against rather than against strain's own idea of the protocol.
//
// Beside the gRPC port it opens a plain HTTP/1.1 admin port whose GET /counts says what the
// server saw (calls per method and per status, messages each way, connections), which a test
// compares with strain's own counts; GET /reset zeroes them. See counts.go for the document.
//
// The behaviours a test provokes are chosen by the request or by a flag, never by chance:
//
//   - SayHello answers "Hello NAME", except for the names "status:CODE" (that status, sent
//     as Trailers-Only since nothing else was sent), "sleep:DURATION" (answers after that
//     long) and "header:KEY" (answers with the request's metadata values for KEY).
//   - RouteGuide's features are a fixed grid (see newRouteGuide), so ListFeatures
//     streams a number of messages a test can compute; RouteChat answers each note with
//     exactly one note.
//   - -stall-after N -stall-for D: the call after the N-th opens a window of D during which
//     every call waits until the window closes; once, as a server that freezes would.
//
// It prints one line, "listening ADDR admin ADDR", and serves until SIGINT or SIGTERM, or
// until its standard input, when that is a pipe, closes: a test that dies closes the pipe,
// so no server outlives it.
//
// -write-protoset FILE writes the services' schema (a descriptor set) and exits; -reflection
// serves reflection v1, v1alpha or both (the default, as grpc-go's reflection.Register does).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/examples/helloworld/helloworld"
	"google.golang.org/grpc/examples/route_guide/routeguide"
)

// gracePeriod is how long a stop waits for calls in flight before cutting them: a test
// that stops the server has its answer already, and a bidi stream the client never closes
// would otherwise hold the exit forever.
const gracePeriod = 2 * time.Second

type options struct {
	addr, admin     string
	tlsCert, tlsKey string
	selfSigned      bool
	stallAfter      uint64
	stallFor        time.Duration
	maxStreams      uint
	gridSide        int
	reflection      string
	compressReplies bool
	writeProtoset   string
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:0", "gRPC listen address")
	flag.StringVar(&o.admin, "admin", "127.0.0.1:0", "admin HTTP/1.1 listen address (GET /counts, GET /reset)")
	flag.StringVar(&o.tlsCert, "tls-cert", "", "serve TLS with this PEM certificate (needs -tls-key)")
	flag.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of -tls-cert")
	flag.BoolVar(&o.selfSigned, "self-signed", false, "serve TLS with a certificate for 127.0.0.1, ::1 and localhost made at start")
	flag.Uint64Var(&o.stallAfter, "stall-after", 0, "after this many calls, open one stall window (needs -stall-for)")
	flag.DurationVar(&o.stallFor, "stall-for", 0, "length of the stall window")
	flag.UintVar(&o.maxStreams, "max-streams", 0, "SETTINGS_MAX_CONCURRENT_STREAMS per connection (0: grpc-go's default)")
	flag.IntVar(&o.gridSide, "grid", 10, "RouteGuide's features form a grid of this many by this many")
	flag.StringVar(&o.reflection, "reflection", "both", "reflection versions served: both, v1 or v1alpha")
	flag.BoolVar(&o.compressReplies, "compress-replies", false, "compress replies with gzip when the client accepts it (requests in gzip are read either way)")
	flag.StringVar(&o.writeProtoset, "write-protoset", "", "write a FileDescriptorSet of the served services to this file and exit")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "grpc-servers: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if o.writeProtoset != "" {
		return writeProtoset(o.writeProtoset, servedFiles())
	}
	if (o.stallAfter > 0) != (o.stallFor > 0) {
		return errors.New("-stall-after and -stall-for go together")
	}
	if o.gridSide < 1 {
		return errors.New("-grid must be at least 1")
	}
	creds, err := transportCredentials(o)
	if err != nil {
		return err
	}

	counts := newCounts()
	stall := &stall{after: o.stallAfter, length: o.stallFor}
	serverOpts := []grpc.ServerOption{
		grpc.StatsHandler(counts),
		grpc.ChainUnaryInterceptor(stall.unary, compressing(o.compressReplies).unary),
		grpc.ChainStreamInterceptor(stall.stream, compressing(o.compressReplies).stream),
		// Without it grpc-go answers an unknown method before any stats hook sees the call,
		// and a test could not count the Unimplemented answers strain provoked.
		grpc.UnknownServiceHandler(unknownMethod),
	}
	if creds != nil {
		serverOpts = append(serverOpts, grpc.Creds(creds))
	}
	if o.maxStreams > 0 {
		serverOpts = append(serverOpts, grpc.MaxConcurrentStreams(uint32(o.maxStreams)))
	}
	server := grpc.NewServer(serverOpts...)
	helloworld.RegisterGreeterServer(server, greeter{})
	routeguide.RegisterRouteGuideServer(server, newRouteGuide(o.gridSide))
	if err := registerReflection(server, o.reflection); err != nil {
		return err
	}

	lis, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	adminLis, err := net.Listen("tcp", o.admin)
	if err != nil {
		return err
	}
	admin := &http.Server{Handler: counts.adminHandler(), ReadHeaderTimeout: 5 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if stdinIsPipe() {
		go func() {
			// The read ends at EOF, or in error when the writer is gone: either way the
			// test that started us is finished with us.
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}

	served := make(chan error, 2)
	go func() { served <- server.Serve(lis) }()
	go func() { served <- admin.Serve(adminLis) }()
	fmt.Printf("listening %s admin %s\n", lis.Addr(), adminLis.Addr())

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	graceful := make(chan struct{})
	go func() {
		server.GracefulStop()
		close(graceful)
	}()
	select {
	case <-graceful:
	case <-time.After(gracePeriod):
		server.Stop()
	}
	_ = admin.Close()
	return err
}

func transportCredentials(o options) (credentials.TransportCredentials, error) {
	var cert tls.Certificate
	var err error
	switch {
	case o.selfSigned && o.tlsCert != "":
		return nil, errors.New("-self-signed and -tls-cert are alternatives")
	case o.selfSigned:
		cert, err = selfSignedCert()
	case o.tlsCert != "" || o.tlsKey != "":
		cert, err = tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// NewTLS offers h2 by ALPN, which gRPC clients require.
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

// stdinIsPipe says whether our standard input is a pipe from the process that started us.
// A terminal never reaches its end and /dev/null is at its end from the start: neither says
// whether that process is alive.
func stdinIsPipe() bool {
	info, err := os.Stdin.Stat()
	return err == nil && info.Mode()&os.ModeNamedPipe != 0
}
