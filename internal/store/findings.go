package store

import (
	"context"
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

// findingColumns are the findings table's columns in a Native block.
var findingColumns = []nativeColumnDef{
	{"timestamp", nativeDateTime64}, {"trace_id", nativeString}, {"kind", nativeString},
	{"service", nativeString}, {"subject", nativeString}, {"span_ids", nativeStringArray},
	{"value", nativeFloat64}, {"summary", nativeString}, {"tenant", nativeString},
}

// WriteFindings stores findings in one insert, a Native block: kept traces
// have a few findings each, so they come close to the spans in rows.
func (w *Writer) WriteFindings(ctx context.Context, rows []model.Finding) error {
	return insertBlock(ctx, w.conn, w.findings, "findings", findingColumns, rows, w.notBefore(w.retention.Traces), func(r *model.Finding) uint64 {
		return r.TimeUnixNano
	}, func(c []nativeColumn, r *model.Finding) {
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
		c[8].appendString(rowTenant(r.Tenant))
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

// clockColumns are the trace_clock table's columns in a Native block.
var clockColumns = []nativeColumnDef{
	{"timestamp", nativeDateTime64}, {"trace_id", nativeString}, {"host", nativeString},
	{"offset_ns", nativeInt64}, {"source", nativeString}, {"tenant", nativeString},
}

// WriteClockOffsets stores clock offsets in one insert, a Native block.
func (w *Writer) WriteClockOffsets(ctx context.Context, rows []model.ClockOffset) error {
	return insertBlock(ctx, w.conn, w.clock, "clock offsets", clockColumns, rows, w.notBefore(w.retention.Traces), func(r *model.ClockOffset) uint64 {
		return r.TimeUnixNano
	}, func(c []nativeColumn, r *model.ClockOffset) {
		c[0].appendUInt64(r.TimeUnixNano)
		c[1].appendString(r.TraceID)
		c[2].appendString(r.Host)
		c[3].appendInt64(r.OffsetNanos)
		c[4].appendString(r.Source)
		c[5].appendString(rowTenant(r.Tenant))
	})
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
