package store

import (
	"math"
	"slices"
)

// The engine refuses an insert whose rows fall into more partitions than
// max_partitions_per_insert_block (100 by default), and the spans, logs,
// trace_facts and trace_summaries tables are partitioned by day. A
// backfill (old files read by file_log, a client with a bad clock) easily
// sends a batch that spans more days; refused, it would be retried forever
// and hold every batch behind it. So a batch whose rows span more than
// maxDaysPerInsert days is inserted in several, each of at most that many
// days.

// maxDaysPerInsert is the most UTC days one insert writes into. A table's
// day is toDate in the server's time zone, so one UTC day may be two of its
// partitions: 40 stays under the default limit of 100.
const maxDaysPerInsert = 40

const nanosPerDay = 24 * 3600 * 1_000_000_000

// dayRange is a range of days since the Unix epoch, both ends included.
type dayRange struct{ first, last uint64 }

// allDays takes every row.
var allDays = dayRange{0, math.MaxUint64}

// has reports whether the time ns (Unix nanoseconds) falls in r.
func (r dayRange) has(ns uint64) bool {
	d := ns / nanosPerDay
	return d >= r.first && d <= r.last
}

// daySpan tracks the times of a batch's rows, the first and the last.
type daySpan struct {
	first, last uint64
	times       []uint64
}

func (s *daySpan) add(ns uint64) {
	if len(s.times) == 0 {
		s.first, s.last = ns, ns
	}
	s.first, s.last = min(s.first, ns), max(s.last, ns)
	s.times = append(s.times, ns)
}

func (s *daySpan) reset() { s.times = s.times[:0] }

// fits reports whether the rows can go in one insert.
func (s *daySpan) fits() bool {
	return len(s.times) == 0 || s.last/nanosPerDay-s.first/nanosPerDay < maxDaysPerInsert
}

// groups are the ranges of days to insert the rows in: all of them at once
// when they fit in one insert.
func (s *daySpan) groups() []dayRange {
	if s.fits() {
		return []dayRange{allDays}
	}
	return dayGroups(s.times)
}

// dayGroups splits the days of times (Unix nanoseconds, in any order) into
// ranges of at most maxDaysPerInsert days that have rows, in order.
func dayGroups(times []uint64) []dayRange {
	days := make([]uint64, len(times))
	for i, ns := range times {
		days[i] = ns / nanosPerDay
	}
	slices.Sort(days)
	days = slices.Compact(days)
	var groups []dayRange
	for len(days) > 0 {
		n := min(len(days), maxDaysPerInsert)
		groups = append(groups, dayRange{days[0], days[n-1]})
		days = days[n:]
	}
	return groups
}
