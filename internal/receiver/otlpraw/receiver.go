package otlpraw

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/tracesift/tracesift/internal/httpbody"
)

// otlpRaw is one tracesift_otlp receiver: one gRPC and one HTTP server
// shared by its traces and logs pipelines (the factory hands the same value
// out for both), the sampler its traces go to, and the logs consumer.
type otlpRaw struct {
	cfg    *Config
	set    receiver.Settings
	logger *zap.Logger
	tel    *telemetry

	// sampler and nextLogs are set by the factory before Start; nil when no
	// pipeline of that signal uses the receiver, and then the signal is not
	// served (gRPC Unimplemented, HTTP 404), as in the Collector.
	sampler  TraceSampler
	nextLogs consumer.Logs

	// remove takes the receiver out of the factory's map, so that a new
	// one can be built for the same id and config after a shutdown.
	remove func()

	serverGRPC *grpc.Server
	serverHTTP *http.Server
	// grpcAddr and httpAddr are where the servers listen (the port chosen
	// when the endpoint says :0); set in Start.
	grpcAddr, httpAddr net.Addr
	// maxBodySize is the HTTP body limit in effect, for the 413 message.
	maxBodySize int64
	serveWG     sync.WaitGroup

	startOnce sync.Once
	startErr  error
	stopOnce  sync.Once
	stopErr   error

	// hosts are the component hosts of every pipeline that started the
	// receiver: a server failing later is reported to all of them.
	hostsMu sync.Mutex
	hosts   []component.Host
	fatal   *componentstatus.Event

	// bodies recycles HTTP request buffers: the sampler does not retain
	// the request, so a buffer is free again once the answer is decided.
	// Its Budget is max_bytes_in_flight, for gRPC requests too.
	bodies httpbody.Pool

	// grpcReadTimeout bounds the time from a gRPC export stream's opening
	// to its whole request having arrived (httpbody.ReadTimeout).
	grpcReadTimeout time.Duration
	// inReception counts the gRPC export streams whose request has not
	// arrived yet (each holding streamReserve).
	inReception atomic.Int64

	// warned keeps each kind of rejection to one explanatory log line per
	// receiver; otelcol_tracesift_receiver_requests counts them all.
	warned [numRejections]atomic.Bool
}

var (
	_ receiver.Traces = (*otlpRaw)(nil)
	_ receiver.Logs   = (*otlpRaw)(nil)
	_ grpcExporter    = (*otlpRaw)(nil)
)

func newOTLPRaw(cfg *Config, set receiver.Settings) (*otlpRaw, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("%s: creating self-metrics: %w", set.ID, err)
	}
	logger := set.TelemetrySettings.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	r := &otlpRaw{cfg: cfg, set: set, logger: logger, tel: tel, grpcReadTimeout: httpbody.ReadTimeout}
	r.bodies.Budget = httpbody.NewBudget(cfg.MaxBytesInFlight)
	return r, nil
}

// Start starts the sampler, then the servers: no request can reach a
// sampler that is not running. Called by every pipeline sharing the
// receiver; the first call does the work and later ones return its result.
func (r *otlpRaw) Start(ctx context.Context, host component.Host) error {
	r.addHost(host)
	r.startOnce.Do(func() {
		r.startErr = r.start(ctx, host)
	})
	return r.startErr
}

func (r *otlpRaw) start(ctx context.Context, host component.Host) error {
	if r.sampler != nil {
		if err := r.sampler.Start(ctx, host); err != nil {
			return errors.Join(fmt.Errorf("%s: starting the sampler: %w", r.set.ID, err), r.Shutdown(ctx))
		}
	}
	if err := r.startGRPC(ctx, host); err != nil {
		// Stop what runs already (the sampler, a server) here rather than
		// count on a Shutdown call after a failed Start.
		return errors.Join(fmt.Errorf("%s: starting the gRPC server: %w", r.set.ID, err), r.Shutdown(ctx))
	}
	if err := r.startHTTP(ctx, host); err != nil {
		return errors.Join(fmt.Errorf("%s: starting the HTTP server: %w", r.set.ID, err), r.Shutdown(ctx))
	}
	return nil
}

// HTTP/2 flow-control windows of the gRPC server, fixed instead of grown
// from 64 KiB by a bandwidth estimate: a request of up to 4 MiB arrives
// without window updates or estimation pings, and a connection holds no
// more unread bytes than the estimate could have let it (16 MiB).
const (
	grpcStreamWindow = 4 << 20
	grpcConnWindow   = 8 << 20
)

func (r *otlpRaw) startGRPC(ctx context.Context, host component.Host) error {
	gc := r.cfg.Protocols.GRPC.Get()
	if gc == nil {
		return nil
	}
	srv, err := gc.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings,
		configgrpc.WithGrpcServerOption(grpc.ForceServerCodecV2(newRawCodec())),
		configgrpc.WithGrpcServerOption(experimental.BufferPool(&receivedRequests)),
		configgrpc.WithGrpcServerOption(grpc.StaticStreamWindowSize(grpcStreamWindow)),
		configgrpc.WithGrpcServerOption(grpc.StaticConnWindowSize(grpcConnWindow)),
		// Not a stats handler: the stream's reader does not see TagRPC's context.
		configgrpc.WithGrpcServerOption(grpc.InTapHandle(r.tapGRPC)))
	if err != nil {
		return err
	}
	if r.sampler != nil {
		srv.RegisterService(&traceServiceDesc, r)
	}
	if r.nextLogs != nil {
		srv.RegisterService(&logsServiceDesc, r)
	}
	ln, err := gc.NetAddr.Listen(ctx)
	if err != nil {
		srv.Stop()
		return err
	}
	r.serverGRPC, r.grpcAddr = srv, ln.Addr()
	r.logger.Info("Starting GRPC server", zap.String("endpoint", ln.Addr().String()))
	r.serveWG.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			r.reportFatal(fmt.Errorf("%s: gRPC server: %w", r.set.ID, err))
		}
	})
	return nil
}

func (r *otlpRaw) startHTTP(ctx context.Context, host component.Host) error {
	hc := r.cfg.Protocols.HTTP.Get()
	if hc == nil {
		return nil
	}
	mux := http.NewServeMux()
	if r.sampler != nil {
		mux.HandleFunc(string(hc.TracesURLPath), r.handleTraces)
	}
	if r.nextLogs != nil {
		mux.HandleFunc(string(hc.LogsURLPath), r.handleLogs)
	}
	srv, err := hc.ServerConfig.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux,
		withHTTPErrorHandler(r))
	if err != nil {
		return err
	}
	// After ToServer, which fills in its default when unset.
	r.maxBodySize = hc.ServerConfig.MaxRequestBodySize
	ln, err := hc.ServerConfig.ToListener(ctx)
	if err != nil {
		return err
	}
	r.serverHTTP, r.httpAddr = srv, ln.Addr()
	r.logger.Info("Starting HTTP server", zap.String("endpoint", ln.Addr().String()))
	r.serveWG.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.reportFatal(fmt.Errorf("%s: HTTP server: %w", r.set.ID, err))
		}
	})
	return nil
}

// Shutdown stops the servers, waiting for the requests in flight, then
// shuts the sampler down, which decides and flushes what it buffered to the
// next consumer: nothing accepted is lost, nothing arrives after. Called by
// every pipeline sharing the receiver; the first call does the work.
func (r *otlpRaw) Shutdown(ctx context.Context) error {
	r.stopOnce.Do(func() {
		var errs []error
		if r.serverHTTP != nil {
			if err := r.serverHTTP.Shutdown(ctx); err != nil {
				// Out of time: cut the connections still open. Their
				// handlers may still call the sampler, which then refuses.
				errs = append(errs, fmt.Errorf("%s: stopping the HTTP server: %w", r.set.ID, err))
				_ = r.serverHTTP.Close()
			}
		}
		if r.serverGRPC != nil {
			if err := gracefulStop(ctx, r.serverGRPC); err != nil {
				errs = append(errs, fmt.Errorf("%s: stopping the gRPC server: %w", r.set.ID, err))
			}
		}
		r.serveWG.Wait()
		if r.sampler != nil {
			if err := r.sampler.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: shutting down the sampler: %w", r.set.ID, err))
			}
		}
		r.tel.Shutdown()
		if r.remove != nil {
			r.remove()
		}
		r.stopErr = errors.Join(errs...)
	})
	return r.stopErr
}

// gracefulStop waits for the RPCs in flight like GracefulStop, but no
// longer than ctx allows.
func gracefulStop(ctx context.Context, s *grpc.Server) error {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Stop()
		<-done
		return ctx.Err()
	}
}

func (r *otlpRaw) addHost(host component.Host) {
	r.hostsMu.Lock()
	defer r.hostsMu.Unlock()
	r.hosts = append(r.hosts, host)
	if r.fatal != nil {
		componentstatus.ReportStatus(host, r.fatal)
	}
}

// reportFatal tells every pipeline's host that a server stopped serving.
func (r *otlpRaw) reportFatal(err error) {
	r.hostsMu.Lock()
	defer r.hostsMu.Unlock()
	r.fatal = componentstatus.NewFatalErrorEvent(err)
	for _, h := range r.hosts {
		componentstatus.ReportStatus(h, r.fatal)
	}
}

// consumeTraces hands raw request bytes to the sampler and returns the
// status to answer with (nil: success).
func (r *otlpRaw) consumeTraces(ctx context.Context, req []byte, tr transport, hr *http.Request) *status.Status {
	st := traceStatus(r.sampler.ConsumeRawTraces(ctx, req))
	r.record(ctx, signalTraces, tr, st, hr)
	return st
}

// record counts a request by outcome and explains the first malformed one.
// hr is the HTTP request, nil for gRPC.
func (r *otlpRaw) record(ctx context.Context, sig signal, tr transport, st *status.Status, hr *http.Request) {
	o := outcomeOf(st)
	r.tel.TracesiftReceiverRequests.Add(ctx, 1, r.tel.requestAttrs[sig][tr][o]...)
	if o == outcomeMalformed {
		r.explain(ctx, rejectMalformed, sig, tr, st.Message(), hr)
	}
}

// rejection is why a request was refused or cut off.
type rejection int

const (
	rejectMalformed    rejection = iota // not a valid OTLP request
	rejectTooLarge                      // over max_request_body_size
	rejectUnsupported                   // HTTP method or Content-Type
	rejectTooLargeGRPC                  // over max_recv_msg_size_mib
	rejectBusy                          // max_bytes_in_flight full
	rejectReadTimeout                   // gRPC request not in within the read timeout
	numRejections
)

var rejectionText = [numRejections]string{
	rejectMalformed: "Rejected a malformed OTLP request (HTTP 400 / gRPC InvalidArgument): its bytes are not a " +
		"valid OTLP export request; fix or upgrade the client that sent it.",
	rejectTooLarge: "Rejected an oversized OTLP/HTTP request with 413: lower the exporter's batch size or raise " +
		"`protocols::http::max_request_body_size`.",
	rejectUnsupported: "Rejected an OTLP/HTTP request with an unsupported method (405) or Content-Type (415): " +
		"OTLP/HTTP is POST with application/x-protobuf or application/json.",
	rejectTooLargeGRPC: "Rejected an oversized OTLP/gRPC request with ResourceExhausted: lower the exporter's " +
		"batch size or raise `protocols::grpc::max_recv_msg_size_mib`.",
	rejectBusy: "Refused an OTLP request (HTTP 429 / gRPC ResourceExhausted, retried by the client after a " +
		"delay): the requests in flight hold `max_bytes_in_flight`. If this persists, raise it or find what " +
		"holds requests (a slow pipeline behind the receiver, slow clients).",
	rejectReadTimeout: "Aborted an OTLP/gRPC request whose message had not arrived in full within the read " +
		"timeout (client answered DeadlineExceeded, its bytes dropped): the client or its network is too slow " +
		"for its batch size, or it stopped sending.",
}

// rejectionOutcome is the outcome each rejection is counted under.
var rejectionOutcome = [numRejections]outcome{
	rejectMalformed:    outcomeMalformed,
	rejectTooLarge:     outcomeMalformed,
	rejectUnsupported:  outcomeMalformed,
	rejectTooLargeGRPC: outcomeMalformed,
	rejectBusy:         outcomeRefused,
	rejectReadTimeout:  outcomeError,
}

// explain logs the first rejection of each kind; the rest are counted in
// otelcol_tracesift_receiver_requests only, so a broken client cannot flood
// the log.
func (r *otlpRaw) explain(ctx context.Context, why rejection, sig signal, tr transport, msg string, hr *http.Request) {
	if !r.warned[why].CompareAndSwap(false, true) {
		return
	}
	fields := []zap.Field{
		zap.String("signal", signalNames[sig]), zap.String("transport", transportNames[tr]),
		zap.String("error", msg),
	}
	if hr != nil {
		fields = append(fields, zap.String("remote_addr", hr.RemoteAddr), zap.String("method", hr.Method),
			zap.String("path", hr.URL.Path), zap.String("content_type", hr.Header.Get("Content-Type")))
	} else if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		fields = append(fields, zap.String("remote_addr", p.Addr.String()))
	}
	r.logger.Warn(rejectionText[why]+" Further ones are only counted in "+
		"otelcol_tracesift_receiver_requests{outcome=\""+outcomeNames[rejectionOutcome[why]]+
		"\"} (this message is logged once).", fields...)
}

// reject counts a request refused as the client's fault and explains the
// first of its kind. req is the HTTP request, nil for gRPC.
func (r *otlpRaw) reject(ctx context.Context, why rejection, sig signal, tr transport, msg string, req *http.Request) {
	r.tel.TracesiftReceiverRequests.Add(ctx, 1, r.tel.requestAttrs[sig][tr][rejectionOutcome[why]]...)
	r.explain(ctx, why, sig, tr, msg, req)
}
