package store

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
)

func TestDayGroups(t *testing.T) {
	day := func(d uint64) uint64 { return d*nanosPerDay + 12345 }
	assert.Empty(t, dayGroups(nil))
	assert.Equal(t, []dayRange{{3, 3}}, dayGroups([]uint64{day(3), day(3) + 1}))
	// Days with rows count, the gaps between them do not.
	var times []uint64
	for d := uint64(0); d < 100; d++ {
		times = append(times, day(1000-10*d), day(1000-10*d)) // every tenth day, newest first, twice
	}
	groups := dayGroups(times)
	require.Len(t, groups, 3)
	assert.Equal(t, dayRange{10, 400}, groups[0])
	assert.Equal(t, dayRange{410, 800}, groups[1])
	assert.Equal(t, dayRange{810, 1000}, groups[2])
	for _, ns := range times {
		n := 0
		for _, g := range groups {
			if g.has(ns) {
				n++
			}
		}
		assert.Equal(t, 1, n, "every time in exactly one group")
	}

	var s daySpan
	assert.True(t, s.fits())
	s.add(day(7))
	s.add(day(7 + maxDaysPerInsert - 1))
	assert.True(t, s.fits())
	s.add(day(6))
	assert.False(t, s.fits())
}

// blockDays are the distinct days of the rows of a Native block, by column.
func blockDays(t *testing.T, block []byte, column string) map[int64]int {
	t.Helper()
	days := map[int64]int{}
	for _, row := range decodeNative(t, block) {
		text := row[column].(string)
		secs, err := strconv.ParseInt(text[:strings.IndexByte(text, '.')], 10, 64)
		require.NoError(t, err)
		days[secs/86400]++
	}
	return days
}

// blockRows reads the number of rows from a Native block's header.
func blockRows(block []byte) int {
	_, k := binary.Uvarint(block) // the number of columns
	rows, _ := binary.Uvarint(block[k:])
	return int(rows)
}

// A batch over more days than one insert may write goes in several inserts
// of at most maxDaysPerInsert days each, every row in one of them; a batch
// within that many days is one insert.
func TestWritesAreSplitByDay(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const days = 150
	ld := plog.NewLogs()
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for d := range days {
		at := pcommon.NewTimestampFromTime(now.Add(-time.Duration(d) * 24 * time.Hour))
		recs.AppendEmpty().SetTimestamp(at)
		r := recs.AppendEmpty()
		r.SetObservedTimestamp(at) // no time of its own: stored at its observed time
		for i := range 2 {
			s := spans.AppendEmpty()
			s.SetTraceID(pcommon.TraceID{1, byte(d)})
			s.SetSpanID(pcommon.SpanID{byte(i + 1)})
			s.SetStartTimestamp(at)
		}
	}
	spans.AppendEmpty().SetStartTimestamp(1) // no ids: invalid, in no insert

	ctx := context.Background()
	c := &captureConn{}
	w := NewWriter(c, "db")
	st, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	assert.Equal(t, WriteStats{Written: 2 * days}, st)
	tst, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)
	assert.Equal(t, WriteStats{Written: 2 * days, Invalid: 1}, tst)

	for table, column := range map[string]string{"db.logs": "timestamp", "db.spans": "timestamp", "db.trace_summaries": "start"} {
		inserts := c.inserts[table]
		assert.Len(t, inserts, 4, table) // 40 + 40 + 40 + 30 days
		all := map[int64]int{}
		for _, block := range inserts {
			bd := blockDays(t, block, column)
			assert.LessOrEqual(t, len(bd), maxDaysPerInsert, table)
			for d, n := range bd {
				assert.Zero(t, all[d], "day %d in one insert", d)
				all[d] = n
			}
		}
		assert.Len(t, all, days, table)
		for d, n := range all {
			if table == "db.trace_summaries" {
				assert.Equal(t, 1, n, "one trace on day %d", d)
			} else {
				assert.Equal(t, 2, n, "two rows on day %d", d)
			}
		}
	}
	// The resource with each range, as its last_seen moves on by days.
	assert.Len(t, c.inserts["db.resources"], 4)

	findings := make([]model.Finding, days)
	for d := range findings {
		findings[d] = model.Finding{TimeUnixNano: uint64(now.Add(-time.Duration(d) * 24 * time.Hour).UnixNano()), Kind: "k"}
	}
	require.NoError(t, w.WriteFindings(ctx, findings))
	require.Len(t, c.inserts["db.trace_facts"], 4)
	n := 0
	for _, block := range c.inserts["db.trace_facts"] {
		n += blockRows(block)
	}
	assert.Equal(t, days, n)

	// Within maxDaysPerInsert days: one insert.
	c = &captureConn{}
	w = NewWriter(c, "db")
	require.NoError(t, w.WriteFindings(ctx, findings[:maxDaysPerInsert]))
	assert.Len(t, c.inserts["db.trace_facts"], 1)
}

// Rows already older than their retention when they arrive are counted as
// expired and not inserted; the rest are.
func TestExpiredRowsAreSkipped(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(now.Add(-d)) }
	c := &captureConn{}
	w := NewWriter(c, "db")
	w.now = func() time.Time { return now }
	w.SetRetention(Retention{Traces: 48 * time.Hour, Logs: 24 * time.Hour})
	ctx := context.Background()

	ld := plog.NewLogs()
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, d := range []time.Duration{0, 23 * time.Hour, 25 * time.Hour, 1000 * time.Hour} {
		recs.AppendEmpty().SetTimestamp(at(d))
	}
	st, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	assert.Equal(t, WriteStats{Written: 2, Expired: 2}, st)
	require.Len(t, c.inserts["db.logs"], 1)
	assert.Len(t, blockDays(t, c.inserts["db.logs"][0], "timestamp"), 2)

	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i, d := range []time.Duration{time.Hour, 47 * time.Hour, 49 * time.Hour} {
		s := spans.AppendEmpty()
		s.SetTraceID(pcommon.TraceID{byte(i + 1)})
		s.SetSpanID(pcommon.SpanID{1})
		s.SetStartTimestamp(at(d))
	}
	st, err = w.WriteTraces(ctx, td)
	require.NoError(t, err)
	assert.Equal(t, WriteStats{Written: 2, Expired: 1}, st)
	require.Len(t, c.inserts["db.trace_summaries"], 1)
	assert.Len(t, decodeNative(t, c.inserts["db.trace_summaries"][0]), 2, "no summary of the expired trace")

	require.NoError(t, w.WriteClockOffsets(ctx, []model.ClockOffset{{TimeUnixNano: uint64(at(time.Hour))}, {TimeUnixNano: uint64(at(49 * time.Hour))}}))
	require.Len(t, c.inserts["db.trace_facts"], 1)
	assert.Equal(t, 1, blockRows(c.inserts["db.trace_facts"][0]))
	require.NoError(t, w.WriteClockOffsets(ctx, []model.ClockOffset{{TimeUnixNano: uint64(at(49 * time.Hour))}}))
	assert.Len(t, c.inserts["db.trace_facts"], 1, "nothing to insert")

	// Without retention everything is written.
	w.SetRetention(Retention{})
	st, err = w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	assert.Equal(t, WriteStats{Written: 4}, st)
}
