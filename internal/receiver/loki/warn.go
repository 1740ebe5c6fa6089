package loki

import (
	"net/http"

	"go.uber.org/zap"
)

// warning is a kind of bad input (or refusal) explained once per receiver
// in the log; the metrics count every occurrence.
type warning int

const (
	warnMalformed   warning = iota // 400: unreadable body
	warnTooLarge                   // 413
	warnUnsupported                // 405, 415
	warnBadQuery                   // 400: service/host of the lines endpoint
	warnDropped                    // 400: permanent error of the pipeline
	warnLimited                    // 429: over max_lines_per_second
	warnBusy                       // 429: over max_bytes_in_flight
	warnTruncated                  // a value cut to max_line_bytes
	warnInvalid                    // warnInvalid + reason: an invalid record
	numWarnings     = warnInvalid + warning(numReasons)
)

var warningText = [numWarnings]string{
	warnMalformed: "Rejected an unreadable request with 400: the body is not what its Content-Type says (a Loki " +
		"push request is snappy-compressed protobuf or JSON; the lines endpoint takes text or NDJSON), or its " +
		"Content-Encoding is corrupt. Fix the client or its Content-Type.",
	warnTooLarge: "Rejected an oversized request with 413: lower the client's batch size (Promtail/Alloy " +
		"batch_size, Fluent Bit/Vector batch settings) or raise `max_request_body_size` (`max_records_per_request` for many short lines).",
	warnUnsupported: "Rejected a request with an unsupported method (405) or Content-Type (415): push with POST " +
		"and application/x-protobuf (snappy) or application/json; send lines with POST and text/plain, " +
		"application/x-ndjson or application/json.",
	warnBadQuery: "Rejected a lines request with 400: the `service` query parameter is required (at most 256 " +
		"bytes, UTF-8), as in /api/v1/logs/lines?service=checkout&host=node-1.",
	warnDropped: "The pipeline refused log records with a permanent error: answered 400 and the records are " +
		"dropped (counted in otelcol_tracesift_loki_records_dropped). See the error of the exporter or processor.",
	warnLimited: "Refused log records over `max_lines_per_second` with 429 and Retry-After; clients retry them " +
		"later. Raise `max_lines_per_second` (0: no bound) or spread the load over more collectors.",
	warnBusy: "Refused a request with 429 and Retry-After: the receiver holds `max_bytes_in_flight` of request " +
		"bodies (slow or large requests); clients retry. Raise it if memory allows, or spread the load over more " +
		"collectors.",
	warnTruncated: "Cut a log line or attribute value longer than `max_line_bytes` and appended " +
		"\"…[truncated N bytes]\"; raise `max_line_bytes` to keep such lines whole.",
	warnInvalid + warning(reasonInvalidUTF8): "Stored a log record with text that is not valid UTF-8: the bad " +
		"bytes were replaced with U+FFFD. Make the client send UTF-8 (check the file encoding it tails).",
	warnInvalid + warning(reasonBadTimestamp): "Stored a log record whose timestamp is missing or unreadable " +
		"with the receive time instead. Push entries want Unix nanoseconds as a decimal string; NDJSON lines " +
		"RFC 3339 or a Unix time number.",
	warnInvalid + warning(reasonNotJSON): "Stored an NDJSON line that is not a JSON object as raw text. Send " +
		"one JSON object a line, or use Content-Type text/plain for plain lines.",
	warnInvalid + warning(reasonBadEntry): "Stored a Loki push entry of the wrong shape as well as possible " +
		"(an entry is [\"<unix ns>\", \"<line>\", {structured metadata}]).",
	warnInvalid + warning(reasonBadLabels): "Could not parse the label set of a pushed stream; its records " +
		"were stored with the label text in the resource attribute loki.labels and service.name " +
		"unknown_service. A label set reads {name=\"value\", …}.",
}

// counterOf names the metric that counts further occurrences.
func counterOf(why warning) string {
	switch {
	case why == warnDropped:
		return "otelcol_tracesift_loki_records_dropped"
	case why == warnLimited || why == warnBusy:
		return "otelcol_tracesift_loki_requests{outcome=\"limited\"}"
	case why == warnTruncated:
		return "otelcol_tracesift_loki_records_truncated"
	case why >= warnInvalid:
		return "otelcol_tracesift_loki_records_invalid{reason=\"" + reasonNames[why-warnInvalid] + "\"}"
	}
	return "otelcol_tracesift_loki_requests{outcome=\"malformed\"}"
}

// warn logs the first occurrence of a kind of bad input, so that a broken
// client cannot flood the log.
func (r *lokiReceiver) warn(why warning, req *http.Request, ep endpoint, fields ...zap.Field) {
	if !r.warned[why].CompareAndSwap(false, true) {
		return
	}
	fields = append(fields, zap.String("endpoint", endpointNames[ep]),
		zap.String("remote_addr", req.RemoteAddr), zap.String("method", req.Method),
		zap.String("path", req.URL.Path), zap.String("content_type", req.Header.Get("Content-Type")),
		zap.String("user_agent", req.UserAgent()))
	r.logger.Warn(warningText[why]+" Further ones are only counted in "+counterOf(why)+
		" (this message is logged once).", fields...)
}
