package loki

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/tracesift/tracesift/internal/httpbody"
)

// URL paths served.
const (
	pushPath       = "/loki/api/v1/push"
	legacyPushPath = "/api/prom/push" // Loki's first push path, same API
	linesPath      = "/api/v1/logs/lines"
)

// lokiReceiver is one tracesift_loki receiver: one HTTP server.
type lokiReceiver struct {
	cfg    *Config
	set    receiver.Settings
	logger *zap.Logger
	tel    *telemetry
	next   consumer.Logs
	// clock gives the receive time; tests fix it.
	clock func() time.Time
	// limiter bounds the records a second (max_lines_per_second); nil
	// without a bound.
	limiter *rate.Limiter

	server *http.Server
	// addr is where the server listens (the port chosen when the endpoint
	// says :0); set in Start.
	addr net.Addr
	// maxBodySize is the body limit in effect, for the 413 message.
	maxBodySize int64
	serveWG     sync.WaitGroup
	stopOnce    sync.Once
	stopErr     error

	// bodies recycles request buffers, snappyBufs the buffers of decoded
	// protobuf pushes, decoders their scratch space: what the records keep
	// is copied out of them.
	bodies     httpbody.Pool
	snappyBufs sync.Pool
	decoders   sync.Pool

	// warned keeps each kind of bad input to one explanatory log line per
	// receiver; the metrics count them all.
	warned [numWarnings]atomic.Bool
}

var _ receiver.Logs = (*lokiReceiver)(nil)

func newReceiver(cfg *Config, set receiver.Settings, next consumer.Logs) (*lokiReceiver, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("%s: creating self-metrics: %w", set.ID, err)
	}
	logger := set.TelemetrySettings.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	r := &lokiReceiver{cfg: cfg, set: set, logger: logger, tel: tel, next: next, clock: time.Now}
	r.bodies.Budget = httpbody.NewBudget(cfg.MaxBytesInFlight)
	if n := cfg.MaxLinesPerSecond; n > 0 {
		r.limiter = rate.NewLimiter(rate.Limit(n), n)
	}
	return r, nil
}

// Start starts the HTTP server; it fails when the endpoint cannot be
// listened on (the port is taken).
func (r *lokiReceiver) Start(ctx context.Context, host component.Host) error {
	mux := http.NewServeMux()
	mux.HandleFunc(pushPath, r.handlePush)
	mux.HandleFunc(legacyPushPath, r.handlePush)
	mux.HandleFunc(linesPath, r.handleLines)
	sc := &r.cfg.ServerConfig
	srv, err := sc.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux,
		confighttp.WithErrorHandler(r.transportError))
	if err != nil {
		return fmt.Errorf("%s: creating the HTTP server: %w", r.set.ID, err)
	}
	// Outermost, so that it sees the Content-Encoding confighttp removes
	// once it has decoded the body.
	srv.Handler = withContentEncoding(srv.Handler)
	// After ToServer, which fills in its default when unset.
	r.maxBodySize = sc.MaxRequestBodySize
	ln, err := sc.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("%s: starting the HTTP server: %w", r.set.ID, err)
	}
	r.server, r.addr = srv, ln.Addr()
	r.logger.Info("Starting HTTP server", zap.String("endpoint", ln.Addr().String()))
	r.serveWG.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(
				fmt.Errorf("%s: HTTP server: %w", r.set.ID, err)))
		}
	})
	return nil
}

// Shutdown stops the server, waiting (as long as ctx allows) for the
// requests in flight to be answered: what was accepted has reached the
// next consumer. Safe to call without Start and more than once.
func (r *lokiReceiver) Shutdown(ctx context.Context) error {
	r.stopOnce.Do(func() {
		defer r.tel.Shutdown()
		if r.server == nil {
			return
		}
		if err := r.server.Shutdown(ctx); err != nil {
			// Out of time: cut the connections still open.
			r.stopErr = fmt.Errorf("%s: stopping the HTTP server: %w", r.set.ID, err)
			_ = r.server.Close()
		}
		r.serveWG.Wait()
	})
	return r.stopErr
}

// contentEncodingKey is the context key of a request's Content-Encoding as
// it arrived.
type contentEncodingKey struct{}

func withContentEncoding(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if ce := req.Header.Get("Content-Encoding"); ce != "" {
			req = req.WithContext(context.WithValue(req.Context(), contentEncodingKey{}, ce))
		}
		h.ServeHTTP(w, req)
	})
}

// snappyRemoved reports whether confighttp already took a snappy layer off
// the body: the client sent "Content-Encoding: snappy", so the body it
// sent is the snappy-compressed protobuf, and what is left is the protobuf.
// (Promtail, Alloy and Vector send no Content-Encoding for snappy.)
func snappyRemoved(req *http.Request) bool {
	ce, _ := req.Context().Value(contentEncodingKey{}).(string)
	return (ce == "snappy" || ce == "x-snappy-framed") && req.Header.Get("Content-Encoding") == ""
}

// maxPooledScratch bounds the scratch buffers a pooled decoder keeps.
const maxPooledScratch = 1 << 20

// getDecoder returns a pooled decoder set for a request received at now.
func (r *lokiReceiver) getDecoder(now pcommon.Timestamp) *decoder {
	d, _ := r.decoders.Get().(*decoder)
	if d == nil {
		d = newDecoder(r.cfg.MaxLineBytes)
	}
	d.maxRecords = r.cfg.MaxRecordsPerRequest
	d.reset(now)
	return d
}

func (r *lokiReceiver) putDecoder(d *decoder) {
	// Nothing of the request may stay reachable from a pooled decoder.
	clear(d.labels)
	clear(d.meta)
	clear(d.attrs)
	d.labels, d.meta, d.attrs = d.labels[:0], d.meta[:0], d.attrs[:0]
	d.json.reset(nil)
	d.stats.reset()
	// A rare huge value should not pin its scratch space.
	for _, b := range []*[]byte{&d.json.keyBuf, &d.json.valBuf, &d.json.skipBuf, &d.join, &d.path, &d.lower} {
		if cap(*b) > maxPooledScratch {
			*b = nil
		}
	}
	r.decoders.Put(d)
}
