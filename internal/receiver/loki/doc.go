// Package loki is the tracesift_loki receiver: logs over Loki's push API,
// so that Promtail, Grafana Alloy, Fluent Bit and Vector ship to tracesift
// unchanged, and a plain lines endpoint for curl and scripts. One HTTP
// server (confighttp, default localhost:3100) serves:
//
// # POST /loki/api/v1/push (also /api/prom/push)
//
// Content-Type application/x-protobuf, or none (as in Loki): a
// snappy-compressed (block format) logproto.PushRequest, decoded by hand
// with protowire. "Content-Encoding: snappy" is understood too (confighttp
// then removes the snappy layer). Content-Type application/json:
// {"streams":[{"stream":{…},"values":[["<unix ns>","<line>",{metadata}]]}]}
// (Loki's legacy {"labels":"{…}","entries":[{"ts":"<RFC 3339>","line":…}]}
// is read as well), with any Content-Encoding confighttp decodes (gzip, …).
// Success is 204 No Content, as in Loki; errors are plain text.
//
// Mapping: one ResourceLogs per stream (streams without entries are left
// out), one ScopeLogs (empty scope). Stream labels become resource
// attributes; service.name is the first set of the labels service_name,
// service, job (else "unknown_service"); host.name the first of host,
// hostname, instance (the port of "instance" dropped). A label set that
// cannot be parsed keeps its text in loki.labels. Each entry is a record:
// Timestamp from the entry, ObservedTimestamp the receive time, the line
// the body (a string), structured metadata the record attributes. The
// severity comes from the entry's metadata level, severity or
// detected_level (in that order), else from the stream's label of that
// name: SeverityText as written, SeverityNumber for the known names (trace
// 1, debug 5, info/notice 9, warn/warning 13, error/err 17,
// fatal/critical/panic 21; case ignored), left unset otherwise.
//
// # POST /api/v1/logs/lines?service=NAME[&host=HOST]
//
// A body of plain text (Content-Type text/plain, none, or
// application/x-www-form-urlencoded, which curl -d sends): one record a
// line, blank lines skipped, Java/Node.js stack-trace lines (a leading tab;
// blanks then "at " or "..."; "Caused by:"; and the exception line that
// starts a trace, when a frame follows it) joined to the record before
// them with "\n", at most 1000 lines and max_line_bytes per record. Or
// NDJSON (application/x-ndjson or application/json): one JSON object a
// line. Keys, case ignored, the first of each kind used: time, timestamp,
// ts, @timestamp (RFC 3339, or a Unix time number in s, ms, µs or ns told
// by its magnitude); level, severity, lvl, loglevel, log.level (or a pino
// number 10…60); message, msg, log, body (a string; a line without one
// keeps its whole text as the body); traceId/trace_id/traceID/trace.id and
// spanId/span_id/spanID/span.id (the record's ids when valid hex of the
// right length). Every other member is a string attribute: nested objects
// flattened with dots, numbers as written, true/false, arrays as their
// JSON text, nulls left out; so is a time member that cannot be read, or
// an invalid id. A line that is not a JSON object is stored raw. A JSON
// body that is one array of objects, or one object over several lines, is
// read whole. The resource has service.name = service (required,
// at most 256 bytes) and host.name = host when given. Success is 200 with
// {"accepted": N, "truncated": T, "invalid": I} (records handed on, and how
// many of them were cut or stored otherwise than sent); errors are
// {"error": "…"}.
//
// # Bad input
//
// Only a request that cannot be read at all is refused: 400 for a body that
// is not JSON, not snappy or not a PushRequest (or a missing service), 405
// for a method other than POST, 413 over max_request_body_size (also for
// the decompressed body and the snappy-decoded size), 415 for another
// Content-Type. Within a readable request nothing is dropped: a text value
// (line or attribute) over max_line_bytes is cut with "…[truncated N
// bytes]" appended; invalid UTF-8 is replaced with U+FFFD; a missing or
// unreadable timestamp becomes the receive time; an entry of the wrong
// shape is stored as its JSON text. Every record without a timestamp of
// its own (plain lines, NDJSON lines without a time member) gets the
// receive time as Timestamp, too.
//
// When the next consumer fails, the answer is 503 (the client retries),
// or 400 when the error is permanent (retrying cannot help: the records
// are dropped and counted).
//
// Trace links: the tracesift_logs processor links every record through its
// attributes and body, so the receiver only sets TraceID and SpanID itself
// for NDJSON members that hold valid ids (traceId, trace_id, traceID,
// trace.id; spanId, …).
//
// # Self-metrics
//
// Declared in metadata.yaml (see documentation.md):
// otelcol_tracesift_loki_requests{endpoint,outcome},
// otelcol_tracesift_loki_records{endpoint} (accepted),
// otelcol_tracesift_loki_records_dropped{endpoint},
// otelcol_tracesift_loki_records_truncated,
// otelcol_tracesift_loki_records_invalid{reason} (invalid_utf8,
// bad_timestamp, not_json, bad_entry, bad_labels; a record counts once per
// reason) and otelcol_tracesift_loki_bytes{endpoint}. The first occurrence
// of each kind of bad input is explained in one Warn log line, with an
// excerpt; later ones are only counted.
package loki

//go:generate mdatagen metadata.yaml
