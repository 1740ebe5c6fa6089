package store

import (
	"context"
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

// findingColumns are the findings table's columns in a Native block.
var findingColumns = []nativeColumnDef{
	{"timestamp", nativeDateTime64}, {"trace_id", nativeString}, {"kind", nativeString},
	{"service", nativeString}, {"subject", nativeString}, {"span_ids", nativeStringArray},
	{"value", nativeFloat64}, {"summary", nativeString},
}

// WriteFindings stores findings in one insert, a Native block. Kept traces
// have a few findings each, so at 150 k spans/s the findings are about half
// as many rows as the kept spans; as JSONEachRow (before) a row cost the
// engine about what a span does.
func (w *Writer) WriteFindings(ctx context.Context, rows []FindingRow) error {
	return insertBlock(ctx, w.conn, w.findings, "findings", findingColumns, rows, w.notBefore(w.retention.Traces), func(r *FindingRow) uint64 {
		return r.TimeUnixNano
	}, func(c []nativeColumn, r *FindingRow) {
		v := r.Value
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0 // what the API can serve as JSON; one bad value must not lose the batch
		}
		c[0].appendUInt64(r.TimeUnixNano)
		c[1].appendString(r.TraceID)
		c[2].appendString(r.Kind)
		c[3].appendString(r.Service)
		c[4].appendString(r.Subject)
		c[5].appendStrings(r.SpanIDs)
		c[6].appendFloat64(v)
		c[7].appendString(r.Summary)
	})
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

// ClockRow is the clock offset of one host of a kept trace: clock(Host) −
// clock(the trace's reference host), as the skew estimator put it.
type ClockRow struct {
	TraceID      string
	TimeUnixNano uint64 // the trace's start
	Host         string
	OffsetNanos  int64
	Source       string // how the offset was found (estimate, propagated, trace)
}

// clockColumns are the trace_clock table's columns in a Native block.
var clockColumns = []nativeColumnDef{
	{"timestamp", nativeDateTime64}, {"trace_id", nativeString}, {"host", nativeString},
	{"offset_ns", nativeInt64}, {"source", nativeString},
}

// WriteClockOffsets stores clock offsets in one insert, a Native block.
func (w *Writer) WriteClockOffsets(ctx context.Context, rows []ClockRow) error {
	return insertBlock(ctx, w.conn, w.clock, "clock offsets", clockColumns, rows, w.notBefore(w.retention.Traces), func(r *ClockRow) uint64 {
		return r.TimeUnixNano
	}, func(c []nativeColumn, r *ClockRow) {
		c[0].appendUInt64(r.TimeUnixNano)
		c[1].appendString(r.TraceID)
		c[2].appendString(r.Host)
		c[3].appendInt64(r.OffsetNanos)
		c[4].appendString(r.Source)
	})
}
