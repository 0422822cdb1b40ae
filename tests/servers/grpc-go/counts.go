package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// counts is what the server saw, kept by a grpc-go stats handler rather than by the service
// code: it sees every call the transport dispatched, including those that end before or
// without a handler (unknown methods, deadlines), and every message each way as grpc-go
// framed it.
//
// GET /counts renders it as
//
//	{"calls": 3, "active": 0, "codes": {"OK": 2, "NotFound": 1}, "received": 5, "sent": 4,
//	 "gzip_requests": 0, "gzip_replies": 0,
//	 "methods": {"/routeguide.RouteGuide/RouteChat": {"calls": 1, "active": 0,
//	              "codes": {"OK": 1}, "received": 3, "sent": 3}, ...},
//	 "reflection": {"calls": 1, ..., "methods": {...}},
//	 "connections": 1}
//
// calls are counted when a call begins, codes when it ends (so active = begun, not yet ended),
// received and sent are messages, gzip_requests and gzip_replies the calls whose request or
// response said grpc-encoding: gzip. Reflection's calls are kept apart so that the top-level
// figures equal the calls strain made. codes lists only codes seen, by grpc-go's names.
type counts struct {
	methods     sync.Map // full method name -> *tally
	connections atomic.Uint64
}

type tally struct {
	reflection bool
	calls      atomic.Uint64
	received   atomic.Uint64
	sent       atomic.Uint64
	gzipIn     atomic.Uint64
	gzipOut    atomic.Uint64
	codes      [codes.Unauthenticated + 1]atomic.Uint64
	// Not zeroed by a reset: calls in flight across it still end.
	active atomic.Int64
}

type tallyKey struct{}

func newCounts() *counts { return &counts{} }

func isReflection(method string) bool {
	return strings.HasPrefix(method, "/grpc.reflection.")
}

func (c *counts) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	t, ok := c.methods.Load(info.FullMethodName)
	if !ok {
		t, _ = c.methods.LoadOrStore(info.FullMethodName, &tally{reflection: isReflection(info.FullMethodName)})
	}
	return context.WithValue(ctx, tallyKey{}, t)
}

func (c *counts) HandleRPC(ctx context.Context, s stats.RPCStats) {
	t, ok := ctx.Value(tallyKey{}).(*tally)
	if !ok {
		return
	}
	switch s := s.(type) {
	case *stats.Begin:
		t.calls.Add(1)
		t.active.Add(1)
	case *stats.InHeader:
		if s.Compression == "gzip" {
			t.gzipIn.Add(1)
		}
	case *stats.OutHeader:
		if s.Compression == "gzip" {
			t.gzipOut.Add(1)
		}
	case *stats.InPayload:
		t.received.Add(1)
	case *stats.OutPayload:
		t.sent.Add(1)
	case *stats.End:
		code := status.Code(s.Error)
		if int(code) >= len(t.codes) {
			code = codes.Unknown
		}
		t.codes[code].Add(1)
		t.active.Add(-1)
	}
}

func (c *counts) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (c *counts) HandleConn(_ context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnBegin); ok {
		c.connections.Add(1)
	}
}

func (c *counts) reset() {
	c.connections.Store(0)
	c.methods.Range(func(_, v any) bool {
		t := v.(*tally)
		t.calls.Store(0)
		t.received.Store(0)
		t.sent.Store(0)
		t.gzipIn.Store(0)
		t.gzipOut.Store(0)
		for i := range t.codes {
			t.codes[i].Store(0)
		}
		return true
	})
}

type figures struct {
	Calls    uint64            `json:"calls"`
	Active   int64             `json:"active"`
	Codes    map[string]uint64 `json:"codes"`
	Received uint64            `json:"received"`
	Sent     uint64            `json:"sent"`
	GzipIn   uint64            `json:"gzip_requests"`
	GzipOut  uint64            `json:"gzip_replies"`
}

type group struct {
	figures
	Methods map[string]figures `json:"methods"`
}

type document struct {
	group
	Reflection  group  `json:"reflection"`
	Connections uint64 `json:"connections"`
}

func (f *figures) add(g figures) {
	f.Calls += g.Calls
	f.Active += g.Active
	f.Received += g.Received
	f.Sent += g.Sent
	f.GzipIn += g.GzipIn
	f.GzipOut += g.GzipOut
	for name, n := range g.Codes {
		f.Codes[name] += n
	}
}

func (t *tally) figures() figures {
	f := figures{
		Calls:    t.calls.Load(),
		Active:   t.active.Load(),
		Codes:    map[string]uint64{},
		Received: t.received.Load(),
		Sent:     t.sent.Load(),
		GzipIn:   t.gzipIn.Load(),
		GzipOut:  t.gzipOut.Load(),
	}
	for i := range t.codes {
		if n := t.codes[i].Load(); n > 0 {
			f.Codes[codes.Code(i).String()] = n
		}
	}
	return f
}

func (c *counts) document() document {
	newGroup := func() group {
		return group{figures: figures{Codes: map[string]uint64{}}, Methods: map[string]figures{}}
	}
	d := document{group: newGroup(), Reflection: newGroup(), Connections: c.connections.Load()}
	c.methods.Range(func(k, v any) bool {
		t := v.(*tally)
		f := t.figures()
		if f.Calls == 0 && f.Active == 0 && len(f.Codes) == 0 {
			// A method seen only before the last reset.
			return true
		}
		g := &d.group
		if t.reflection {
			g = &d.Reflection
		}
		g.Methods[k.(string)] = f
		g.add(f)
		return true
	})
	return d
}

func (c *counts) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /counts", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.document())
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
			return
		}
		c.reset()
		_, _ = w.Write([]byte("reset\n"))
	})
	return mux
}
