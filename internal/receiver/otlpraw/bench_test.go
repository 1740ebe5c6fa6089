package otlpraw

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/tap"

	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// benchSampler does what the real sampler does first, a scan into a pooled
// otlpwire.Request, and keeps nothing.
type benchSampler struct {
	component.StartFunc
	component.ShutdownFunc
	pool  sync.Pool
	spans atomic.Int64
}

func (s *benchSampler) ConsumeRawTraces(_ context.Context, req []byte) error {
	r, _ := s.pool.Get().(*otlpwire.Request)
	if r == nil {
		r = new(otlpwire.Request)
	}
	err := otlpwire.Scan(req, r)
	s.spans.Add(int64(len(r.Spans)))
	r.Reset()
	s.pool.Put(r)
	return err
}

// benchRequest is the shape of the measured OTLP traffic: 500 spans,
// about 10 attributes each.
func benchRequest(b *testing.B) []byte {
	return mustProto(b, testTraces(500))
}

func startBenchReceiver(b *testing.B) (*otlpRaw, *benchSampler) {
	s := &benchSampler{}
	f := newFactory(func(context.Context, receiver.Settings, *tailsampler.Config, consumer.Traces) (TraceSampler, error) {
		return s, nil
	})
	r, err := f.CreateTraces(context.Background(), testSettings(), testConfig(), nopTraces())
	require.NoError(b, err)
	require.NoError(b, r.Start(context.Background(), nopHost()))
	b.Cleanup(func() { require.NoError(b, r.Shutdown(context.Background())) })
	return r.(*otlpRaw), s
}

// BenchmarkHTTPProtobuf is the OTLP/HTTP protobuf path end to end over
// loopback: client POST, confighttp's handler chain, the pooled body read,
// the sampler's scan, the response. Allocations include the client's.
func BenchmarkHTTPProtobuf(b *testing.B) {
	r, s := startBenchReceiver(b)
	body := benchRequest(b)
	url := "http://" + r.httpAddr.String() + "/v1/traces"
	transport := &http.Transport{MaxIdleConnsPerHost: 8}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	post := func(rd *bytes.Reader) {
		rd.Reset(body)
		req, err := http.NewRequest(http.MethodPost, url, rd)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", pbContentType)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}

	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		s.spans.Store(0)
		rd := bytes.NewReader(body)
		for b.Loop() {
			post(rd)
		}
		b.ReportMetric(float64(s.spans.Load())/b.Elapsed().Seconds(), "spans/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		s.spans.Store(0)
		b.RunParallel(func(pb *testing.PB) {
			rd := bytes.NewReader(body)
			for pb.Next() {
				post(rd)
			}
		})
		b.ReportMetric(float64(s.spans.Load())/b.Elapsed().Seconds(), "spans/s")
	})
}

// BenchmarkHTTPHandlerProtobuf is the receiver's own share of the path
// above: handleTraces alone, no network, no client, no confighttp chain.
func BenchmarkHTTPHandlerProtobuf(b *testing.B) {
	r, _ := startBenchReceiver(b)
	body := benchRequest(b)
	rd := bytes.NewReader(body)
	req, err := http.NewRequest(http.MethodPost, "/v1/traces", rd)
	require.NoError(b, err)
	req.Header.Set("Content-Type", pbContentType)
	w := &testutil.DiscardWriter{H: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		clear(w.H)
		r.handleTraces(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkGRPCRaw is the gRPC path end to end, the request sent as
// prepared bytes so that the client costs little.
func BenchmarkGRPCRaw(b *testing.B) {
	r, _ := startBenchReceiver(b)
	body := benchRequest(b)
	conn, err := grpc.NewClient(r.grpcAddr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	b.Cleanup(func() { _ = conn.Close() })
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := invokeRaw(context.Background(), conn, traceExportMethod, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPdataUnmarshal is what the Collector's otlp receiver spends on
// the same request before anything can be dropped, for comparison.
func BenchmarkPdataUnmarshal(b *testing.B) {
	body := benchRequest(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGRPCReceptionGuard is what every gRPC export stream adds for
// max_bytes_in_flight and the read timeout: the tap's guard, then its
// release once the request has arrived, under a context like the
// transport's.
func BenchmarkGRPCReceptionGuard(b *testing.B) {
	r, _ := startBenchReceiver(b)
	info := &tap.Info{FullMethodName: traceExportMethod}
	b.ReportAllocs()
	for b.Loop() {
		parent, cancel := context.WithCancel(context.Background())
		ctx, err := r.tapGRPC(parent, info)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.received(ctx, signalTraces, nil); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
