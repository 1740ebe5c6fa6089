package store

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// rowEncoder builds a Native block (native.go) of spans or log records
// straight from pdata, without reflection or intermediate maps.
//
// A row holds what the reader decodes into a spanRow or logRow: times in
// Unix nanoseconds, ids in lowercase hex (empty for the empty id), attribute
// values as Value.AsString renders them, each map key once with its last
// value, events and links as the API's JSON.
//
// An encoder serves one goroutine at a time. WriteTraces and WriteLogs take
// one from a pool, so its buffers serve batch after batch.
type rowEncoder struct {
	block nativeBlock
	out   []byte // the encoded block

	// The columns that every row of the current resource repeats, encoded
	// once as Native strings: service, host, tenant, and the resource map's
	// keys and values (without tenant.Attribute: the tenant is a column).
	service, host, tenant []byte
	resKeys, resValues    []byte
	resEntries            uint64
	serviceName           string

	// Spans only: the trace summaries and resources of the batch, and
	// where the current resource is in res.
	sums     traceSums
	res      []batchResource
	resIndex map[uint64]int
	resArena []byte
	curRes   int
	aux      nativeBlock    // the other tables' rows, one table at a time
	marks    []resourceMark // the resources being written

	days daySpan // of the rows in block

	tmp    []byte   // events or links JSON
	val    []byte   // a value's text, before its length is written
	keys   []string // a map's keys, to find duplicates
	sorted []string // the same, sorted, for large maps
}

// Columns of the spans table (spanRow), in the order of its schema.
const (
	spanTimestamp = iota
	spanTraceID
	spanIDs
	spanTraceState
	spanName
	spanKind
	spanService
	spanHost
	spanDuration
	spanStatusCode
	spanStatusMessage
	spanAttributes
	spanResourceID
	spanScopeName
	spanScopeVersion
	spanEvents
	spanLinks
	spanTenant
)

var spanColumns = []nativeColumnDef{
	spanTimestamp:     {"timestamp", nativeDateTime64},
	spanTraceID:       {"trace_id", nativeString},
	spanIDs:           {"ids", nativeFixedString16},
	spanTraceState:    {"trace_state", nativeString},
	spanName:          {"name", nativeString},
	spanKind:          {"kind", nativeString},
	spanService:       {"service", nativeString},
	spanHost:          {"host", nativeString},
	spanDuration:      {"duration_ns", nativeUInt64},
	spanStatusCode:    {"status_code", nativeString},
	spanStatusMessage: {"status_message", nativeString},
	spanAttributes:    {"attributes", nativeStringMap},
	spanResourceID:    {"resource_id", nativeUInt64},
	spanScopeName:     {"scope_name", nativeString},
	spanScopeVersion:  {"scope_version", nativeString},
	spanEvents:        {"events", nativeString},
	spanLinks:         {"links", nativeString},
	spanTenant:        {"tenant", nativeString},
}

// Columns of the logs table (logRow), in the order of its schema.
const (
	logTimestamp = iota
	logObservedTimestamp
	logTraceID
	logSpanID
	logSeverityText
	logSeverityNumber
	logService
	logHost
	logBody
	logAttributes
	logResourceID
	logScopeName
	logTenant
)

var logColumns = []nativeColumnDef{
	logTimestamp:         {"timestamp", nativeDateTime64},
	logObservedTimestamp: {"observed_timestamp", nativeDateTime64},
	logTraceID:           {"trace_id", nativeString},
	logSpanID:            {"span_id", nativeString},
	logSeverityText:      {"severity_text", nativeString},
	logSeverityNumber:    {"severity_number", nativeUInt8},
	logService:           {"service", nativeString},
	logHost:              {"host", nativeString},
	logBody:              {"body", nativeString},
	logAttributes:        {"attributes", nativeStringMap},
	logResourceID:        {"resource_id", nativeUInt64},
	logScopeName:         {"scope_name", nativeString},
	logTenant:            {"tenant", nativeString},
}

var rowEncoders = sync.Pool{New: func() any { return new(rowEncoder) }}

// maxPooledBuffer bounds the buffers an encoder keeps for reuse, so that one
// huge batch does not pin its memory. The exporters' batches (20 000 spans,
// 100 000 log lines) make blocks of about 15 and 30 MiB.
const maxPooledBuffer = 64 << 20

// getRowEncoder returns an encoder with an empty block of the given
// columns. The encoded block is only valid until putRowEncoder: Conn.Insert
// does not keep it.
func getRowEncoder(cols []nativeColumnDef) *rowEncoder {
	e := rowEncoders.Get().(*rowEncoder)
	e.reset(cols)
	return e
}

// reset empties the encoder for a new block of the given columns.
func (e *rowEncoder) reset(cols []nativeColumnDef) {
	e.block.reset(cols)
	e.days.reset()
	e.sums.reset()
	e.res, e.resArena, e.marks = e.res[:0], e.resArena[:0], e.marks[:0]
	clear(e.resIndex)
}

func putRowEncoder(e *rowEncoder) {
	if e.block.size() > maxPooledBuffer {
		e.block.cols = nil
	}
	if e.aux.size() > maxPooledBuffer {
		e.aux.cols = nil
	}
	if cap(e.out) > maxPooledBuffer {
		e.out = nil
	}
	if cap(e.tmp) > maxPooledBuffer {
		e.tmp = nil
	}
	if cap(e.resArena) > maxPooledBuffer {
		e.resArena = nil
	}
	if cap(e.days.times) > maxPooledBuffer/8 {
		e.days.times = nil
	}
	e.out = e.out[:0]
	// Do not keep the pdata's strings alive while pooled.
	clear(e.keys[:cap(e.keys)])
	clear(e.sorted[:cap(e.sorted)])
	e.serviceName = ""
	e.sums.reset()
	rowEncoders.Put(e)
}

// encode returns the block built so far, encoded.
func (e *rowEncoder) encode() []byte {
	e.out = e.block.appendTo(e.out[:0])
	return e.out
}

// encodeAux returns the aux block, encoded in place of what encode returned.
func (e *rowEncoder) encodeAux() []byte {
	e.out = e.aux.appendTo(e.out[:0])
	return e.out
}

// setResource encodes the columns that every row of a resource repeats,
// and returns the resource's tenant.
func (e *rowEncoder) setResource(attrs pcommon.Map) string {
	service, host := serviceAndHost(attrs)
	t := tenant.Of(attrs)
	e.serviceName = validUTF8(service) // as stored, for the trace summaries
	e.service = appendNativeString(e.service[:0], service)
	e.host = appendNativeString(e.host[:0], host)
	e.tenant = appendNativeString(e.tenant[:0], t)
	e.resKeys, e.resValues, e.resEntries = e.appendAttrEntries(e.resKeys[:0], e.resValues[:0], attrs, tenant.Attribute)
	return t
}

// setSpanResource is setResource for spans: the trace summaries take the
// tenant too.
func (e *rowEncoder) setSpanResource(attrs pcommon.Map) {
	e.sums.setTenant(e.setRowResource(attrs))
}

// setRowResource is setResource for rows that name their resource by id: it
// also adds the resource to the batch's, once, and returns the tenant.
func (e *rowEncoder) setRowResource(attrs pcommon.Map) string {
	t := e.setResource(attrs)
	id := resourceID(e.resKeys, e.resValues, e.resEntries, e.tenant)
	if i, ok := e.resIndex[id]; ok {
		e.curRes = i
		return t
	}
	if e.resIndex == nil {
		e.resIndex = map[uint64]int{}
	}
	r := batchResource{id: id, keysFrom: len(e.resArena), entries: e.resEntries}
	e.resArena = append(e.resArena, e.resKeys...)
	r.keysTo = len(e.resArena)
	e.resArena = append(e.resArena, e.resValues...)
	r.vals = len(e.resArena)
	e.resArena = append(e.resArena, e.tenant...)
	r.tenantTo = len(e.resArena)
	e.curRes = len(e.res)
	e.resIndex[id] = e.curRes
	e.res = append(e.res, r)
	return t
}

// appendSpanRow appends s, of the current resource (setSpanResource), as a
// row of the spans table (see spanRow), and counts it in its trace's summary.
func (e *rowEncoder) appendSpanRow(scope pcommon.InstrumentationScope, s ptrace.Span) {
	c := e.block.cols
	start, dur := uint64(s.StartTimestamp()), durationNanos(s.StartTimestamp(), s.EndTimestamp())
	r := &e.res[e.curRes]
	r.lastSeen = max(r.lastSeen, start)
	e.sums.add(s, e.serviceName, dur)
	c[spanTimestamp].appendUInt64(start)
	c[spanTraceID].data = appendNativeTraceID(c[spanTraceID].data, s.TraceID())
	id, parent := s.SpanID(), s.ParentSpanID() // all zeros for none
	c[spanIDs].data = append(append(c[spanIDs].data, id[:]...), parent[:]...)
	c[spanTraceState].appendString(s.TraceState().AsRaw())
	c[spanName].appendString(s.Name())
	c[spanKind].appendString(model.Kind(s.Kind()).String())
	c[spanService].data = append(c[spanService].data, e.service...)
	c[spanHost].data = append(c[spanHost].data, e.host...)
	c[spanDuration].appendUInt64(dur)
	c[spanStatusCode].appendString(model.StatusCode(s.Status().Code()).String())
	c[spanStatusMessage].appendString(s.Status().Message())
	e.appendAttrMap(&c[spanAttributes], s.Attributes())
	c[spanResourceID].appendUInt64(r.id)
	c[spanScopeName].appendString(scope.Name())
	c[spanScopeVersion].appendString(scope.Version())
	// No events or links is the empty string, which the engine stores in
	// no room at all (a column of default values is sparse); "[]" took 0.26
	// bytes a span each.
	e.tmp = e.tmp[:0]
	if evs := s.Events(); evs.Len() > 0 {
		e.tmp = e.appendEvents(e.tmp, evs)
	}
	c[spanEvents].appendBytes(e.tmp)
	e.tmp = e.tmp[:0]
	if links := s.Links(); links.Len() > 0 {
		e.tmp = e.appendLinks(e.tmp, links)
	}
	c[spanLinks].appendBytes(e.tmp)
	c[spanTenant].data = append(c[spanTenant].data, e.tenant...)
	e.block.rows++
}

// appendLogRow appends lr, of the current resource (setRowResource), as a row of the logs
// table (see logRow); ts and observed are its times as logTimes gives them.
func (e *rowEncoder) appendLogRow(scope pcommon.InstrumentationScope, lr plog.LogRecord, ts, observed uint64) {
	traceID, spanID := lr.TraceID(), lr.SpanID()
	if traceID.IsEmpty() {
		spanID = pcommon.NewSpanIDEmpty() // a span id means nothing without its trace
	}
	c := e.block.cols
	r := &e.res[e.curRes]
	r.lastSeen = max(r.lastSeen, ts)
	c[logTimestamp].appendUInt64(ts)
	c[logObservedTimestamp].appendUInt64(observed)
	c[logTraceID].data = appendNativeTraceID(c[logTraceID].data, traceID)
	c[logSpanID].data = appendNativeSpanID(c[logSpanID].data, spanID)
	c[logSeverityText].appendString(lr.SeverityText())
	c[logSeverityNumber].appendUInt8(severityNumber(lr.SeverityNumber()))
	c[logService].data = append(c[logService].data, e.service...)
	c[logHost].data = append(c[logHost].data, e.host...)
	c[logBody].data = e.appendNativeValue(c[logBody].data, lr.Body())
	e.appendAttrMap(&c[logAttributes], lr.Attributes())
	c[logResourceID].appendUInt64(r.id)
	c[logScopeName].appendString(scope.Name())
	c[logTenant].data = append(c[logTenant].data, e.tenant...)
	e.block.rows++
}

// logTimes are a log record's time and observed time as stored: each
// stands in for the other when it is unset.
func logTimes(lr plog.LogRecord) (ts, observed uint64) {
	ts, observed = uint64(lr.Timestamp()), uint64(lr.ObservedTimestamp())
	if ts == 0 {
		ts = observed
	}
	if observed == 0 {
		observed = ts
	}
	return ts, observed
}

// severityNumber is OTLP's severity number (1–24, 0 unset) as the logs
// table's UInt8; numbers outside OTLP's range are stored as unset.
func severityNumber(n plog.SeverityNumber) uint8 {
	if n < 0 || n > 255 {
		return 0
	}
	return uint8(n)
}

// appendAttrMap appends m as the current row's value of a map column.
func (e *rowEncoder) appendAttrMap(c *nativeColumn, m pcommon.Map) {
	var n uint64
	c.keys, c.values, n = e.appendAttrEntries(c.keys, c.values, m, "")
	c.entries += n
	c.endMap()
}

// appendAttrEntries appends the entries of m to a map column's keys and
// values, and says how many it appended: values as Value.AsString renders
// them, each key once with its last value, but for key skip (none when "").
// OTLP forbids duplicate keys but its wire format cannot prevent them; the
// last one wins as it does in a Go map. Distinct keys with invalid UTF-8 can
// still come out the same (each bad byte is U+FFFD); a ClickHouse Map keeps
// both.
func (e *rowEncoder) appendAttrEntries(keys, values []byte, m pcommon.Map, skip string) ([]byte, []byte, uint64) {
	last := e.lastOccurrences(m)
	i, n := -1, uint64(0)
	for k, v := range m.All() {
		i++
		if last != nil && last[k] != i || skip != "" && k == skip {
			continue
		}
		keys = appendNativeString(keys, k)
		values = e.appendNativeValue(values, v)
		n++
	}
	return keys, values, n
}

// appendNativeValue appends v.AsString() as a Native string, without
// building that string for the common types.
func (e *rowEncoder) appendNativeValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendNativeString(b, v.Str())
	case pcommon.ValueTypeInt:
		e.val = strconv.AppendInt(e.val[:0], v.Int(), 10)
		b = binary.AppendUvarint(b, uint64(len(e.val)))
		return append(b, e.val...)
	case pcommon.ValueTypeBool:
		return appendNativeString(b, strconv.FormatBool(v.Bool()))
	case pcommon.ValueTypeEmpty:
		return append(b, 0)
	default:
		// Doubles, bytes, maps and slices: pdata's own rendering (ES6-style
		// numbers, base64, JSON) is the reference; it costs a string.
		return appendNativeString(b, v.AsString())
	}
}

// appendNativeTraceID appends id as a Native string in lowercase hex, as
// pcommon.TraceID.String renders it: empty for the empty id.
func appendNativeTraceID(b []byte, id pcommon.TraceID) []byte {
	if id.IsEmpty() {
		return append(b, 0)
	}
	b = append(b, byte(2*len(id)))
	return hex.AppendEncode(b, id[:])
}

// appendNativeSpanID is appendNativeTraceID for span ids.
func appendNativeSpanID(b []byte, id pcommon.SpanID) []byte {
	if id.IsEmpty() {
		return append(b, 0)
	}
	b = append(b, byte(2*len(id)))
	return hex.AppendEncode(b, id[:])
}
