// Package modeltest reads the JSON that test fixtures write traces in (the
// analyzers' golden traces under internal/analyze/testdata) into the model.
// The form is the fixtures' own: kinds and status codes as OTLP numbers,
// times as plain Unix-nanosecond numbers ("start", "end", "time").
package modeltest

import (
	"bytes"
	"encoding/json"

	"github.com/tracesift/tracesift/internal/model"
)

// Trace is a model.Trace read from a fixture; unknown fields are an error,
// so that a misspelt field does not pass unnoticed.
type Trace struct{ model.Trace }

type traceJSON struct {
	TraceID string     `json:"traceId"`
	Spans   []spanJSON `json:"spans"`
}

type spanJSON struct {
	SpanID        string            `json:"spanId"`
	ParentSpanID  string            `json:"parentSpanId"`
	Name          string            `json:"name"`
	Kind          model.Kind        `json:"kind"`
	Service       string            `json:"service"`
	Host          string            `json:"host"`
	Start         uint64            `json:"start"`
	End           uint64            `json:"end"`
	StatusCode    model.StatusCode  `json:"statusCode"`
	StatusMessage string            `json:"statusMessage"`
	Attributes    map[string]string `json:"attributes"`
	Events        []eventJSON       `json:"events"`
	Links         []linkJSON        `json:"links"`
}

type eventJSON struct {
	Name       string            `json:"name"`
	Time       uint64            `json:"time"`
	Attributes map[string]string `json:"attributes"`
}

type linkJSON struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
}

// UnmarshalJSON reads the fixture form.
func (t *Trace) UnmarshalJSON(b []byte) error {
	var in traceJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return err
	}
	t.Trace = model.Trace{TraceID: in.TraceID, Spans: make([]model.Span, len(in.Spans))}
	for i, s := range in.Spans {
		ms := model.Span{TraceID: in.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
			Service: s.Service, Host: s.Host, StartUnixNano: s.Start, EndUnixNano: s.End,
			StatusCode: s.StatusCode, StatusMessage: s.StatusMessage, Attributes: s.Attributes}
		for _, e := range s.Events {
			ms.Events = append(ms.Events, model.Event{Name: e.Name, TimeUnixNano: e.Time, Attributes: e.Attributes})
		}
		for _, l := range s.Links {
			ms.Links = append(ms.Links, model.Link{TraceID: l.TraceID, SpanID: l.SpanID})
		}
		t.Spans[i] = ms
	}
	return nil
}

// ReadTrace reads one trace in the fixture form.
func ReadTrace(b []byte) (*model.Trace, error) {
	var t Trace
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	return &t.Trace, nil
}
