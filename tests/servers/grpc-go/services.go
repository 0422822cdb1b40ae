package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/examples/helloworld/helloworld"
	"google.golang.org/grpc/examples/route_guide/routeguide"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type greeter struct {
	helloworld.UnimplementedGreeterServer
}

// SayHello greets by name; the name prefixes in main.go's package note turn it into a
// status, a delay or an echo of metadata, so one method provokes every kind of answer.
func (greeter) SayHello(ctx context.Context, req *helloworld.HelloRequest) (*helloworld.HelloReply, error) {
	name := req.GetName()
	switch {
	case strings.HasPrefix(name, "status:"):
		code, ok := parseCode(strings.TrimPrefix(name, "status:"))
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "no status code %q", name)
		}
		if code != codes.OK {
			return nil, status.Errorf(code, "status %s as asked", code)
		}
	case strings.HasPrefix(name, "sleep:"):
		d, err := time.ParseDuration(strings.TrimPrefix(name, "sleep:"))
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "no duration in %q", name)
		}
		if err := sleep(ctx, d); err != nil {
			return nil, err
		}
	case strings.HasPrefix(name, "header:"):
		md, _ := metadata.FromIncomingContext(ctx)
		values := md.Get(strings.TrimPrefix(name, "header:"))
		return &helloworld.HelloReply{Message: "Hello " + strings.Join(values, ",")}, nil
	}
	return &helloworld.HelloReply{Message: "Hello " + name}, nil
}

// parseCode reads a status code as a number (5), as the protocol's name (NOT_FOUND) or as
// grpc-go's name (NotFound), whichever a test finds clearer.
func parseCode(s string) (codes.Code, bool) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return codes.Code(n), n <= uint64(codes.Unauthenticated)
	}
	var code codes.Code
	if code.UnmarshalJSON([]byte(strconv.Quote(s))) == nil {
		return code, true
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == s {
			return c, true
		}
	}
	return 0, false
}

// sleep waits d, or less when the call ends first: a client's deadline or cancel frees the
// handler instead of leaving it to finish a sleep no one waits for.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func unknownMethod(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.Method(stream.Context())
	return status.Errorf(codes.Unimplemented, "unknown method %s", method)
}

// The feature grid's corner and spacing, in RouteGuide's E7 degrees, from the example's area
// around New York so the numbers look like its own.
const (
	gridLatitude  = 400000000
	gridLongitude = -750000000
	gridStep      = 1000000
)

type routeGuide struct {
	routeguide.UnimplementedRouteGuideServer
	features []*routeguide.Feature
	byPoint  map[[2]int32]*routeguide.Feature
}

// newRouteGuide lays side×side features on a grid: the one in row r and column c is named
// "feature r,c" and lies at (gridLatitude + r·gridStep, gridLongitude + c·gridStep). A test
// computes from that how many features a rectangle holds.
func newRouteGuide(side int) *routeGuide {
	g := &routeGuide{byPoint: make(map[[2]int32]*routeguide.Feature)}
	for r := range side {
		for c := range side {
			f := &routeguide.Feature{
				Name: fmt.Sprintf("feature %d,%d", r, c),
				Location: &routeguide.Point{
					Latitude:  int32(gridLatitude + r*gridStep),
					Longitude: int32(gridLongitude + c*gridStep),
				},
			}
			g.features = append(g.features, f)
			g.byPoint[[2]int32{f.Location.Latitude, f.Location.Longitude}] = f
		}
	}
	return g
}

// GetFeature answers the feature at the point, or one with no name where there is none, as
// the service's definition says.
func (g *routeGuide) GetFeature(_ context.Context, p *routeguide.Point) (*routeguide.Feature, error) {
	if f := g.at(p); f != nil {
		return f, nil
	}
	return &routeguide.Feature{Location: p}, nil
}

func (g *routeGuide) at(p *routeguide.Point) *routeguide.Feature {
	return g.byPoint[[2]int32{p.GetLatitude(), p.GetLongitude()}]
}

// ListFeatures streams the features inside the rectangle, edges included, in grid order.
func (g *routeGuide) ListFeatures(rect *routeguide.Rectangle, stream grpc.ServerStreamingServer[routeguide.Feature]) error {
	lo, hi := rect.GetLo(), rect.GetHi()
	latLo, latHi := min(lo.GetLatitude(), hi.GetLatitude()), max(lo.GetLatitude(), hi.GetLatitude())
	lonLo, lonHi := min(lo.GetLongitude(), hi.GetLongitude()), max(lo.GetLongitude(), hi.GetLongitude())
	for _, f := range g.features {
		at := f.GetLocation()
		if at.GetLatitude() >= latLo && at.GetLatitude() <= latHi && at.GetLongitude() >= lonLo && at.GetLongitude() <= lonHi {
			if err := stream.Send(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// RecordRoute reads points until the client half-closes, then sums them up.
func (g *routeGuide) RecordRoute(stream grpc.ClientStreamingServer[routeguide.Point, routeguide.RouteSummary]) error {
	start := time.Now()
	var summary routeguide.RouteSummary
	var last *routeguide.Point
	for {
		p, err := stream.Recv()
		if err == io.EOF {
			summary.ElapsedTime = int32(time.Since(start) / time.Second)
			return stream.SendAndClose(&summary)
		}
		if err != nil {
			return err
		}
		summary.PointCount++
		if g.at(p) != nil {
			summary.FeatureCount++
		}
		if last != nil {
			summary.Distance += int32(metres(last, p))
		}
		last = p
	}
}

// RouteChat answers each note with one note of its own, so the messages each way match.
func (g *routeGuide) RouteChat(stream grpc.BidiStreamingServer[routeguide.RouteNote, routeguide.RouteNote]) error {
	for {
		note, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		reply := &routeguide.RouteNote{Location: note.GetLocation(), Message: "heard: " + note.GetMessage()}
		if err := stream.Send(reply); err != nil {
			return err
		}
	}
}

// metres is the great-circle distance between two points (haversine, on a sphere of the
// Earth's mean radius): RouteSummary's distance, which only has to be plausible.
func metres(a, b *routeguide.Point) float64 {
	const e7 = 1e7
	const earthRadius = 6371000.0
	rad := func(e7deg int32) float64 { return float64(e7deg) / e7 * math.Pi / 180 }
	lat1, lat2 := rad(a.GetLatitude()), rad(b.GetLatitude())
	dLat, dLon := lat2-lat1, rad(b.GetLongitude())-rad(a.GetLongitude())
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1)*math.Cos(lat2)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadius * math.Asin(math.Sqrt(h))
}
