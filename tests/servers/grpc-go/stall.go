package main

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// stall is the -stall-after/-stall-for window: calls 1..after run at once, call after+1 opens
// a window of length, and every call that starts inside it waits for its end. A paced load
// then meets a server that answers nothing for a while and catches up after, which is what
// latency corrected for the intended send time exists to show.
type stall struct {
	after  uint64
	length time.Duration

	// A lock rather than atomics: two calls racing at the window's opening must not let the
	// second through before the first has set the window's end.
	mu    sync.Mutex
	calls uint64
	until time.Time
}

// wait holds a call while the window is open.
func (s *stall) wait(ctx context.Context, method string) error {
	if s.after == 0 || isReflection(method) {
		return nil
	}
	s.mu.Lock()
	s.calls++
	now := time.Now()
	if s.calls == s.after+1 {
		s.until = now.Add(s.length)
	}
	until := s.until
	s.mu.Unlock()
	if now.Before(until) {
		return sleep(ctx, until.Sub(now))
	}
	return nil
}

func (s *stall) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.wait(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *stall) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.wait(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}
