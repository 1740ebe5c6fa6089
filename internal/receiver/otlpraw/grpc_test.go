package otlpraw

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestGRPCTraces(t *testing.T) {
	e := newEnv(t, envOptions{})
	client := ptraceotlp.NewGRPCClient(e.conn)
	ctx := context.Background()

	plain := testTraces(40)
	resp, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(plain))
	require.NoError(t, err)
	assert.False(t, resp.PartialSuccess().RejectedSpans() != 0 || resp.PartialSuccess().ErrorMessage() != "",
		"partial_success must be unset")

	gzipped := testTraces(8)
	_, err = client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(gzipped), grpc.UseCompressor(gzip.Name))
	require.NoError(t, err)

	got := e.sampler.requests()
	require.Len(t, got, 2)
	requireSameTraces(t, plain, got[0])
	requireSameTraces(t, gzipped, got[1])
	// The protobuf path hands the sampler the very bytes the client sent.
	assert.Equal(t, mustProto(t, plain), got[0])

	assert.Equal(t, int64(2), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "grpc"), attribute.String("outcome", "ok")))
	assert.Equal(t, int64(len(got[0])+len(got[1])), counterValue(t, e, "otelcol_tracesift_receiver_bytes",
		attribute.String("signal", "traces")))
}

// Requests larger than the stream window arrive whole, several at once on
// one connection: the server's fixed windows still open as it reads, and
// pooled buffers reused from request to request hold no bytes of another.
func TestGRPCRequestsLargerThanTheWindow(t *testing.T) {
	e := newEnv(t, envOptions{})
	client := ptraceotlp.NewGRPCClient(e.conn)
	var want [][]byte
	for i := range 6 {
		// 5 and 1.2 MiB, alternately: a large buffer is then reused for a
		// smaller request.
		n := 24_000
		if i%2 == 1 {
			n = 6_000
		}
		b := mustProto(t, testTraces(n))
		if i == 0 {
			require.Greater(t, len(b), grpcStreamWindow, "the request must outgrow the stream window")
		}
		want = append(want, b)
	}
	errs := make(chan error, len(want))
	for _, b := range want {
		go func() {
			req := ptraceotlp.NewExportRequest()
			if err := req.UnmarshalProto(b); err != nil {
				errs <- err
				return
			}
			_, err := client.Export(context.Background(), req)
			errs <- err
		}()
	}
	for range want {
		require.NoError(t, <-errs)
	}
	got := e.sampler.requests()
	require.Len(t, got, len(want))
	assert.ElementsMatch(t, want, got)
}

func TestGRPCLogs(t *testing.T) {
	e := newEnv(t, envOptions{})
	client := plogotlp.NewGRPCClient(e.conn)
	ld := testLogs(5)
	_, err := client.Export(context.Background(), plogotlp.NewExportRequestFromLogs(ld))
	require.NoError(t, err)
	_, err = client.Export(context.Background(), plogotlp.NewExportRequestFromLogs(ld), grpc.UseCompressor(gzip.Name))
	require.NoError(t, err)
	all := e.logs.AllLogs()
	require.Len(t, all, 2)
	requireSameLogs(t, ld, all[0])
	requireSameLogs(t, ld, all[1])
	assert.Empty(t, e.sampler.requests())
}

// invokeRaw sends payload as the request of method, bypassing any encoding.
func invokeRaw(ctx context.Context, conn *grpc.ClientConn, method string, payload []byte) error {
	var resp rawMessage
	defer resp.free()
	return conn.Invoke(ctx, method, &rawMessage{b: payload}, &resp, grpc.ForceCodecV2(newRawCodec()))
}

func TestGRPCMalformed(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	// A span (field 2 of ScopeSpans) whose trace_id is 3 bytes long.
	bad := []byte{0x0a, 0x09, 0x12, 0x07, 0x12, 0x05, 0x0a, 0x03, 1, 2, 3}

	err := invokeRaw(ctx, e.conn, traceExportMethod, bad)
	st := status.Convert(err)
	assert.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	assert.Contains(t, st.Message(), "malformed OTLP trace request")
	assert.Contains(t, st.Message(), "trace_id")

	err = invokeRaw(ctx, e.conn, logsExportMethod, []byte{0xff, 0xff, 0xff})
	st = status.Convert(err)
	assert.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	assert.Contains(t, st.Message(), "malformed OTLP logs request")

	// A second malformed trace request: counted, not logged again.
	err = invokeRaw(ctx, e.conn, traceExportMethod, []byte{0x0a})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))

	assert.Empty(t, e.sampler.requests())
	assert.Equal(t, 0, e.logs.LogRecordCount())
	assert.Equal(t, int64(2), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "grpc"), attribute.String("outcome", "malformed")))
	assert.Equal(t, int64(1), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "logs"), attribute.String("transport", "grpc"), attribute.String("outcome", "malformed")))
	warns := e.logged.FilterMessageSnippet("malformed").All()
	require.Len(t, warns, 1, "a malformed request is explained once")
	assert.Equal(t, "traces", warns[0].ContextMap()["signal"])
	assert.Contains(t, warns[0].ContextMap()["error"], "trace_id")
	assert.NotEmpty(t, warns[0].ContextMap()["remote_addr"])
}

func TestGRPCOversized(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) {
		c.Protocols.GRPC.Get().MaxRecvMsgSizeMiB = 1
	}})
	td := testTraces(2)
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().
		PutStr("blob", strings.Repeat("x", 1<<20))
	_, err := ptraceotlp.NewGRPCClient(e.conn).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Empty(t, e.sampler.requests())
}

// pushbackErr is what the real sampler returns when its buffer is full.
func pushbackErr(t testing.TB, delay time.Duration) error {
	st, err := status.New(codes.ResourceExhausted, "tracesift_sampler: buffer full").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	require.NoError(t, err)
	return st.Err()
}

func TestGRPCSamplerErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	client := ptraceotlp.NewGRPCClient(e.conn)
	req := ptraceotlp.NewExportRequestFromTraces(testTraces(4))

	e.sampler.setErr(pushbackErr(t, 2*time.Second))
	_, err := client.Export(context.Background(), req)
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	assert.Equal(t, "tracesift_sampler: buffer full", st.Message())
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	require.NotNil(t, retry, "RetryInfo must reach the client")
	assert.Equal(t, 2*time.Second, retry.GetRetryDelay().AsDuration())

	e.sampler.setErr(errors.New("tracesift_sampler: shut down, not accepting spans"))
	_, err = client.Export(context.Background(), req)
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "shut down")

	assert.Equal(t, int64(1), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "grpc"), attribute.String("outcome", "refused")))
	assert.Equal(t, int64(1), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "grpc"), attribute.String("outcome", "error")))
}

// TestGRPCSignalNotConfigured: a receiver used by a traces pipeline only
// does not serve logs (Unimplemented), as the Collector's otlp receiver.
func TestGRPCSignalNotConfigured(t *testing.T) {
	s := &fakeSampler{}
	cfg := testConfig()
	r, err := newFactory(samplerFactoryOf(s)).CreateTraces(context.Background(), testSettings(), cfg, nopTraces())
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), nopHost()))
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

	conn, err := grpc.NewClient(r.(*otlpRaw).grpcAddr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = plogotlp.NewGRPCClient(conn).Export(context.Background(), plogotlp.NewExportRequestFromLogs(testLogs(1)))
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	_, err = ptraceotlp.NewGRPCClient(conn).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(testTraces(2)))
	assert.NoError(t, err)
}

func TestRawCodec(t *testing.T) {
	c := newRawCodec()
	assert.Equal(t, "proto", c.Name())

	// Raw bytes pass through both ways.
	out, err := c.Marshal(&rawMessage{b: []byte{1, 2, 3}})
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2, 3}, out.Materialize())
	var in rawMessage
	require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{4, 5}), mem.SliceBuffer([]byte{6})}, &in))
	assert.Equal(t, []byte{4, 5, 6}, in.b)
	in.free()

	out, err = c.Marshal(emptyMessage{})
	require.NoError(t, err)
	assert.Zero(t, out.Len(), "an empty export response is no bytes")

	// Anything else goes to the proto codec.
	st := &spb.Status{Code: 8, Message: "full"}
	out, err = c.Marshal(st)
	require.NoError(t, err)
	var back spb.Status
	require.NoError(t, c.Unmarshal(out, &back))
	assert.True(t, proto.Equal(st, &back))

	_, err = c.Marshal(struct{}{})
	assert.Error(t, err)
}

// TestRawCodecServesOtherServices: the codec is forced on the whole gRPC
// server, so services a middleware or the host add (health, reflection)
// must still work through it.
func TestRawCodecServesOtherServices(t *testing.T) {
	srv := grpc.NewServer(grpc.ForceServerCodecV2(newRawCodec()))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer func() {
		srv.Stop()
		require.NoError(t, <-done)
	}()

	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
}
