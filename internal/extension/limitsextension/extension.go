// Package limitsextension is the `tracesift_limits` extension: an HTTP
// middleware for the Collector's otlp receiver that answers oversized bodies
// with 413 instead of 400.
package limitsextension

//go:generate mdatagen metadata.yaml

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/tracesift/tracesift/internal/extension/limitsextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/httpbody"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionmiddleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const defaultMaxRequestBodySize = 16 << 20 // 16 MiB

// Config is the configuration of the tracesift_limits extension, an HTTP
// server middleware for the OTLP receiver:
//
//	extensions:
//	  tracesift_limits:
//	    max_request_body_size: 16777216
//	receivers:
//	  otlp:
//	    protocols:
//	      http:
//	        max_request_body_size: 16777216
//	        middlewares: [{id: tracesift_limits}]
type Config struct {
	// MaxRequestBodySize is the largest request body accepted, in bytes,
	// counted on the body as the receiver hands it over (after decompression).
	// Larger requests are answered 413 Request Entity Too Large, at once when
	// Content-Length already says so. Keep it equal to the receiver's own
	// max_request_body_size (default 20 MiB there), which this middleware also
	// turns from 400 into 413. Default 16777216 (16 MiB). Must be positive.
	MaxRequestBodySize int64 `mapstructure:"max_request_body_size"`
}

var _ component.Config = (*Config)(nil)

// Validate reports an invalid field, naming its YAML key.
func (c *Config) Validate() error {
	if c.MaxRequestBodySize <= 0 {
		return fmt.Errorf("`max_request_body_size` must be positive, got %d", c.MaxRequestBodySize)
	}
	return nil
}

func createDefaultConfig() component.Config {
	return &Config{MaxRequestBodySize: defaultMaxRequestBodySize}
}

// NewFactory returns the factory of the tracesift_limits
// extension.
//
// Why it exists: confighttp enforces the receiver's max_request_body_size with
// http.MaxBytesReader, and the OTLP receiver then reports the read error as 400
// Bad Request, which OTLP clients take for a malformed payload. 413 tells them
// (and whoever reads their logs) that the batch is too big.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createLimitsExtension,
		metadata.ExtensionStability)
}

func createLimitsExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("tracesift_limits: unexpected config type %T", cfg)
	}
	return newLimitsExtension(set, c)
}

// Reasons a request was rejected, the `reason` attribute of
// otelcol_tracesift_http_requests_too_large.
const (
	reasonContentLength = iota // Content-Length above our limit: rejected unread
	reasonBodyRead             // body read past our limit (chunked or decompressed)
	reasonReceiver             // the receiver's own limit fired and it answered 400
	numReasons
)

var reasonNames = [numReasons]string{"content_length", "body_read", "receiver"}

type limitsExtension struct {
	component.StartFunc

	max    int64
	logger *zap.Logger

	// tel holds the instruments declared in metadata.yaml (generated into
	// internal/metadata).
	tel      *metadata.TelemetryBuilder
	byReason [numReasons]metric.AddOption
	// warned keeps the explanation to one log line per extension; the
	// counter says how often it happens.
	warned atomic.Bool
}

var _ extensionmiddleware.HTTPServer = (*limitsExtension)(nil)

func newLimitsExtension(set extension.Settings, cfg *Config) (*limitsExtension, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("tracesift_limits: creating self-metrics: %w", err)
	}
	e := &limitsExtension{max: cfg.MaxRequestBodySize, logger: set.Logger, tel: tel}
	for i, r := range reasonNames {
		e.byReason[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	return e, nil
}

// Shutdown implements component.Component.
func (e *limitsExtension) Shutdown(context.Context) error {
	e.tel.Shutdown()
	return nil
}

// GetHTTPHandler implements extensionmiddleware.HTTPServer.
//
// confighttp applies middlewares innermost, after its own
// maxRequestBodySizeInterceptor and decompressor: r.Body here is already the
// receiver's http.MaxBytesReader over the decompressed body, and the
// ResponseWriter wrapped here is the one the OTLP handler writes its 400 to.
// That ordering is what lets this middleware see both the limit error and the
// status that reports it.
func (e *limitsExtension) GetHTTPHandler(context.Context) (extensionmiddleware.WrapHTTPHandlerFunc, error) {
	return func(_ context.Context, next http.Handler) (http.Handler, error) {
		return &limitsHandler{ext: e, next: next}, nil
	}, nil
}

type limitsHandler struct {
	ext  *limitsExtension
	next http.Handler
}

func (h *limitsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > h.ext.max {
		// Answer before the first Read: an "Expect: 100-continue" client then
		// never uploads the body, and nobody buffers it.
		h.ext.reject(w, r, reasonContentLength, h.ext.max)
		return
	}
	if r.Body == nil || r.Body == http.NoBody {
		h.next.ServeHTTP(w, r)
		return
	}
	body := &limitedBody{rc: r.Body, limit: h.ext.max, remaining: h.ext.max}
	r.Body = body
	h.next.ServeHTTP(&limitsWriter{ResponseWriter: w, ext: h.ext, req: r, body: body}, r)
}

// limitHit records which limit a body read ran into.
type limitHit struct {
	reason int
	limit  int64
}

// limitedBody enforces our own limit, like http.MaxBytesReader, and notices
// when the reader beneath (the receiver's MaxBytesReader) fails on its limit.
type limitedBody struct {
	rc        io.ReadCloser
	limit     int64
	remaining int64
	// hit is read by the ResponseWriter; atomic because nothing obliges a
	// handler to read the body on the goroutine that writes the response.
	hit atomic.Pointer[limitHit]
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.remaining < 0 {
		return 0, &http.MaxBytesError{Limit: b.limit}
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Ask for one byte more than allowed: getting it proves the body is too
	// large without reading further.
	if int64(len(p)) > b.remaining+1 {
		p = p[:b.remaining+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.remaining {
		n = int(b.remaining)
		b.remaining = -1
		b.hit.CompareAndSwap(nil, &limitHit{reason: reasonBodyRead, limit: b.limit})
		// The same error type as the receiver's own limit, so that any
		// handler that recognises one recognises both.
		return n, &http.MaxBytesError{Limit: b.limit}
	}
	b.remaining -= int64(n)
	if err != nil && err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			b.hit.CompareAndSwap(nil, &limitHit{reason: reasonReceiver, limit: mbe.Limit})
		}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// limitsWriter turns the inner handler's 400 into 413 once the body has hit a
// limit. The inner handler's error body (a google.rpc.Status saying
// "http: request body too large") is replaced by one that names the limit and
// the key that sets it.
type limitsWriter struct {
	http.ResponseWriter
	ext  *limitsExtension
	req  *http.Request
	body *limitedBody

	wroteHeader bool
	discard     bool // the inner handler's body is replaced by ours
}

func (w *limitsWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		// 1xx may precede the final status; a second final status is the
		// inner handler's bug, which net/http reports as it would without us.
		if !w.discard {
			w.ResponseWriter.WriteHeader(code)
		}
		return
	}
	w.wroteHeader = true
	if code == http.StatusBadRequest {
		if hit := w.body.hit.Load(); hit != nil {
			w.discard = true
			w.ext.reject(w.ResponseWriter, w.req, hit.reason, hit.limit)
			return
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *limitsWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.discard {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush keeps streaming handlers working behind the middleware.
func (w *limitsWriter) Flush() {
	if w.discard {
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *limitsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reject writes 413 with a message for the operator, encoded as OTLP/HTTP
// expects: a google.rpc.Status in the request's encoding (protobuf or JSON),
// plain text for anything else.
func (e *limitsExtension) reject(w http.ResponseWriter, r *http.Request, reason int, limit int64) {
	var who string
	if reason == reasonReceiver {
		who = "the receiver's `max_request_body_size` (protocols::http), counted on the body as " +
			"received and again after decompression"
	} else {
		who = "`max_request_body_size` of the tracesift_limits extension"
	}
	msg := httpbody.TooLargeMessage("the body", limit, who)

	e.tel.TracesiftHTTPRequestsTooLarge.Add(r.Context(), 1, e.byReason[reason])
	if e.warned.CompareAndSwap(false, true) {
		e.logger.Warn("Rejected an oversized HTTP request with 413; further rejections are only counted "+
			"in otelcol_tracesift_http_requests_too_large.",
			zap.String("reason", reasonNames[reason]), zap.String("path", r.URL.Path),
			zap.String("remote_addr", r.RemoteAddr), zap.Int64("content_length", r.ContentLength),
			zap.String("message", msg))
	}

	h := w.Header()
	if r.ProtoMajor == 1 {
		// The rest of an oversized body is still on the wire; closing is
		// cheaper than draining it to keep the connection. Not on HTTP/2,
		// where the stream is reset on its own and "Connection: close" would
		// send GOAWAY to every other stream of the client.
		h.Set("Connection", "close")
	}
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	var contentType string
	var payload []byte
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	st := &spb.Status{Code: int32(codes.InvalidArgument), Message: msg}
	switch mt {
	case "application/x-protobuf":
		if b, err := proto.Marshal(st); err == nil {
			contentType, payload = "application/x-protobuf", b
		}
	case "application/json":
		if b, err := protojson.Marshal(st); err == nil {
			contentType, payload = "application/json", b
		}
	}
	if payload == nil {
		contentType, payload = "text/plain; charset=utf-8", []byte(msg+"\n")
		h.Set("X-Content-Type-Options", "nosniff")
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = w.Write(payload) // the client may be gone; nothing else to tell it
}
