package otlpraw

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// h2cClient speaks HTTP/2 without TLS, for gRPC streams driven by hand: part
// of a message, or a whole one without the half-close, which a gRPC client
// never sends.
func h2cClient(t testing.TB) *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// rawStream is a gRPC call whose request body the test writes.
type rawStream struct {
	// writes are written to the body in order by one goroutine, which does
	// not wait for the transport to take them (it stops taking them when
	// the server ends the call); closing it ends the body (half-close).
	writes chan []byte
	cancel context.CancelFunc
	// done gets how the call ended.
	done chan rawResult
}

type rawResult struct {
	status, message string // grpc-status and grpc-message
	err             error  // when the call failed without a status
}

// openRaw starts a call of method; its headers go out at once.
func openRaw(t testing.TB, c *http.Client, addr, method string) *rawStream {
	return openRawWith(t, c, addr, method, nil)
}

// openRawWith is openRaw with more request headers.
func openRawWith(t testing.TB, c *http.Client, addr, method string, h http.Header) *rawStream {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+method, pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	for k, v := range h {
		req.Header[k] = v
	}
	s := &rawStream{writes: make(chan []byte, 8), cancel: cancel, done: make(chan rawResult, 1)}
	go func() {
		for {
			select {
			case p, ok := <-s.writes:
				if !ok {
					_ = pw.Close()
					return
				}
				if _, err := pw.Write(p); err != nil {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			s.done <- rawResult{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		hdr := resp.Header // a trailers-only answer
		if hdr.Get("Grpc-Status") == "" {
			hdr = resp.Trailer
		}
		s.done <- rawResult{status: hdr.Get("Grpc-Status"), message: hdr.Get("Grpc-Message")}
	}()
	t.Cleanup(func() {
		cancel()
		// Unblocks the writer, which then ends.
		_ = pw.CloseWithError(io.ErrClosedPipe)
	})
	return s
}

func (s *rawStream) send(p []byte) { s.writes <- p }

// halfClose ends the request body once what was sent is written.
func (s *rawStream) halfClose() { close(s.writes) }

// result waits for the call to end.
func (s *rawStream) result(t testing.TB) rawResult {
	t.Helper()
	select {
	case r := <-s.done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end")
		return rawResult{}
	}
}

// grpcFrame is the gRPC framing of a message: a flags byte (1: compressed),
// the length the header announces, then the payload.
func grpcFrame(compressed bool, announced int, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	if compressed {
		b[0] = 1
	}
	binary.BigEndian.PutUint32(b[1:], uint32(announced))
	return append(b, payload...)
}

// requireNothingInReception: every export stream gave its reserve back.
func requireNothingInReception(t testing.TB, e *testEnv) {
	t.Helper()
	require.Eventually(t, func() bool {
		return e.r.inReception.Load() == 0 && e.r.bodies.Budget.Used() == 0
	}, 10*time.Second, time.Millisecond, "in reception: %d streams, %d bytes held",
		e.r.inReception.Load(), e.r.bodies.Budget.Used())
}

func grpcRequests(t testing.TB, e *testEnv, o string) int64 {
	t.Helper()
	return counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "grpc"), attribute.String("outcome", o))
}

// A gRPC request whose message has not arrived in full within the read
// timeout is cut: part of a message, a whole one without the half-close,
// headers alone. The receiver goes on serving.
func TestGRPCReadTimeout(t *testing.T) {
	e := newEnv(t, envOptions{receiver: func(r *otlpRaw) { r.grpcReadTimeout = 300 * time.Millisecond }})
	c := h2cClient(t)
	addr := e.r.grpcAddr.String()
	whole := mustProto(t, testTraces(20))

	partial := openRaw(t, c, addr, traceExportMethod)
	const announced = 1 << 20
	partial.send(grpcFrame(false, announced, bytes.Repeat([]byte{0x0a}, announced*7/8)))

	noHalfClose := openRaw(t, c, addr, traceExportMethod)
	noHalfClose.send(grpcFrame(false, len(whole), whole))

	headersOnly := openRaw(t, c, addr, traceExportMethod)

	for name, s := range map[string]*rawStream{"partial": partial, "no half-close": noHalfClose, "headers only": headersOnly} {
		r := s.result(t)
		require.NoError(t, r.err, name)
		assert.Equal(t, "4", r.status, "%s: DeadlineExceeded", name)
	}
	requireNothingInReception(t, e)
	assert.Empty(t, e.sampler.requests())
	assert.Equal(t, int64(3), grpcRequests(t, e, "error"))
	warns := e.logged.FilterMessageSnippet("had not arrived in full").All()
	require.Len(t, warns, 1, "explained once")
	assert.Contains(t, warns[0].ContextMap()["error"], "300ms")
	assert.NotEmpty(t, warns[0].ContextMap()["remote_addr"])

	// The same receiver, even the same connection, still serves.
	_, err := ptraceotlp.NewGRPCClient(e.conn).Export(context.Background(),
		ptraceotlp.NewExportRequestFromTraces(testTraces(20)))
	require.NoError(t, err)
	ok := openRaw(t, c, addr, traceExportMethod)
	ok.send(grpcFrame(false, len(whole), whole))
	ok.halfClose()
	assert.Equal(t, "0", ok.result(t).status)
	assert.Len(t, e.sampler.requests(), 2)
	assert.Equal(t, int64(2), grpcRequests(t, e, "ok"))
	requireNothingInReception(t, e)
}

// Once the request has arrived the read timeout no longer applies: a
// request held by the sampler for longer keeps its context and is answered.
func TestGRPCReadTimeoutSparesTheHandler(t *testing.T) {
	e := newEnv(t, envOptions{receiver: func(r *otlpRaw) { r.grpcReadTimeout = 200 * time.Millisecond }})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the receiver's Shutdown, which waits for the call
	e.sampler.hold(entered, release)
	held := make(chan error, 1)
	go func() {
		_, err := ptraceotlp.NewGRPCClient(e.conn).Export(context.Background(),
			ptraceotlp.NewExportRequestFromTraces(testTraces(4)))
		held <- err
	}()
	<-entered
	e.sampler.hold(nil, nil)
	assert.Zero(t, e.r.inReception.Load(), "the held request is no longer in reception")

	// A stream opened now is cut after the held request's timeout would
	// have passed too.
	late := openRaw(t, h2cClient(t), e.r.grpcAddr.String(), traceExportMethod)
	assert.Equal(t, "4", late.result(t).status)

	free()
	require.NoError(t, <-held)
	assert.Len(t, e.sampler.requests(), 1)
	e.sampler.mu.Lock()
	assert.Equal(t, []error{nil}, e.sampler.heldCtxErrs, "the handler's context was not cancelled")
	e.sampler.mu.Unlock()
	assert.Equal(t, int64(1), grpcRequests(t, e, "error"), "only the late stream timed out")
	requireNothingInReception(t, e)
}

// Streams in reception hold max_bytes_in_flight: when they hold all of it,
// a new stream is refused before anything of its request is read, with
// ResourceExhausted and RetryInfo, counted and explained once.
func TestGRPCStreamsInReceptionHoldTheBudget(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) {
		c.Protocols.GRPC.Get().MaxRecvMsgSizeMiB = 1
		c.Protocols.HTTP.Get().ServerConfig.MaxRequestBodySize = 1 << 20
		c.MaxBytesInFlight = 1 << 20
	}})
	c := h2cClient(t)
	n := int(e.r.cfg.MaxBytesInFlight / streamReserve)
	streams := make([]*rawStream, n)
	for i := range streams {
		streams[i] = openRaw(t, c, e.r.grpcAddr.String(), traceExportMethod)
	}
	require.Eventually(t, func() bool { return e.r.inReception.Load() == int64(n) }, 10*time.Second, time.Millisecond)
	assert.Equal(t, e.r.cfg.MaxBytesInFlight, e.r.bodies.Budget.Used())

	client := ptraceotlp.NewGRPCClient(e.conn)
	req := ptraceotlp.NewExportRequestFromTraces(testTraces(4))
	for range 2 {
		_, err := client.Export(context.Background(), req)
		st := status.Convert(err)
		require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
		assert.Contains(t, st.Message(), "max_bytes_in_flight")
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				retry = ri
			}
		}
		require.NotNil(t, retry, "the client must be told to retry")
		assert.Equal(t, time.Second, retry.GetRetryDelay().AsDuration())
	}
	assert.Equal(t, int64(2), grpcRequests(t, e, "refused"))
	warns := e.logged.FilterMessageSnippet("`max_bytes_in_flight`").All()
	require.Len(t, warns, 1, "explained once")
	assert.Equal(t, "grpc", warns[0].ContextMap()["transport"])
	assert.Contains(t, warns[0].Message, `outcome="refused"`)
	// HTTP is refused too while the budget is held.
	resp, _ := e.post(t, "/v1/traces", pbContentType, "", mustProto(t, testTraces(4)))
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	// Clients giving up mid-request give their reserve back.
	for _, s := range streams {
		s.cancel()
	}
	for _, s := range streams {
		s.result(t)
	}
	requireNothingInReception(t, e)
	// Counted by the handlers, after the clients have left.
	require.Eventually(t, func() bool { return grpcRequests(t, e, "error") == int64(n) }, 10*time.Second,
		time.Millisecond, "every abandoned request is counted: %d", grpcRequests(t, e, "error"))
	_, err := client.Export(context.Background(), req)
	require.NoError(t, err)
	requireNothingInReception(t, e)
}

// Whatever ends a stream in reception, its reserve comes back exactly once:
// the count is zero after each way out.
func TestGRPCReserveReturns(t *testing.T) {
	e := newEnv(t, envOptions{
		config:   func(c *Config) { c.Protocols.GRPC.Get().MaxRecvMsgSizeMiB = 1 },
		receiver: func(r *otlpRaw) { r.grpcReadTimeout = 500 * time.Millisecond },
	})
	c := h2cClient(t)
	addr := e.r.grpcAddr.String()
	whole := mustProto(t, testTraces(20))
	// A call must have been held in reception for the test to mean anything.
	inReception := func(t *testing.T) {
		t.Helper()
		require.Eventually(t, func() bool { return e.r.inReception.Load() == 1 }, 10*time.Second, time.Millisecond)
		assert.Equal(t, int64(streamReserve), e.r.bodies.Budget.Used())
	}

	t.Run("completed", func(t *testing.T) {
		s := openRaw(t, c, addr, traceExportMethod)
		inReception(t)
		s.send(grpcFrame(false, len(whole), whole))
		s.halfClose()
		assert.Equal(t, "0", s.result(t).status)
		requireNothingInReception(t, e)
	})
	t.Run("client aborts mid-message", func(t *testing.T) {
		s := openRaw(t, c, addr, traceExportMethod)
		s.send(grpcFrame(false, 1<<19, bytes.Repeat([]byte{0x0a}, 1<<18)))
		inReception(t)
		s.cancel()
		s.result(t)
		requireNothingInReception(t, e)
	})
	t.Run("read timeout", func(t *testing.T) {
		s := openRaw(t, c, addr, traceExportMethod)
		s.send(grpcFrame(false, 1<<19, bytes.Repeat([]byte{0x0a}, 1<<18)))
		inReception(t)
		assert.Equal(t, "4", s.result(t).status)
		requireNothingInReception(t, e)
	})
	t.Run("over max_recv_msg_size", func(t *testing.T) {
		s := openRaw(t, c, addr, traceExportMethod)
		inReception(t)
		s.send(grpcFrame(false, 1<<20+1, bytes.Repeat([]byte{0x0a}, 1<<16)))
		assert.Equal(t, "8", s.result(t).status, "ResourceExhausted")
		requireNothingInReception(t, e)
	})
	t.Run("over max_recv_msg_size once decompressed", func(t *testing.T) {
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		_, err := zw.Write(make([]byte, 2<<20))
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		s := openRawEncoded(t, c, addr, "gzip")
		inReception(t)
		s.send(grpcFrame(true, zipped.Len(), zipped.Bytes()))
		s.halfClose()
		assert.Equal(t, "8", s.result(t).status, "ResourceExhausted")
		requireNothingInReception(t, e)
	})
	t.Run("unknown compression", func(t *testing.T) {
		// Refused by gRPC before the handler runs.
		s := openRawEncoded(t, c, addr, "lz77")
		s.send(grpcFrame(true, len(whole), whole))
		assert.Equal(t, "12", s.result(t).status, "Unimplemented")
		requireNothingInReception(t, e)
	})

	assert.Equal(t, int64(1), grpcRequests(t, e, "ok"))
	// Failed reads are counted by the handler, after gRPC has answered.
	require.Eventually(t, func() bool {
		return grpcRequests(t, e, "malformed") == 2 && grpcRequests(t, e, "error") == 2
	}, 10*time.Second, time.Millisecond, "both oversized requests (%d), the abort and the timeout (%d)",
		grpcRequests(t, e, "malformed"), grpcRequests(t, e, "error"))
	assert.Len(t, e.logged.FilterMessageSnippet("oversized OTLP/gRPC").All(), 1, "explained once")
}

// openRawEncoded is openRaw with a grpc-encoding.
func openRawEncoded(t testing.TB, c *http.Client, addr, encoding string) *rawStream {
	return openRawWith(t, c, addr, traceExportMethod, http.Header{"Grpc-Encoding": {encoding}})
}
