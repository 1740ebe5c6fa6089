package bench

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// countingServer answers every export and counts the spans.
type countingServer struct {
	ptraceotlp.UnimplementedGRPCServer
	spans atomic.Int64
}

func (s *countingServer) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	s.spans.Add(int64(req.Traces().SpanCount()))
	return ptraceotlp.NewExportResponse(), nil
}

// A held load sends nothing until released, and only whole cycles: what
// BenchmarkREDCost's alternate slices rest on.
func TestLoadHoldAndRelease(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	cs := &countingServer{}
	ptraceotlp.RegisterGRPCServer(srv, cs)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	load, err := StartLoad(LoadConfig{Endpoint: lis.Addr().String(), Conns: 2, Seed: 1, Rate: 200_000})
	require.NoError(t, err)
	defer load.Stop(10 * time.Second)
	cycle := int64(CycleTraces * SpansPerTrace)
	for range 3 {
		load.Hold()
		held := load.Counts().SpansAccepted
		require.Equal(t, held, cs.spans.Load(), "nothing in flight once Hold returns")
		require.Zero(t, held%cycle, "senders stop between cycles")
		// Nothing more goes out while held: a sender would need a cycle's
		// requests in flight, and none may start.
		require.Never(t, func() bool { return cs.spans.Load() != held }, 300*time.Millisecond, 10*time.Millisecond)
		load.Release()
		require.Eventually(t, func() bool { return cs.spans.Load() > held }, 10*time.Second, time.Millisecond)
	}
	load.Stop(10 * time.Second)
	load.Stop(time.Second) // a second Stop does nothing
}
