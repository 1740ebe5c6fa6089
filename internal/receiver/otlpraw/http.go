package otlpraw

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tracesift/tracesift/internal/httpbody"
	"github.com/tracesift/tracesift/internal/tenant"
)

const (
	pbContentType   = "application/x-protobuf"
	jsonContentType = "application/json"

	// emptyJSONResponse is an export response with partial_success unset;
	// in protobuf it is no bytes at all.
	emptyJSONResponse = "{}"
)

// bodyEncoding is the encoding of an OTLP/HTTP request, and of its answer.
type bodyEncoding int

const (
	encProto bodyEncoding = iota
	encJSON
)

func (e bodyEncoding) contentType() string {
	if e == encJSON {
		return jsonContentType
	}
	return pbContentType
}

// requestEncoding reads the Content-Type; ok is false for anything but
// protobuf and JSON.
func requestEncoding(req *http.Request) (enc bodyEncoding, ok bool) {
	ct := req.Header.Get("Content-Type")
	// The exact values are what OTLP exporters send: skip the parser.
	switch ct {
	case pbContentType:
		return encProto, true
	case jsonContentType:
		return encJSON, true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return encProto, false
	}
	switch mt {
	case pbContentType:
		return encProto, true
	case jsonContentType:
		return encJSON, true
	}
	return encProto, false
}

// handleTraces serves POST /v1/traces. A protobuf body goes to the sampler
// as read; a JSON one is decoded with pdata and re-encoded to protobuf (the
// slow path: JSON clients are rare and JSON is slower to parse anyway).
func (r *otlpRaw) handleTraces(w http.ResponseWriter, req *http.Request) {
	enc, ok := r.checkRequest(w, req, signalTraces)
	if !ok {
		return
	}
	body, ok := r.readBody(w, req, signalTraces, enc)
	if !ok {
		return
	}
	defer r.bodies.Put(body)
	ctx := req.Context()
	raw := body.Bytes()
	if enc == encJSON {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
		if err != nil {
			st := status.New(codes.InvalidArgument, "malformed OTLP/JSON trace request: "+err.Error())
			r.record(ctx, signalTraces, transportHTTP, st, req)
			writeStatus(w, enc, httpStatusCode(st.Code()), st)
			return
		}
		if raw, err = (&ptrace.ProtoMarshaler{}).MarshalTraces(td); err != nil {
			st := status.New(codes.Internal, "encoding the OTLP/JSON trace request as protobuf: "+err.Error())
			r.record(ctx, signalTraces, transportHTTP, st, req)
			writeStatus(w, enc, httpStatusCode(st.Code()), st)
			return
		}
	}
	if st := r.consumeTraces(ctx, raw, transportHTTP, req); st != nil {
		writeStatus(w, enc, httpStatusCode(st.Code()), st)
		return
	}
	writeSuccess(w, enc)
}

// handleLogs serves POST /v1/logs: logs are decoded with pdata (they are
// all kept, so there is nothing to save by not decoding them).
func (r *otlpRaw) handleLogs(w http.ResponseWriter, req *http.Request) {
	enc, ok := r.checkRequest(w, req, signalLogs)
	if !ok {
		return
	}
	body, ok := r.readBody(w, req, signalLogs, enc)
	if !ok {
		return
	}
	// pdata copies what it decodes, so the buffer is free once decoded.
	lr := plogotlp.NewExportRequest()
	var err error
	if enc == encJSON {
		err = lr.UnmarshalJSON(body.Bytes())
	} else {
		err = lr.UnmarshalProto(body.Bytes())
	}
	r.bodies.Put(body)
	ctx := req.Context()
	var st *status.Status
	if err != nil {
		st = status.New(codes.InvalidArgument, "malformed OTLP logs request: "+err.Error())
	} else {
		tenant.StampLogs(ctx, lr.Logs())
		st = logsStatus(r.nextLogs.ConsumeLogs(ctx, lr.Logs()))
	}
	r.record(ctx, signalLogs, transportHTTP, st, req)
	if st != nil {
		writeStatus(w, enc, httpStatusCode(st.Code()), st)
		return
	}
	writeSuccess(w, enc)
}

// checkRequest answers 405 and 415 as the Collector's otlp receiver does
// (plain text: there is no OTLP encoding to answer in) and 413 at once
// when Content-Length is over the limit, before anything is read.
func (r *otlpRaw) checkRequest(w http.ResponseWriter, req *http.Request, sig signal) (bodyEncoding, bool) {
	ctx := req.Context()
	if req.Method != http.MethodPost {
		msg := fmt.Sprintf("%d method not allowed, supported: [POST]", http.StatusMethodNotAllowed)
		r.reject(ctx, rejectUnsupported, sig, transportHTTP, msg, req)
		w.Header().Set("Allow", http.MethodPost)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		writeResponse(w, "text/plain; charset=utf-8", http.StatusMethodNotAllowed, []byte(msg))
		return 0, false
	}
	enc, ok := requestEncoding(req)
	if !ok {
		msg := fmt.Sprintf("%d unsupported media type %q, supported: [%s, %s]", http.StatusUnsupportedMediaType,
			req.Header.Get("Content-Type"), jsonContentType, pbContentType)
		r.reject(ctx, rejectUnsupported, sig, transportHTTP, msg, req)
		// msg quotes the client's Content-Type: never let a browser sniff it.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		writeResponse(w, "text/plain; charset=utf-8", http.StatusUnsupportedMediaType, []byte(msg))
		return 0, false
	}
	if req.ContentLength > r.maxBodySize {
		// Answering before the first Read spares the upload to a client
		// that sent "Expect: 100-continue".
		r.tooLarge(w, req, sig, enc, r.maxBodySize)
		return 0, false
	}
	return enc, true
}

// readBody reads the (decompressed) body into a pooled buffer; the caller
// returns it with putBody. confighttp's http.MaxBytesReader enforces
// max_request_body_size on the body as received and after decompression.
func (r *otlpRaw) readBody(w http.ResponseWriter, req *http.Request, sig signal, enc bodyEncoding) (*bytes.Buffer, bool) {
	buf, limit, err := r.bodies.Read(req)
	switch {
	case buf != nil:
		r.tel.TracesiftReceiverBytes.Add(req.Context(), int64(buf.Len()), r.tel.bytesAttrs[sig]...)
		return buf, true
	case limit > 0:
		r.tooLarge(w, req, sig, enc, limit)
		return nil, false
	case errors.Is(err, httpbody.ErrBusy):
		st := busy()
		r.record(req.Context(), sig, transportHTTP, st, req)
		r.explain(req.Context(), rejectBusy, sig, transportHTTP, st.Message(), req)
		writeStatus(w, enc, http.StatusTooManyRequests, st)
		return nil, false
	}
	// A truncated upload or a corrupt compressed body.
	st := status.New(codes.InvalidArgument, "reading the request body: "+err.Error())
	r.record(req.Context(), sig, transportHTTP, st, req)
	writeStatus(w, enc, http.StatusBadRequest, st)
	return nil, false
}

// tooLarge answers 413 with a message naming the limit and the key that
// sets it; a 400 would make the client think its payload is malformed.
func (r *otlpRaw) tooLarge(w http.ResponseWriter, req *http.Request, sig signal, enc bodyEncoding, limit int64) {
	who := fmt.Sprintf("`protocols::http::max_request_body_size` of receiver %s, counted on the body as "+
		"received and again after decompression", r.set.ID)
	if limit != r.maxBodySize {
		// A lower limit of an HTTP middleware (tracesift_limits) fired first.
		who = fmt.Sprintf("a middleware of receiver %s (`protocols::http::middlewares`)", r.set.ID)
	}
	msg := httpbody.TooLargeMessage("the body", limit, who)
	r.reject(req.Context(), rejectTooLarge, sig, transportHTTP, msg, req)
	if req.ProtoMajor == 1 {
		// The rest of the body may still be on the wire: closing is
		// cheaper than draining it. Not on HTTP/2, where it would send
		// GOAWAY to the client's other streams.
		w.Header().Set("Connection", "close")
	}
	writeStatus(w, enc, http.StatusRequestEntityTooLarge, status.New(codes.InvalidArgument, msg))
}

// withHTTPErrorHandler makes the errors confighttp answers itself
// (unsupported Content-Encoding, failed authentication) google.rpc.Status
// bodies in the request's encoding, as OTLP/HTTP requires, and counts them.
func withHTTPErrorHandler(r *otlpRaw) confighttp.ToServerOption {
	return confighttp.WithErrorHandler(func(w http.ResponseWriter, req *http.Request, msg string, httpCode int) {
		enc, ok := requestEncoding(req)
		if !ok {
			enc = encJSON
		}
		st := status.New(codeForHTTPStatus(httpCode), msg)
		if sig, ok := r.signalOf(req.URL.Path); ok {
			r.record(req.Context(), sig, transportHTTP, st, req)
		}
		writeStatus(w, enc, httpCode, st)
	})
}

func (r *otlpRaw) signalOf(path string) (signal, bool) {
	hc := r.cfg.Protocols.HTTP.Get()
	switch {
	case hc == nil:
		return 0, false
	case path == string(hc.TracesURLPath) && r.sampler != nil:
		return signalTraces, true
	case path == string(hc.LogsURLPath) && r.nextLogs != nil:
		return signalLogs, true
	}
	return 0, false
}

func writeSuccess(w http.ResponseWriter, enc bodyEncoding) {
	if enc == encJSON {
		writeResponse(w, jsonContentType, http.StatusOK, []byte(emptyJSONResponse))
		return
	}
	writeResponse(w, pbContentType, http.StatusOK, nil)
}

// writeStatus answers with st as a google.rpc.Status in the request's
// encoding, with Retry-After when st carries a RetryInfo and the code is
// one OTLP clients retry.
func writeStatus(w http.ResponseWriter, enc bodyEncoding, httpCode int, st *status.Status) {
	if httpCode == http.StatusTooManyRequests || httpCode == http.StatusServiceUnavailable {
		if ra, ok := retryAfter(st); ok {
			w.Header().Set("Retry-After", ra)
		}
	}
	var b []byte
	var err error
	if enc == encJSON {
		b, err = protojson.Marshal(st.Proto())
	} else {
		b, err = proto.Marshal(st.Proto())
	}
	if err != nil {
		writeResponse(w, jsonContentType, http.StatusInternalServerError,
			[]byte(`{"code": 13, "message": "failed to marshal error message"}`))
		return
	}
	writeResponse(w, enc.contentType(), httpCode, b)
}

// writeResponse writes a complete response; net/http adds Content-Length.
func writeResponse(w http.ResponseWriter, contentType string, httpCode int, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(httpCode)
	// The client may be gone; there is nobody left to tell.
	_, _ = w.Write(body) // #nosec G705 -- OTLP payload with an explicit non-HTML Content-Type
}
