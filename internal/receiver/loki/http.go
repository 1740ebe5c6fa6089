package loki

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang/snappy"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/httpbody"
	"github.com/tracesift/tracesift/internal/tenant"
)

const (
	pbContentType    = "application/x-protobuf"
	jsonContentType  = "application/json"
	ndjsonType       = "application/x-ndjson"
	plainContentType = "text/plain"

	// maxPooledBody bounds the buffers kept for reuse: a rare huge request
	// should not pin its buffer for the life of the process.
	maxPooledBody = 4 << 20

	// maxQueryValue bounds the service and host query parameters.
	maxQueryValue = 256
)

// bodyFormat is how a request body is to be read.
type bodyFormat int

const (
	formatProto bodyFormat = iota
	formatJSON
	formatPlain
	formatNDJSON
)

// mediaType returns the media type of a Content-Type, lower-cased; ok is
// false when it cannot be parsed. The exact values clients send skip the
// parser.
func mediaType(ct string) (string, bool) {
	switch ct {
	case "", pbContentType, jsonContentType, plainContentType, ndjsonType:
		return ct, true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return mt, err == nil
}

// pushFormat: JSON, or protobuf (also when Content-Type is missing, as in
// Loki).
func pushFormat(ct string) (bodyFormat, bool) {
	switch mt, ok := mediaType(ct); {
	case !ok:
		return 0, false
	case mt == jsonContentType:
		return formatJSON, true
	case mt == pbContentType || mt == "":
		return formatProto, true
	}
	return 0, false
}

// linesFormat: NDJSON for the JSON types, plain text for text/plain, none,
// or application/x-www-form-urlencoded (what curl -d sends by default).
func linesFormat(ct string) (bodyFormat, bool) {
	switch mt, ok := mediaType(ct); {
	case !ok:
		return 0, false
	case mt == ndjsonType || mt == jsonContentType || mt == "application/jsonl" || mt == "application/x-jsonlines":
		return formatNDJSON, true
	case mt == plainContentType || mt == "" || mt == "application/x-www-form-urlencoded":
		return formatPlain, true
	}
	return 0, false
}

var supportedTypes = [numEndpoints]string{
	endpointPush:  pbContentType + " (snappy-compressed logproto.PushRequest), " + jsonContentType,
	endpointLines: plainContentType + " (or none), " + ndjsonType + ", " + jsonContentType,
}

// handlePush serves POST /loki/api/v1/push: Loki's push API.
func (r *lokiReceiver) handlePush(w http.ResponseWriter, req *http.Request) {
	now := pcommon.NewTimestampFromTime(r.clock())
	format, ok := r.begin(w, req, endpointPush, pushFormat)
	if !ok || !r.allow(w, req, endpointPush, 0) {
		return
	}
	body, ok := r.readBody(w, req, endpointPush)
	if !ok {
		return
	}
	defer r.bodies.Put(body)

	d := r.getDecoder(now)
	defer r.putDecoder(d)
	ld := plog.NewLogs()
	raw := body.Bytes()
	var err error
	switch {
	case format == formatJSON:
		if err = d.decodePushJSON(raw, ld); err != nil {
			err = fmt.Errorf("malformed JSON push request: %w", err)
		}
	case len(raw) == 0: // no streams
	default:
		if !snappyRemoved(req) {
			var buf *[]byte
			var tooLarge bool
			buf, raw, tooLarge, err = r.unsnappy(raw)
			if tooLarge {
				r.tooLarge(w, req, endpointPush, r.maxBodySize, "the snappy-decoded size of the body")
				return
			}
			if buf != nil {
				defer r.putSnappy(buf)
			}
		}
		if err == nil {
			err = d.decodePushProto(raw, ld)
		}
	}
	if d.over {
		r.tooManyRecords(w, req, endpointPush)
		return
	}
	if err != nil {
		r.reject(w, req, endpointPush, warnMalformed, http.StatusBadRequest, err.Error())
		return
	}
	dropEmptyStreams(ld)
	r.deliver(w, req, endpointPush, ld, &d.stats)
}

// dropEmptyStreams removes the resources of streams without entries.
func dropEmptyStreams(ld plog.Logs) {
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		if rls.At(i).ScopeLogs().At(0).LogRecords().Len() == 0 {
			rls.RemoveIf(func(rl plog.ResourceLogs) bool { return rl.ScopeLogs().At(0).LogRecords().Len() == 0 })
			return
		}
	}
}

// unsnappy decodes a snappy block into a pooled buffer, which the caller
// returns with putSnappy. tooLarge: the decoded size is over the limit.
func (r *lokiReceiver) unsnappy(src []byte) (buf *[]byte, out []byte, tooLarge bool, err error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, nil, false, fmt.Errorf("protobuf push body is not snappy-compressed (block format): %w", err)
	}
	if int64(n) > r.maxBodySize {
		return nil, nil, true, nil
	}
	buf, _ = r.snappyBufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	out, err = snappy.Decode((*buf)[:cap(*buf)], src)
	if err != nil {
		r.putSnappy(buf)
		return nil, nil, false, fmt.Errorf("protobuf push body is not snappy-compressed (block format): %w", err)
	}
	return buf, out, false, nil
}

func (r *lokiReceiver) putSnappy(buf *[]byte) {
	if cap(*buf) <= maxPooledBody {
		r.snappyBufs.Put(buf)
	}
}

// linesAnswer is the body of a successful lines request.
type linesAnswer struct {
	// Accepted is the number of records handed to the pipeline.
	Accepted int `json:"accepted"`
	// Truncated and Invalid count those of them that were cut to
	// max_line_bytes, or stored otherwise than sent (see
	// otelcol_tracesift_loki_records_invalid).
	Truncated int64 `json:"truncated"`
	Invalid   int64 `json:"invalid"`
}

// handleLines serves POST /api/v1/logs/lines?service=NAME[&host=HOST]: a
// plain-text or NDJSON body, one record a line.
func (r *lokiReceiver) handleLines(w http.ResponseWriter, req *http.Request) {
	now := pcommon.NewTimestampFromTime(r.clock())
	format, ok := r.begin(w, req, endpointLines, linesFormat)
	if !ok || !r.allow(w, req, endpointLines, 0) {
		return
	}
	service, host, err := linesQuery(req.URL.RawQuery)
	if err != nil {
		r.reject(w, req, endpointLines, warnBadQuery, http.StatusBadRequest, err.Error())
		return
	}
	body, ok := r.readBody(w, req, endpointLines)
	if !ok {
		return
	}
	defer r.bodies.Put(body)

	d := r.getDecoder(now)
	defer r.putDecoder(d)
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	attrs := rl.Resource().Attributes()
	attrs.PutStr(attrServiceName, service)
	if host != "" {
		attrs.PutStr(attrHostName, host)
	}
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	if format == formatNDJSON {
		d.decodeNDJSON(body.Bytes(), lrs)
	} else {
		d.decodePlain(body.Bytes(), lrs)
	}
	if d.over {
		r.tooManyRecords(w, req, endpointLines)
		return
	}
	r.deliver(w, req, endpointLines, ld, &d.stats)
}

// linesQuery reads the query parameters of the lines endpoint.
func linesQuery(rawQuery string) (service, host string, err error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", "", fmt.Errorf("malformed query string: %w", err)
	}
	service = strings.TrimSpace(q.Get("service"))
	host = strings.TrimSpace(q.Get("host"))
	switch {
	case service == "":
		return "", "", errors.New("the `service` query parameter is required: the service the lines come from, " +
			"as in /api/v1/logs/lines?service=checkout")
	case len(service) > maxQueryValue:
		return "", "", fmt.Errorf("the `service` query parameter is %d bytes long, the limit is %d", len(service), maxQueryValue)
	case !utf8.ValidString(service):
		return "", "", errors.New("the `service` query parameter is not valid UTF-8")
	case len(host) > maxQueryValue:
		return "", "", fmt.Errorf("the `host` query parameter is %d bytes long, the limit is %d", len(host), maxQueryValue)
	case !utf8.ValidString(host):
		return "", "", errors.New("the `host` query parameter is not valid UTF-8")
	}
	return service, host, nil
}

// unavailableRetryAfter is the Retry-After of a 503: seconds.
const unavailableRetryAfter = "5"

// deliver counts what the decoding found and hands the records to the
// pipeline. Its error is answered 503 (retry), or 400 when permanent (the
// records are dropped: retrying cannot help).
func (r *lokiReceiver) deliver(w http.ResponseWriter, req *http.Request, ep endpoint, ld plog.Logs, st *batchStats) {
	ctx := req.Context()
	r.countBadInput(ctx, req, ep, st)
	n := ld.LogRecordCount()
	if n > 0 && !r.allow(w, req, ep, n) {
		return
	}
	if n > 0 {
		tenant.StampLogs(ctx, ld)
		if err := r.next.ConsumeLogs(ctx, ld); err != nil {
			if consumererror.IsPermanent(err) {
				r.tel.TracesiftLokiRequests.Add(ctx, 1, r.tel.requestAttrs[ep][outcomeDropped]...)
				r.tel.TracesiftLokiRecordsDropped.Add(ctx, int64(n), r.tel.endpointAttrs[ep]...)
				r.warn(warnDropped, req, ep, zap.Int("records", n), zap.Error(err))
				r.writeError(w, ep, http.StatusBadRequest, "the pipeline refused the records with a permanent "+
					"error; they were dropped, do not send them again: "+err.Error())
				return
			}
			r.tel.TracesiftLokiRequests.Add(ctx, 1, r.tel.requestAttrs[ep][outcomeUnavailable]...)
			// The exporter's queue is full (the store down or slow): tell
			// clients when to come back rather than have them hammer it.
			w.Header().Set("Retry-After", unavailableRetryAfter)
			r.writeError(w, ep, http.StatusServiceUnavailable, "the pipeline cannot take the records now, "+
				"retry later: "+err.Error())
			return
		}
		r.tel.TracesiftLokiRecords.Add(ctx, int64(n), r.tel.endpointAttrs[ep]...)
	}
	r.tel.TracesiftLokiRequests.Add(ctx, 1, r.tel.requestAttrs[ep][outcomeOK]...)
	if ep == endpointPush {
		// As Loki answers.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b, _ := json.Marshal(linesAnswer{Accepted: n, Truncated: st.truncated, Invalid: st.invalidRecords})
	writeResponse(w, jsonContentType, http.StatusOK, b)
}

// countBadInput records the truncated and invalid records of a request
// and explains the first of each kind.
func (r *lokiReceiver) countBadInput(ctx context.Context, req *http.Request, ep endpoint, st *batchStats) {
	if st.truncated > 0 {
		r.tel.TracesiftLokiRecordsTruncated.Add(ctx, st.truncated)
		r.warn(warnTruncated, req, ep, zap.Int("max_line_bytes", r.cfg.MaxLineBytes),
			zap.String("example", st.examples[numReasons]))
	}
	for rs := range numReasons {
		if n := st.invalid[rs]; n > 0 {
			r.tel.TracesiftLokiRecordsInvalid.Add(ctx, n, r.tel.reasonAttrs[rs]...)
			r.warn(warnInvalid+warning(rs), req, ep, zap.String("example", st.examples[rs]))
		}
	}
}

// checkMethod answers 405 to anything but POST.
func (r *lokiReceiver) checkMethod(w http.ResponseWriter, req *http.Request, ep endpoint) bool {
	if req.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", http.MethodPost)
	r.reject(w, req, ep, warnUnsupported, http.StatusMethodNotAllowed,
		fmt.Sprintf("method %s not allowed, use POST", req.Method))
	return false
}

// begin checks a request's method and its Content-Type, which formatOf
// reads into the body's format; on failure it has answered.
func (r *lokiReceiver) begin(w http.ResponseWriter, req *http.Request, ep endpoint,
	formatOf func(contentType string) (bodyFormat, bool)) (bodyFormat, bool) {
	if !r.checkMethod(w, req, ep) {
		return 0, false
	}
	format, ok := formatOf(req.Header.Get("Content-Type"))
	if !ok {
		r.reject(w, req, ep, warnUnsupported, http.StatusUnsupportedMediaType,
			fmt.Sprintf("unsupported Content-Type %q, supported: %s", req.Header.Get("Content-Type"), supportedTypes[ep]))
		return 0, false
	}
	return format, true
}

// readBody reads the (decompressed) body into a pooled buffer, which the
// caller returns with putBody; on failure it has answered. confighttp's
// http.MaxBytesReader enforces max_request_body_size on the body as
// received and after decompression.
func (r *lokiReceiver) readBody(w http.ResponseWriter, req *http.Request, ep endpoint) (*bytes.Buffer, bool) {
	if req.ContentLength > r.maxBodySize {
		// Answering before the first Read spares the upload to a client
		// that sent "Expect: 100-continue".
		r.tooLarge(w, req, ep, r.maxBodySize, "the body")
		return nil, false
	}
	buf, limit, err := r.bodies.Read(req)
	switch {
	case buf != nil:
		r.tel.TracesiftLokiBytes.Add(req.Context(), int64(buf.Len()), r.tel.endpointAttrs[ep]...)
		return buf, true
	case limit > 0:
		r.tooLarge(w, req, ep, limit, "the body")
		return nil, false
	case errors.Is(err, httpbody.ErrBusy):
		r.tel.TracesiftLokiRequests.Add(req.Context(), 1, r.tel.requestAttrs[ep][outcomeLimited]...)
		r.warn(warnBusy, req, ep, zap.Int64("max_bytes_in_flight", r.cfg.MaxBytesInFlight))
		w.Header().Set("Retry-After", "1")
		r.writeError(w, ep, http.StatusTooManyRequests, err.Error()+"; retry shortly")
		return nil, false
	}
	// A truncated upload or a corrupt compressed body.
	r.reject(w, req, ep, warnMalformed, http.StatusBadRequest, "reading the request body: "+err.Error())
	return nil, false
}

// tooLarge answers 413 with a message naming the limit and the key that
// sets it.
func (r *lokiReceiver) tooLarge(w http.ResponseWriter, req *http.Request, ep endpoint, limit int64, what string) {
	who := fmt.Sprintf("`max_request_body_size` of receiver %s, counted on the body as received, again after "+
		"decompression and on the snappy-decoded size of a protobuf push", r.set.ID)
	if limit != r.maxBodySize {
		who = fmt.Sprintf("a middleware of receiver %s (`middlewares`)", r.set.ID)
	}
	msg := httpbody.TooLargeMessage(what, limit, who)
	if req.ProtoMajor == 1 {
		// The rest of the body may still be on the wire: closing is
		// cheaper than draining it.
		w.Header().Set("Connection", "close")
	}
	r.reject(w, req, ep, warnTooLarge, http.StatusRequestEntityTooLarge, msg)
}

// reject answers a request refused as the client's fault, counts it and
// explains the first of its kind.
func (r *lokiReceiver) reject(w http.ResponseWriter, req *http.Request, ep endpoint, why warning, code int, msg string) {
	r.tel.TracesiftLokiRequests.Add(req.Context(), 1, r.tel.requestAttrs[ep][outcomeMalformed]...)
	r.warn(why, req, ep, zap.String("error", msg), zap.Int("status", code))
	r.writeError(w, ep, code, msg)
}

// transportError answers the errors confighttp reports itself (a corrupt
// or unsupported Content-Encoding, a failed authentication) in the
// endpoint's error format, and counts them.
func (r *lokiReceiver) transportError(w http.ResponseWriter, req *http.Request, msg string, code int) {
	ep := endpointPush
	if req.URL.Path == linesPath {
		ep = endpointLines
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		r.tel.TracesiftLokiRequests.Add(req.Context(), 1, r.tel.requestAttrs[ep][outcomeUnauthorized]...)
		r.writeError(w, ep, code, msg)
		return
	}
	if code == http.StatusBadRequest {
		msg = "decoding the body (Content-Encoding " + strconv.Quote(req.Header.Get("Content-Encoding")) + "): " + msg
	}
	r.reject(w, req, ep, warnMalformed, code, msg)
}

// writeError answers an error: plain text on the push endpoint (as Loki,
// whose clients log the body), {"error": "…"} on the lines endpoint.
func (r *lokiReceiver) writeError(w http.ResponseWriter, ep endpoint, code int, msg string) {
	// msg may quote what the client sent: never let a browser sniff it.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if ep == endpointLines {
		b, _ := json.Marshal(struct {
			Error string `json:"error"`
		}{msg})
		writeResponse(w, jsonContentType, code, b)
		return
	}
	writeResponse(w, "text/plain; charset=utf-8", code, []byte(msg+"\n"))
}

// writeResponse writes a complete response; net/http adds Content-Length.
func writeResponse(w http.ResponseWriter, contentType string, code int, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	// The client may be gone; there is nobody left to tell.
	_, _ = w.Write(body) // #nosec G705 -- explicit non-HTML Content-Type and nosniff
}

// tooManyRecords answers a request over max_records_per_request.
func (r *lokiReceiver) tooManyRecords(w http.ResponseWriter, req *http.Request, ep endpoint) {
	r.reject(w, req, ep, warnTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request holds more than "+
		"`max_records_per_request` (%d) records: send smaller batches", r.cfg.MaxRecordsPerRequest))
}

// allow takes n records from the rate bound (max_lines_per_second), or
// answers the request 429 with the seconds to wait (413 when n is more than
// the bound allows at all) and reports false. n = 0 takes nothing and asks
// whether a record would pass now: checked before a body is read, so that
// a client over the bound costs no decoding.
func (r *lokiReceiver) allow(w http.ResponseWriter, req *http.Request, ep endpoint, n int) bool {
	if r.limiter == nil {
		return true
	}
	now := r.clock()
	if n == 0 {
		if r.limiter.TokensAt(now) >= 1 {
			return true
		}
		n = 1
	}
	if n > r.limiter.Burst() {
		r.reject(w, req, ep, warnTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request holds %d "+
			"records, more than `max_lines_per_second` (%d) lets through at once: send smaller batches", n, r.limiter.Burst()))
		return false
	}
	res := r.limiter.ReserveN(now, n)
	wait := res.DelayFrom(now)
	if wait == 0 {
		return true
	}
	res.CancelAt(now)
	r.tel.TracesiftLokiRequests.Add(req.Context(), 1, r.tel.requestAttrs[ep][outcomeLimited]...)
	r.warn(warnLimited, req, ep, zap.Int("records", n), zap.Int("max_lines_per_second", r.cfg.MaxLinesPerSecond))
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	r.writeError(w, ep, http.StatusTooManyRequests, fmt.Sprintf("over `max_lines_per_second` (%d): retry in %s",
		r.cfg.MaxLinesPerSecond, wait.Round(time.Millisecond)))
	return false
}
