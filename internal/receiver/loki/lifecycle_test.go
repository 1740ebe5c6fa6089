package loki

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
)

// blockingConsumer holds ConsumeLogs: it announces each call on entered,
// then waits for release to be closed.
func blockingConsumer(entered, release chan struct{}, sink *consumertest.LogsSink) consumer.Logs {
	c, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		entered <- struct{}{}
		<-release
		return sink.ConsumeLogs(ctx, ld)
	})
	if err != nil {
		panic(err)
	}
	return c
}

func startReceiver(t *testing.T, cfg *Config, next consumer.Logs) *lokiReceiver {
	t.Helper()
	lr, err := NewFactory().CreateLogs(context.Background(), testSettings(), cfg, next)
	require.NoError(t, err)
	require.NoError(t, lr.Start(context.Background(), componenttest.NewNopHost()))
	return lr.(*lokiReceiver)
}

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

// TestShutdownWaitsForRequests: a request in flight is answered, and its
// records delivered, before Shutdown returns.
func TestShutdownWaitsForRequests(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	sink := new(consumertest.LogsSink)
	r := startReceiver(t, testConfig(), blockingConsumer(entered, release, sink))
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()

	status := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{Transport: transport}).Post("http://"+r.addr.String()+linesPath+"?service=s",
			"text/plain", bytes.NewReader([]byte("in flight\n")))
		if err != nil {
			status <- -1
			return
		}
		_ = resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-entered

	shutdownDone := make(chan error, 1)
	go func() { shutdownDone <- r.Shutdown(context.Background()) }()
	select {
	case err := <-shutdownDone:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	require.NoError(t, <-shutdownDone)
	assert.Equal(t, http.StatusOK, <-status)
	assert.Equal(t, 1, sink.LogRecordCount())
	requireNotListening(t, r.addr)

	// Idempotent, as the Collector may call it again.
	require.NoError(t, r.Shutdown(context.Background()))
}

// TestShutdownTimeout: when ctx expires first, Shutdown cuts the
// connections and says so.
func TestShutdownTimeout(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	r := startReceiver(t, testConfig(), blockingConsumer(entered, release, new(consumertest.LogsSink)))
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := (&http.Client{Transport: transport}).Post("http://"+r.addr.String()+linesPath+"?service=s",
			"text/plain", bytes.NewReader([]byte("stuck\n")))
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.Shutdown(ctx)
	require.ErrorContains(t, err, "stopping the HTTP server")
	require.ErrorIs(t, err, context.Canceled)
	close(release) // let the handler finish, for goleak
	<-done
}

func TestStartPortTaken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()

	cfg := testConfig()
	cfg.ServerConfig.NetAddr.Endpoint = busy.Addr().String()
	lr, err := NewFactory().CreateLogs(context.Background(), testSettings(), cfg, consumertest.NewNop())
	require.NoError(t, err)
	err = lr.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, ": starting the HTTP server: listen tcp")
	require.ErrorContains(t, err, "address already in use")
	// The Collector still calls Shutdown.
	require.NoError(t, lr.Shutdown(context.Background()))
}

func TestShutdownWithoutStart(t *testing.T) {
	lr, err := NewFactory().CreateLogs(context.Background(), testSettings(), testConfig(), consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, lr.Shutdown(context.Background()))
}
