package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// rowTenant is the tenant column of an analysis row whose Tenant is t.
func rowTenant(t string) string {
	if t == "" {
		return tenant.Default
	}
	return t
}

// The trace_facts table's fact of a row (schema 020).
const (
	factFinding     = 1
	factClockOffset = 2
)

// factColumns are the trace_facts table's columns in a Native block: what
// findings across traces read (findings_summary.sql), a clock offset's
// source, and the rest of each row in fields (schema 025).
var factColumns = []nativeColumnDef{
	{"tenant", nativeString}, {"trace_id", nativeString}, {"fact", nativeUInt8}, {"timestamp", nativeDateTime64},
	{"kind", nativeString}, {"service", nativeString}, {"subject", nativeString}, {"value", nativeFloat64},
	{"source", nativeString}, {"fields", nativeString},
}

// fact is a row of trace_facts: a finding or a clock offset.
type fact struct {
	finding *model.Finding
	clock   *model.ClockOffset
}

func (f *fact) time() uint64 {
	if f.finding != nil {
		return f.finding.TimeUnixNano
	}
	return f.clock.TimeUnixNano
}

// findingFields and clockFields are the fields column of a finding and of a
// clock offset, as the reader's factFields reads them. A finding's value is
// in its column as well, for findings across traces: a trace by id reads it
// here, one column fewer (queries/trace_facts.sql).
type findingFields struct {
	Kind    string   `json:"kind"`
	Service string   `json:"service"`
	Subject string   `json:"subject"`
	SpanIDs []string `json:"span_ids"`
	Summary string   `json:"summary"`
	Value   float64  `json:"value"`
}

type clockFields struct {
	Host     string `json:"host"`
	OffsetNs int64  `json:"offset_ns,string"`
}

// WriteFacts stores the findings and clock offsets of kept traces in one
// insert, a Native block: kept traces have a few of each, so they come
// close to the spans in rows.
func (w *Writer) WriteFacts(ctx context.Context, findings []model.Finding, clocks []model.ClockOffset) error {
	rows := make([]fact, 0, len(findings)+len(clocks))
	for i := range findings {
		rows = append(rows, fact{finding: &findings[i]})
	}
	for i := range clocks {
		rows = append(rows, fact{clock: &clocks[i]})
	}
	fields := func(v any) string {
		b, _ := json.Marshal(v) // of strings and numbers alone: cannot fail
		return string(b)
	}
	return insertBlock(ctx, w.conn, w.facts, "findings and clock offsets", factColumns, rows, w.notBefore(w.retention.Traces),
		(*fact).time, func(c []nativeColumn, r *fact) {
			if f := r.finding; f != nil {
				v := f.Value
				if math.IsNaN(v) || math.IsInf(v, 0) {
					v = 0 // what the API can serve as JSON; one bad value must not lose the batch
				}
				c[0].appendString(rowTenant(f.Tenant))
				c[1].appendString(f.TraceID)
				c[2].appendUInt8(factFinding)
				c[3].appendUInt64(f.TimeUnixNano)
				c[4].appendString(f.Kind)
				c[5].appendString(f.Service)
				c[6].appendString(f.Subject)
				c[7].appendFloat64(v)
				c[8].appendString("")
				c[9].appendString(fields(findingFields{Kind: f.Kind, Service: f.Service, Subject: f.Subject,
					SpanIDs: nonNilSlice(f.SpanIDs), Summary: f.Summary, Value: v}))
				return
			}
			o := r.clock
			c[0].appendString(rowTenant(o.Tenant))
			c[1].appendString(o.TraceID)
			c[2].appendUInt8(factClockOffset)
			c[3].appendUInt64(o.TimeUnixNano)
			c[4].appendString("")
			c[5].appendString("")
			c[6].appendString("")
			c[7].appendFloat64(0)
			c[8].appendString(o.Source)
			c[9].appendString(fields(clockFields{Host: o.Host, OffsetNs: o.OffsetNanos}))
		})
}

// WriteFindings stores findings alone (WriteFacts).
func (w *Writer) WriteFindings(ctx context.Context, rows []model.Finding) error {
	return w.WriteFacts(ctx, rows, nil)
}

// WriteClockOffsets stores clock offsets alone (WriteFacts).
func (w *Writer) WriteClockOffsets(ctx context.Context, rows []model.ClockOffset) error {
	return w.WriteFacts(ctx, nil, rows)
}

// insertBlock inserts rows as one Native block of columns defs, each row's
// values appended by fill, but for those whose time (the table's partition
// key) is before notBefore; rows over more days than one insert may write go
// in one block per range of days.
func insertBlock[T any](ctx context.Context, conn Conn, table, what string, defs []nativeColumnDef, rows []T,
	notBefore uint64, time func(r *T) uint64, fill func(c []nativeColumn, r *T)) error {
	var span daySpan
	for i := range rows {
		if t := time(&rows[i]); t >= notBefore {
			span.add(t)
		}
	}
	if len(span.times) == 0 {
		return nil
	}
	var b nativeBlock
	for _, days := range span.groups() {
		b.reset(defs)
		for i := range rows {
			if t := time(&rows[i]); t >= notBefore && days.has(t) {
				fill(b.cols, &rows[i])
				b.rows++
			}
		}
		if err := conn.Insert(ctx, table, FormatNative, b.appendTo(nil)); err != nil {
			return fmt.Errorf("inserting %d %s: %w", b.rows, what, err)
		}
	}
	return nil
}

// redColumns are the red table's columns in a Native block.
var redColumns = []nativeColumnDef{
	{"timestamp", nativeDateTime}, {"service", nativeString}, {"operation", nativeString}, {"instance", nativeString},
	{"dimensions", nativeStringMap}, {"requests", nativeUInt64}, {"errors", nativeUInt64}, {"latency", nativeBucketMap},
	{"error_latency", nativeBucketMap}, {"tenant", nativeString},
}

// WriteRED stores RED rows in one insert, a Native block.
func (w *Writer) WriteRED(ctx context.Context, rows []model.RED) error {
	return insertBlock(ctx, w.conn, w.red, "RED", redColumns, rows, w.notBefore(w.retention.Traces), func(r *model.RED) uint64 {
		return r.TimeUnixNano
	}, func(c []nativeColumn, r *model.RED) {
		c[0].appendUInt32(uint32(r.TimeUnixNano / 1e9))
		c[1].appendString(r.Service)
		c[2].appendString(r.Operation)
		c[3].appendString(r.Instance)
		c[4].appendStringMap(r.Dimensions)
		c[5].appendUInt64(r.Requests)
		c[6].appendUInt64(r.Errors)
		c[7].appendBucketMap(r.Latency)
		c[8].appendBucketMap(r.ErrorLatency)
		c[9].appendString(rowTenant(r.Tenant))
	})
}

// clockPairColumns are the clock_pairs table's columns in a Native block.
var clockPairColumns = []nativeColumnDef{
	{"timestamp", nativeDateTime}, {"host_a", nativeString}, {"host_b", nativeString}, {"offset_ns", nativeInt64},
	{"samples", nativeUInt32}, {"tenant", nativeString},
}

// WriteClockPairs stores skewed host pairs' estimates in one insert.
func (w *Writer) WriteClockPairs(ctx context.Context, rows []model.ClockPair) error {
	return insertBlock(ctx, w.conn, w.clockPairs, "clock pairs", clockPairColumns, rows, w.notBefore(w.retention.Traces),
		func(r *model.ClockPair) uint64 { return r.TimeUnixNano }, func(c []nativeColumn, r *model.ClockPair) {
			c[0].appendUInt32(uint32(r.TimeUnixNano / 1e9))
			c[1].appendString(r.A)
			c[2].appendString(r.B)
			c[3].appendInt64(r.OffsetNanos)
			c[4].appendUInt32(uint32(max(r.Samples, 0)))
			c[5].appendString(rowTenant(r.Tenant))
		})
}
