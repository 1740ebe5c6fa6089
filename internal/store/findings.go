package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
)

// FindingRow is one analyzer finding of a stored trace: a row of the findings
// table. Subject is what the finding is about, the key the findings API
// aggregates by: an operation ("checkout GET /cart"), a call edge
// ("checkout → payments POST /charge") or a host pair ("web-1 → db-1").
type FindingRow struct {
	TraceID      string
	TimeUnixNano uint64 // the trace's start
	Kind         string
	Service      string
	Subject      string
	SpanIDs      []string
	Value        float64
	Summary      string
}

// findingJSON is a FindingRow as the findings table's JSONEachRow.
type findingJSON struct {
	TraceID   string   `json:"trace_id"`
	Timestamp nanoTime `json:"timestamp"`
	Kind      string   `json:"kind"`
	Service   string   `json:"service"`
	Subject   string   `json:"subject"`
	SpanIDs   []string `json:"span_ids"`
	Value     float64  `json:"value"`
	Summary   string   `json:"summary"`
}

// WriteFindings stores findings in one insert.
func (w *Writer) WriteFindings(ctx context.Context, rows []FindingRow) error {
	return insertRows(ctx, w.conn, w.findings, "findings", rows, func(r *FindingRow) any {
		row := findingJSON{TraceID: r.TraceID, Timestamp: nanoTime(r.TimeUnixNano), Kind: r.Kind, Service: r.Service,
			Subject: r.Subject, SpanIDs: r.SpanIDs, Value: r.Value, Summary: r.Summary}
		if math.IsNaN(row.Value) || math.IsInf(row.Value, 0) {
			row.Value = 0 // JSON has no NaN; one bad value must not lose the batch
		}
		if row.SpanIDs == nil {
			row.SpanIDs = []string{}
		}
		return &row
	})
}

// insertRows inserts rows, each turned by toJSON into a value encoding/json
// writes as one JSONEachRow line. For the analyzers' small tables (a handful
// of rows per kept trace) encoding/json serves.
func insertRows[T any](ctx context.Context, conn Conn, table, what string, rows []T, toJSON func(*T) any) error {
	if len(rows) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range rows {
		if err := enc.Encode(toJSON(&rows[i])); err != nil {
			return fmt.Errorf("encoding %s row %d: %w", what, i, err)
		}
	}
	if err := conn.Insert(ctx, table, FormatJSONEachRow, buf.Bytes()); err != nil {
		return fmt.Errorf("inserting %d %s: %w", len(rows), what, err)
	}
	return nil
}

// ClockRow is the clock offset of one host of a kept trace: clock(Host) −
// clock(the trace's reference host), as the skew estimator put it.
type ClockRow struct {
	TraceID      string
	TimeUnixNano uint64 // the trace's start
	Host         string
	OffsetNanos  int64
	Source       string // how the offset was found (estimate, propagated, trace)
}

type clockJSON struct {
	TraceID   string   `json:"trace_id"`
	Timestamp nanoTime `json:"timestamp"`
	Host      string   `json:"host"`
	OffsetNs  int64    `json:"offset_ns"`
	Source    string   `json:"source"`
}

// WriteClockOffsets stores clock offsets in one insert.
func (w *Writer) WriteClockOffsets(ctx context.Context, rows []ClockRow) error {
	return insertRows(ctx, w.conn, w.clock, "clock offsets", rows, func(r *ClockRow) any {
		return &clockJSON{TraceID: r.TraceID, Timestamp: nanoTime(r.TimeUnixNano), Host: r.Host,
			OffsetNs: r.OffsetNanos, Source: r.Source}
	})
}
