package query

import "github.com/tracesift/tracesift/internal/model"

// The types below are the API's JSON (README, "Query API"): what clients
// decode, built from the domain model by the functions after them. Times in
// Unix nanoseconds are JSON strings, as in OTLP/JSON, because they do not fit
// a JavaScript number; durations are numbers. Slices and maps are never null.

// Trace is one stored trace with its logs and findings.
type Trace = TraceOf[Span]

// TraceOf is a trace whose spans are S: Span, or SpanBrief when asked for
// brief spans.
type TraceOf[S Span | SpanBrief] struct {
	TraceID  string    `json:"traceId"`
	Spans    []S       `json:"spans"`
	Logs     []Log     `json:"logs"`
	Findings []Finding `json:"findings"`
	// ClockOffsets are the hosts' clock offsets the adjusted times correct,
	// in nanoseconds: clock(host) − clock(the root's host). Hosts without an
	// offset are absent.
	ClockOffsets map[string]int64 `json:"clockOffsets"`
	// Truncated is true when the trace has more spans than the store's
	// max_spans_per_trace: Spans are its earliest.
	Truncated bool `json:"truncated,omitempty"`
}

// Status is a span's status.
type Status struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Span is one span of a stored trace.
type Span struct {
	SpanBrief
	TraceID      string            `json:"traceId"`
	TraceState   string            `json:"traceState,omitempty"`
	Attributes   map[string]string `json:"attributes"`
	Resource     map[string]string `json:"resource"`
	ScopeName    string            `json:"scopeName,omitempty"`
	ScopeVersion string            `json:"scopeVersion,omitempty"`
	Events       []Event           `json:"events"`
	Links        []Link            `json:"links"`
}

// SpanBrief is what a waterfall draws of a span (GET
// /api/v1/traces/{id}?brief=true): its place, times and status, without the
// attributes, resource and events that make most of a large trace's bytes.
type SpanBrief struct {
	SpanID            string `json:"spanId"`
	ParentSpanID      string `json:"parentSpanId"`
	Name              string `json:"name"`
	Kind              string `json:"kind"`
	Service           string `json:"service"`
	Host              string `json:"host"`
	StartTimeUnixNano uint64 `json:"startTimeUnixNano,string"`
	EndTimeUnixNano   uint64 `json:"endTimeUnixNano,string"`
	// The times corrected for the clock skew of the span's host (see
	// internal/clockskew); equal to the raw ones when there is none.
	AdjustedStartTimeUnixNano uint64 `json:"adjustedStartTimeUnixNano,string"`
	AdjustedEndTimeUnixNano   uint64 `json:"adjustedEndTimeUnixNano,string"`
	DurationNano              uint64 `json:"durationNano"`
	Status                    Status `json:"status"`
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
	// the log's host; a trace's logs are in this order.
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

// LogMatch is a log record found by a search, with whether its trace is
// stored.
type LogMatch struct {
	Log
	Kept bool `json:"kept"`
}

// Finding is what an analyzer says about a trace.
type Finding struct {
	Kind    string   `json:"kind"`
	SpanIDs []string `json:"spanIds"`
	Service string   `json:"service"`
	// Subject is what the finding is about: an operation, a call edge, a
	// host pair (model.Finding).
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

// Dependency is the calls from one service to another (GET
// /api/v1/dependencies).
type Dependency struct {
	Parent    string  `json:"parent"`
	Child     string  `json:"child"`
	Calls     uint64  `json:"calls"`
	Errors    uint64  `json:"errors"`
	ErrorRate float64 `json:"errorRate"`
	P99Ms     float64 `json:"p99Ms"`
}

// ClockPair is a host pair's clock offsets over time (GET
// /api/v1/clock-skew).
type ClockPair struct {
	HostA  string       `json:"hostA"`
	HostB  string       `json:"hostB"`
	Points []ClockPoint `json:"points"`
}

// ClockPoint is one estimate of a pair's offset: clock(hostB) − clock(hostA),
// the median of Samples traces.
type ClockPoint struct {
	TimeUnixNano uint64  `json:"timeUnixNano,string"`
	OffsetMs     float64 `json:"offsetMs"`
	Samples      int     `json:"samples"`
}

// TraceSummary is one trace found by a search.
type TraceSummary struct {
	TraceID           string   `json:"traceId"`
	RootService       string   `json:"rootService"`
	RootName          string   `json:"rootName"`
	StartTimeUnixNano uint64   `json:"startTimeUnixNano,string"`
	DurationNano      uint64   `json:"durationNano"`
	Status            string   `json:"status"` // ERROR when a span is, else OK
	SpanCount         uint64   `json:"spanCount"`
	ErrorCount        uint64   `json:"errorCount"`
	Services          []string `json:"services"`
}

// spanJSON is s with its times adjusted by adj (a host's offset).
func spanJSON(s *model.Span, adj func(host string, t uint64) uint64) Span {
	out := Span{
		SpanBrief: spanBrief(s, adj), TraceID: s.TraceID, TraceState: s.TraceState,
		Attributes: nonNil(s.Attributes), Resource: nonNil(s.Resource),
		ScopeName: s.ScopeName, ScopeVersion: s.ScopeVersion,
		Events: make([]Event, len(s.Events)), Links: make([]Link, len(s.Links)),
	}
	for i, e := range s.Events {
		out.Events[i] = Event{TimeUnixNano: e.TimeUnixNano, Name: e.Name, Attributes: nonNil(e.Attributes)}
	}
	for i, l := range s.Links {
		out.Links[i] = Link{TraceID: l.TraceID, SpanID: l.SpanID, Attributes: nonNil(l.Attributes)}
	}
	return out
}

// spanBrief is what spanJSON makes of s but its details.
func spanBrief(s *model.Span, adj func(host string, t uint64) uint64) SpanBrief {
	return SpanBrief{
		SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind.String(), Service: s.Service, Host: s.Host,
		StartTimeUnixNano: s.StartUnixNano, EndTimeUnixNano: s.EndUnixNano,
		AdjustedStartTimeUnixNano: adj(s.Host, s.StartUnixNano), AdjustedEndTimeUnixNano: adj(s.Host, s.EndUnixNano),
		DurationNano: s.Duration(), Status: Status{Code: s.StatusCode.String(), Message: s.StatusMessage},
	}
}

func logJSON(l *model.Log, adjusted uint64) Log {
	return Log{
		TimeUnixNano: l.TimeUnixNano, ObservedTimeUnixNano: l.ObservedTimeUnixNano, AdjustedTimeUnixNano: adjusted,
		SeverityText: l.SeverityText, SeverityNumber: l.SeverityNumber, Body: l.Body,
		TraceID: l.TraceID, SpanID: l.SpanID, Service: l.Service, Host: l.Host,
		Attributes: nonNil(l.Attributes), Resource: nonNil(l.Resource),
	}
}

func findingJSON(f *model.Finding) Finding {
	ids := f.SpanIDs
	if ids == nil {
		ids = []string{}
	}
	return Finding{Kind: f.Kind, SpanIDs: ids, Service: f.Service, Subject: f.Subject, Value: f.Value, Summary: f.Summary}
}

// logMatches is the JSON of a log search's page; times are as recorded.
func logMatches(in []model.LogMatch) []LogMatch {
	out := make([]LogMatch, len(in))
	for i := range in {
		out[i] = LogMatch{Log: logJSON(&in[i].Log, in[i].TimeUnixNano), Kept: in[i].Kept}
	}
	return out
}

func findingSummaries(in []model.FindingSummary) []FindingSummary {
	out := make([]FindingSummary, len(in))
	for i, s := range in {
		ex := s.ExampleTraceIDs
		if ex == nil {
			ex = []string{}
		}
		out[i] = FindingSummary{Kind: s.Kind, Service: s.Service, Subject: s.Subject, Count: s.Count, Traces: s.Traces,
			AvgValue: s.AvgValue, P50Value: s.P50Value, MaxValue: s.MaxValue, ExampleTraceIDs: ex,
			LastSeenUnixNano: s.LastSeenUnixNano}
	}
	return out
}

func traceSummaries(in []model.TraceSummary) []TraceSummary {
	out := make([]TraceSummary, len(in))
	for i, s := range in {
		status, services := "OK", s.Services
		if s.ErrorCount > 0 {
			status = "ERROR"
		}
		if services == nil {
			services = []string{}
		}
		out[i] = TraceSummary{TraceID: s.TraceID, RootService: s.RootService, RootName: s.RootName,
			StartTimeUnixNano: s.StartUnixNano, DurationNano: s.DurationNano, Status: status,
			SpanCount: s.SpanCount, ErrorCount: s.ErrorCount, Services: services}
	}
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
