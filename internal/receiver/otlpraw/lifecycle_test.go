package otlpraw

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tracesift/tracesift/internal/tailsampler"
)

// requireNotListening checks that nothing accepts connections at addr any
// more. The port was ours a moment ago, so nobody else holds it.
func requireNotListening(t *testing.T, addr net.Addr) {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err == nil {
		_ = c.Close()
	}
	assert.Error(t, err, "%s still accepts connections", addr)
}

// TestStartShutdownOrder: the sampler starts before the servers exist and
// shuts down only after both servers stopped and the requests in flight
// (one per transport, held inside the sampler) have been answered.
func TestStartShutdownOrder(t *testing.T) {
	s := &fakeSampler{}
	var r *otlpRaw
	s.onStart = func() {
		assert.Nil(t, r.serverGRPC, "gRPC server created before the sampler started")
		assert.Nil(t, r.serverHTTP, "HTTP server created before the sampler started")
	}
	cfg := testConfig()
	f := newFactory(samplerFactoryOf(s))
	tr, err := f.CreateTraces(context.Background(), testSettings(), cfg, nopTraces())
	require.NoError(t, err)
	r = tr.(*otlpRaw)
	require.NoError(t, r.Start(context.Background(), nopHost()))
	started, stopped, _ := s.state()
	require.Equal(t, 1, started)
	require.Equal(t, 0, stopped)

	s.onShutdown = func() {
		requireNotListening(t, r.grpcAddr)
		requireNotListening(t, r.httpAddr)
	}
	conn, err := grpc.NewClient(r.grpcAddr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()

	entered, release := make(chan struct{}), make(chan struct{})
	s.hold(entered, release)
	grpcDone := make(chan error, 1)
	go func() {
		_, err := ptraceotlp.NewGRPCClient(conn).Export(context.Background(),
			ptraceotlp.NewExportRequestFromTraces(testTraces(4)))
		grpcDone <- err
	}()
	httpDone := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{Transport: transport}).Post("http://"+r.httpAddr.String()+"/v1/traces",
			pbContentType, bytes.NewReader(mustProto(t, testTraces(6))))
		if err != nil {
			httpDone <- -1
			return
		}
		_ = resp.Body.Close()
		httpDone <- resp.StatusCode
	}()
	<-entered
	<-entered

	shutdownDone := make(chan error, 1)
	go func() { shutdownDone <- r.Shutdown(context.Background()) }()
	close(release)

	require.NoError(t, <-shutdownDone)
	require.NoError(t, <-grpcDone, "an RPC in flight is answered before the server stops")
	require.Equal(t, http.StatusOK, <-httpDone, "a request in flight is answered before the server stops")
	started, stopped, problems := s.state()
	assert.Equal(t, 1, started)
	assert.Equal(t, 1, stopped)
	assert.Empty(t, problems)
	assert.Len(t, s.requests(), 2)

	// Idempotent, as the Collector calls it once per pipeline.
	require.NoError(t, r.Shutdown(context.Background()))
	_, stopped, _ = s.state()
	assert.Equal(t, 1, stopped)
}

// TestSharedReceiver: the traces and logs pipelines of one receiver id get
// one receiver, started and shut down once; after a shutdown the factory
// builds a new one.
func TestSharedReceiver(t *testing.T) {
	s := &fakeSampler{}
	f := newFactory(samplerFactoryOf(s))
	cfg := testConfig()
	set := testSettings()
	tr, err := f.CreateTraces(context.Background(), set, cfg, nopTraces())
	require.NoError(t, err)
	lr, err := f.CreateLogs(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.Same(t, tr, lr)
	assert.Same(t, &cfg.Sampler, s.cfg, "the sampler gets the receiver's `sampler` section")

	_, err = f.CreateTraces(context.Background(), set, cfg, nopTraces())
	assert.ErrorContains(t, err, "created twice")

	require.NoError(t, tr.Start(context.Background(), nopHost()))
	require.NoError(t, lr.Start(context.Background(), nopHost()))
	started, _, _ := s.state()
	assert.Equal(t, 1, started)

	require.NoError(t, tr.Shutdown(context.Background()))
	require.NoError(t, lr.Shutdown(context.Background()))
	_, stopped, _ := s.state()
	assert.Equal(t, 1, stopped)

	again, err := f.CreateLogs(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.NotSame(t, lr, again, "a shut down receiver is not handed out again")
	require.NoError(t, again.Shutdown(context.Background()))

	// Another config (another build, or another id) gets its own receiver.
	other, err := f.CreateLogs(context.Background(), set, testConfig(), consumertest.NewNop())
	require.NoError(t, err)
	assert.NotSame(t, lr, other)
	require.NoError(t, other.Shutdown(context.Background()))
}

func TestCreateErrors(t *testing.T) {
	set := testSettings()

	_, err := newFactory(nil).CreateTraces(context.Background(), set, testConfig(), nopTraces())
	assert.ErrorContains(t, err, "without a sampler factory")

	failing := func(context.Context, receiver.Settings, *tailsampler.Config, consumer.Traces) (TraceSampler, error) {
		return nil, errors.New("no memory for you")
	}
	_, err = newFactory(failing).CreateTraces(context.Background(), set, testConfig(), nopTraces())
	assert.ErrorContains(t, err, "creating the sampler: no memory for you")

	_, err = newFactory(samplerFactoryOf(&fakeSampler{})).CreateTraces(context.Background(), set,
		&tailsampler.Config{}, nopTraces())
	assert.ErrorContains(t, err, "unexpected config type")
}

// TestStartFailure: when a server cannot start, what did start (the
// sampler, the gRPC server) is stopped again and Start reports why.
func TestStartFailure(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()

	s := &fakeSampler{}
	cfg := testConfig()
	cfg.Protocols.HTTP.Get().ServerConfig.NetAddr.Endpoint = busy.Addr().String()
	r, err := newFactory(samplerFactoryOf(s)).CreateTraces(context.Background(), testSettings(), cfg, nopTraces())
	require.NoError(t, err)
	err = r.Start(context.Background(), nopHost())
	require.ErrorContains(t, err, "starting the HTTP server")
	started, stopped, _ := s.state()
	assert.Equal(t, 1, started)
	assert.Equal(t, 1, stopped, "the sampler is shut down again")
	requireNotListening(t, r.(*otlpRaw).grpcAddr)

	// The Collector still calls Shutdown: nothing more happens.
	require.NoError(t, r.Shutdown(context.Background()))
	_, stopped, _ = s.state()
	assert.Equal(t, 1, stopped)
}

// TestShutdownWithoutStart: the sampler the factory created is shut down
// even when the receiver never started.
func TestShutdownWithoutStart(t *testing.T) {
	s := &fakeSampler{}
	r, err := newFactory(samplerFactoryOf(s)).CreateTraces(context.Background(), testSettings(), testConfig(), nopTraces())
	require.NoError(t, err)
	require.NoError(t, r.Shutdown(context.Background()))
	_, stopped, _ := s.state()
	assert.Equal(t, 1, stopped)
}
