// Package model is tracesift's domain model: a trace's spans and logs, what
// the analyzers found in it, the clock offsets of its hosts, and the
// summaries searches return. The analyzers read it, the store writes and
// reads it, the query API serves it. It has no JSON and no storage form:
// those belong to the store's rows and to the query API's contract.
//
// Ids are lowercase hex (trace 32 characters, span 16), times Unix
// nanoseconds, attributes rendered as strings (numbers in decimal, booleans
// as true/false, as pcommon.Value.AsString renders them).
package model

import "slices"

// Kind is a span's kind, numbered as OTLP's SpanKind.
type Kind int

// Span kinds.
const (
	KindUnspecified Kind = 0
	KindInternal    Kind = 1
	KindServer      Kind = 2
	KindClient      Kind = 3
	KindProducer    Kind = 4
	KindConsumer    Kind = 5
)

var kindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// String is the kind's name as stored and served: "server", "client", ...;
// "unspecified" for 0 and for kinds OTLP does not define.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return kindNames[0]
	}
	return kindNames[k]
}

// ParseKind is the kind String names; KindUnspecified for any other name.
func ParseKind(name string) Kind { return Kind(max(slices.Index(kindNames[:], name), 0)) }

// StatusCode is a span's status code, numbered as OTLP's Status.StatusCode.
type StatusCode int

// Status codes.
const (
	StatusUnset StatusCode = 0
	StatusOK    StatusCode = 1
	StatusError StatusCode = 2
)

var statusNames = [...]string{"UNSET", "OK", "ERROR"}

// String is the code's name as stored and served: "UNSET", "OK", "ERROR";
// empty for a code OTLP does not define.
func (c StatusCode) String() string {
	if c < 0 || int(c) >= len(statusNames) {
		return ""
	}
	return statusNames[c]
}

// ParseStatusCode is the code String names; StatusUnset for any other name.
func ParseStatusCode(name string) StatusCode {
	return StatusCode(max(slices.Index(statusNames[:], name), 0))
}

// Span is one span of a trace.
type Span struct {
	TraceID      string
	SpanID       string
	ParentSpanID string // empty for a root
	TraceState   string
	Name         string
	Kind         Kind
	// Service and Host are the resource's service.name and the host it
	// names (the first of the store's HostKeys set).
	Service       string
	Host          string
	StartUnixNano uint64
	EndUnixNano   uint64
	StatusCode    StatusCode
	StatusMessage string
	Attributes    map[string]string
	Resource      map[string]string
	ScopeName     string
	ScopeVersion  string
	Events        []Event
	Links         []Link
}

// Duration is the span's duration in nanoseconds; 0 when it ends before it
// starts.
func (s *Span) Duration() uint64 {
	if s.EndUnixNano < s.StartUnixNano {
		return 0
	}
	return s.EndUnixNano - s.StartUnixNano
}

// Event is a span event; exceptions are events named "exception".
type Event struct {
	Name         string
	TimeUnixNano uint64
	Attributes   map[string]string
}

// Link points at a span of this or another trace (a messaging consumer links
// to the producer whose message it handled).
type Link struct {
	TraceID    string
	SpanID     string
	Attributes map[string]string
}

// Log is one log record.
type Log struct {
	TimeUnixNano         uint64
	ObservedTimeUnixNano uint64
	SeverityText         string
	SeverityNumber       int
	Body                 string
	TraceID              string // empty when the record names no trace
	SpanID               string
	Service              string
	Host                 string
	Attributes           map[string]string
	Resource             map[string]string
}

// Trace is one trace: its spans and, as stored, its logs, findings and the
// clock offsets of its hosts. The analyzers read only TraceID and Spans.
type Trace struct {
	TraceID  string
	Spans    []Span
	Logs     []Log
	Findings []Finding
	// ClockOffsets are the offsets of the trace's hosts, in nanoseconds:
	// clock(host) − clock(the root's host). Hosts in sync are absent.
	ClockOffsets map[string]int64
	// SkewedPairs are, as read from the store, the latest estimates near the
	// trace's time of host pairs among its hosts that were skewed.
	SkewedPairs []ClockPair
	// Truncated says the trace has more spans than the reader returns
	// (its earliest are in Spans).
	Truncated bool
}

// Finding is what an analyzer says about a trace.
type Finding struct {
	TraceID      string
	TimeUnixNano uint64 // the trace's start
	// Kind is the analyzer's name for it: slowest_hop, retry_fanout, ...
	Kind    string
	SpanIDs []string
	Service string
	// Subject is what the finding is about, the key findings are
	// aggregated by across traces: an operation ("checkout GET /cart"), a
	// call edge ("checkout → payments POST /charge"), a host pair
	// ("web-1 → db-1").
	Subject string
	Value   float64
	Summary string
	// Tenant is the trace's tenant (internal/tenant); empty means its default.
	Tenant string
}

// ClockOffset is the offset a kept trace's times on one host were corrected
// by.
type ClockOffset struct {
	TraceID      string
	TimeUnixNano uint64 // the trace's start
	Host         string
	OffsetNanos  int64 // clock(Host) − clock(the root's host)
	// Source says where the offset came from: the estimate over many traces
	// or this trace's own calls (clockskew.Source).
	Source string
	Tenant string // the trace's tenant; empty means the default
}

// Dependency is the calls from one service to another: spans of Child
// whose parent span is one of Parent's; Errors of them had status ERROR,
// and P99Nanos is their 99th percentile duration.
type Dependency struct {
	Parent, Child string
	Calls, Errors uint64
	P99Nanos      uint64
}

// TraceSummary is one trace of a trace search.
type TraceSummary struct {
	TraceID       string
	RootService   string
	RootName      string
	StartUnixNano uint64
	DurationNano  uint64
	SpanCount     uint64
	ErrorCount    uint64 // spans with status ERROR
	Services      []string
}

// LogMatch is one record of a log search.
type LogMatch struct {
	Log
	// Kept says whether the record's trace is stored.
	Kept bool
}

// FindingSummary aggregates the findings of one kind, service and subject
// across traces.
type FindingSummary struct {
	Kind     string
	Service  string
	Subject  string
	Count    uint64
	Traces   uint64
	AvgValue float64
	P50Value float64
	MaxValue float64
	// ExampleTraceIDs are the traces with the highest values, worst first.
	ExampleTraceIDs  []string
	LastSeenUnixNano uint64
}

// RED is the requests, errors and durations of one series over one
// interval, counted on every entry span received, before sampling: a
// service's operation on one instance with one set of dimension values.
type RED struct {
	TimeUnixNano uint64 // the interval's start
	Service      string
	Operation    string
	Instance     string
	Dimensions   map[string]string
	Requests     uint64
	Errors       uint64 // status ERROR or timed out
	// Latency counts the durations by the buckets of red.Sketch;
	// ErrorLatency those of the errors alone.
	Latency      map[int32]uint64
	ErrorLatency map[int32]uint64
	Tenant       string // whose traffic it is; empty means the default tenant
}

// REDTally is one series' requests over a window, split for comparing
// failing requests with healthy ones: Slow counts the requests that did not
// fail but took longer than a threshold (known to a sketch bucket).
type REDTally struct {
	Operation  string
	Instance   string
	Dimensions map[string]string
	Requests   uint64
	Errors     uint64
	Slow       uint64
}

// REDGroup is the RED of a service's series that share one value of a key
// (an instance, an operation, a dimension's value), over a window.
type REDGroup struct {
	Service   string
	Operation string // empty: every operation of the service
	GroupBy   string // "instance", "operation" or a dimension's key
	Value     string
	Requests  uint64
	Errors    uint64
	Latency   map[int32]uint64 // as RED.Latency
	// Points split the window by a step, oldest first; none when no step
	// was asked for.
	Points []REDPoint
}

// REDPoint is the RED of a group over one step of the window.
type REDPoint struct {
	TimeUnixNano uint64
	Requests     uint64
	Errors       uint64
	// P99Bucket is the latency sketch's bucket of the 99th percentile
	// (red.BucketValue is its duration); the store reads it alone, not the
	// point's sketch, to keep a long series small.
	P99Bucket int32
}

// ClockPair is an estimate, at a time, that two hosts' clocks disagree by
// the skew threshold or more: what lets a trace read later carry the
// clock_skew finding although it was decided before the estimate had its
// samples.
type ClockPair struct {
	TimeUnixNano uint64
	A, B         string // in lexical order
	OffsetNanos  int64  // clock(B) − clock(A)
	Samples      int    // the traces the estimate is the median of
	Tenant       string // whose hosts they are; empty means the default tenant
}
