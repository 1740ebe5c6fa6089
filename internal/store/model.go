package store

// The types below are the query API's JSON (README, "Query API"). Times in
// Unix nanoseconds are JSON strings, as in OTLP/JSON, because they do not fit
// a JavaScript number; durations are numbers.

// Trace is one stored trace with its logs and findings.
type Trace struct {
	TraceID  string    `json:"traceId"`
	Spans    []Span    `json:"spans"`
	Logs     []Log     `json:"logs"`
	Findings []Finding `json:"findings"`
	// ClockOffsets are the hosts' clock offsets the adjusted times correct,
	// in nanoseconds: clock(host) − clock(the root's host). Hosts without an
	// offset are absent.
	ClockOffsets map[string]int64 `json:"clockOffsets"`
}

// Status is a span's status.
type Status struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Span is one span of a stored trace.
type Span struct {
	TraceID           string `json:"traceId"`
	SpanID            string `json:"spanId"`
	ParentSpanID      string `json:"parentSpanId"`
	TraceState        string `json:"traceState,omitempty"`
	Name              string `json:"name"`
	Kind              string `json:"kind"`
	Service           string `json:"service"`
	Host              string `json:"host"`
	StartTimeUnixNano uint64 `json:"startTimeUnixNano,string"`
	EndTimeUnixNano   uint64 `json:"endTimeUnixNano,string"`
	// The times corrected for the clock skew of the span's host (see
	// internal/clockskew); equal to the raw ones when there is none.
	AdjustedStartTimeUnixNano uint64            `json:"adjustedStartTimeUnixNano,string"`
	AdjustedEndTimeUnixNano   uint64            `json:"adjustedEndTimeUnixNano,string"`
	DurationNano              uint64            `json:"durationNano"`
	Status                    Status            `json:"status"`
	Attributes                map[string]string `json:"attributes"`
	Resource                  map[string]string `json:"resource"`
	ScopeName                 string            `json:"scopeName,omitempty"`
	ScopeVersion              string            `json:"scopeVersion,omitempty"`
	Events                    []Event           `json:"events"`
	Links                     []Link            `json:"links"`
}

// Event is a span event (exceptions, annotations).
type Event struct {
	TimeUnixNano uint64            `json:"timeUnixNano,string"`
	Name         string            `json:"name"`
	Attributes   map[string]string `json:"attributes"`
}

// Link is a span link (messaging consumers link to their producers).
type Link struct {
	TraceID    string            `json:"traceId"`
	SpanID     string            `json:"spanId"`
	Attributes map[string]string `json:"attributes"`
}

// Log is one log record.
type Log struct {
	TimeUnixNano         uint64 `json:"timeUnixNano,string"`
	ObservedTimeUnixNano uint64 `json:"observedTimeUnixNano,string"`
	// AdjustedTimeUnixNano is TimeUnixNano corrected for the clock skew of
	// the log's host; the trace's logs are in this order.
	AdjustedTimeUnixNano uint64            `json:"adjustedTimeUnixNano,string"`
	SeverityText         string            `json:"severityText"`
	SeverityNumber       int               `json:"severityNumber"`
	Body                 string            `json:"body"`
	TraceID              string            `json:"traceId"`
	SpanID               string            `json:"spanId"`
	Service              string            `json:"service"`
	Host                 string            `json:"host"`
	Attributes           map[string]string `json:"attributes"`
	Resource             map[string]string `json:"resource"`
}

// Finding is what an analyzer says about a trace.
type Finding struct {
	Kind    string   `json:"kind"`
	SpanIDs []string `json:"spanIds"`
	Service string   `json:"service"`
	// Subject is what the finding is about: an operation, a call edge, a
	// host pair (see FindingRow).
	Subject string  `json:"subject"`
	Value   float64 `json:"value"`
	Summary string  `json:"summary"`
}

// FindingSummary aggregates the findings of one kind, service and subject
// across traces (GET /api/v1/findings).
type FindingSummary struct {
	Kind     string  `json:"kind"`
	Service  string  `json:"service"`
	Subject  string  `json:"subject"`
	Count    uint64  `json:"count"`
	Traces   uint64  `json:"traces"`
	AvgValue float64 `json:"avgValue"`
	P50Value float64 `json:"p50Value"`
	MaxValue float64 `json:"maxValue"`
	// ExampleTraceIDs are the traces with the highest values, worst first.
	ExampleTraceIDs  []string `json:"exampleTraceIds"`
	LastSeenUnixNano uint64   `json:"lastSeenUnixNano,string"`
}
