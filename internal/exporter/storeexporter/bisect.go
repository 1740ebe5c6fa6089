package storeexporter

import (
	"context"
	"math/bits"
	"slices"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/store"
)

// recordWriter is what the exporter needs of a store.Writer (the tests fake
// it to see which records reach the store).
type recordWriter interface {
	WriteTraces(ctx context.Context, td ptrace.Traces) (store.WriteStats, error)
	WriteLogs(ctx context.Context, ld plog.Logs) (store.WriteStats, error)
}

// batchOps is what writing a batch in parts needs of a signal's pdata.
type batchOps[T any] struct {
	signal string
	write  func(ctx context.Context, w recordWriter, batch T) (store.WriteStats, error)
	// count is the records (spans, log records) of a batch.
	count func(batch T) int
	// perResource is the records of each of a batch's resources, in order.
	perResource func(batch T) []int
	// split copies a batch's first n records, and the rest, apart.
	split func(batch T, n int) (T, T)
	// byTable copies a batch apart by the tables its records go to, in any
	// order; nil when they all go to one (nil for a signal of one table).
	byTable func(batch T) []T
}

var traceOps = batchOps[ptrace.Traces]{
	signal: "traces",
	write: func(ctx context.Context, w recordWriter, td ptrace.Traces) (store.WriteStats, error) {
		return w.WriteTraces(ctx, td)
	},
	count: ptrace.Traces.SpanCount,
	perResource: func(td ptrace.Traces) []int {
		n := make([]int, 0, td.ResourceSpans().Len())
		for _, rs := range td.ResourceSpans().All() {
			k := 0
			for _, ss := range rs.ScopeSpans().All() {
				k += ss.Spans().Len()
			}
			n = append(n, k)
		}
		return n
	},
	split:   splitTraces,
	byTable: tracesByTable,
}

var logOps = batchOps[plog.Logs]{
	signal: "logs",
	write: func(ctx context.Context, w recordWriter, ld plog.Logs) (store.WriteStats, error) {
		return w.WriteLogs(ctx, ld)
	},
	count: plog.Logs.LogRecordCount,
	perResource: func(ld plog.Logs) []int {
		n := make([]int, 0, ld.ResourceLogs().Len())
		for _, rl := range ld.ResourceLogs().All() {
			k := 0
			for _, sl := range rl.ScopeLogs().All() {
				k += sl.LogRecords().Len()
			}
			n = append(n, k)
		}
		return n
	},
	split: splitLogs,
}

// isolatedRefusals is how many refused records a batch is bisected down to
// at full cost (⌈log2 N⌉ splits of at most two writes each): past these
// splits, what the store still refuses is dropped in groups, so that a
// batch refused whole (tables not matching this version) costs at most
// 8·⌈log2 N⌉+1 writes (121 for 20 000 records), not 2·N, within the
// exporter's 5 s timeout.
const isolatedRefusals = 4

// writeBatch writes a batch and, when the store refuses it permanently (a
// retry would meet the same error), writes it again in halves, recursively,
// so that the records dropped are those the store refuses (refuse says
// when a group of them is), not every client's records batched with them.
// Other errors are returned as they are, to be retried.
//
// Writing parts again is safe for the rows the refused write had already
// stored (WriteTraces writes several tables, one after the other): a trace
// batch is first written again table by table (byTable), each part making
// the same insert, with the same deduplication token, as the refused write
// did; then the halves' rows are new (a trace cut by them gets a summary
// row a half, which a search sums, as for any trace written in several
// inserts). Logs go to one table in one insert,
// which stored nothing when it failed. Only a batch over more days than one
// insert may write (the writer then makes several) can have its earlier
// inserts stored again by its halves: spans are read once each (LIMIT 1 BY
// span_id), but trace summaries sum per insert and count those spans twice,
// and logs show twice.
//
// Records dropped are counted in otelcol_tracesift_store_records_rejected
// and explained in a warning logged once. The batch then counts as sent in
// the exporter helper's metrics (otelcol_exporter_sent_*), since the rest
// of it was stored, unless the store refused all of it: then the permanent
// error is returned, so that otelcol_exporter_send_failed_* counts it too
// and the helper logs every such batch, which is what a store refusing
// everything (a schema mismatch) needs.
func writeBatch[T any](ctx context.Context, e *storeExporter, ops *batchOps[T], batch T) error {
	st, err := ops.write(ctx, e.writer, batch)
	if !store.IsPermanent(err) {
		e.account(ctx, ops.signal, st)
		return err
	}
	n := ops.count(batch)
	b := bisection[T]{ops: ops, w: e.writer, splits: isolatedRefusals * bits.Len(uint(max(n-1, 0)))}
	var parts []T
	if ops.byTable != nil {
		parts = ops.byTable(batch)
	}
	var werr error
	if len(parts) > 1 {
		for _, p := range parts {
			if werr = b.write(ctx, p); werr != nil {
				break
			}
		}
	} else {
		werr = b.refuse(ctx, batch, err, true)
	}
	if werr != nil {
		// Retried whole: the parts are cut the same way again, and those
		// stored already are made of the same inserts, which the tables drop.
		// Nothing is counted until then.
		return werr
	}
	e.account(ctx, ops.signal, b.stats)
	e.reject(ctx, ops.signal, b.refused, n, b.err)
	if b.refused == n {
		return consumererror.NewPermanent(err)
	}
	return nil
}

// bisection is the state of writing one refused batch in parts.
type bisection[T any] struct {
	ops *batchOps[T]
	w   recordWriter
	// splits is how many more refused parts may be split (isolatedRefusals).
	splits  int
	stats   store.WriteStats // of the parts stored
	refused int              // records dropped
	err     error            // the first refusal, for the warning
}

// try writes a part: refused is the store's permanent error, err any other.
func (b *bisection[T]) try(ctx context.Context, part T) (refused, err error) {
	st, err := b.ops.write(ctx, b.w, part)
	switch {
	case err == nil:
		b.stats.Written += st.Written
		b.stats.Invalid += st.Invalid
		b.stats.Expired += st.Expired
		return nil, nil
	case store.IsPermanent(err):
		return err, nil
	}
	return nil, err
}

// write writes a part and, if the store refuses it, what it can of it; it
// returns only the errors worth retrying.
func (b *bisection[T]) write(ctx context.Context, part T) error {
	refused, err := b.try(ctx, part)
	if refused == nil {
		return err
	}
	return b.refuse(ctx, part, refused, true)
}

// refuse stores what it can of a part that the store refused with err
// (tried), or that holds what its parent was refused for, by halves. It
// drops a part, once it was written and refused, when it is one record,
// when it is one resource both of whose halves were refused (a client whose
// records the store refuses in more than one place, often all of them:
// isolating each would cost two writes a record), or when the batch's
// splits are spent.
func (b *bisection[T]) refuse(ctx context.Context, part T, err error, tried bool) error {
	n := b.ops.count(part)
	if n <= 1 || b.splits == 0 {
		if !tried {
			return b.write(ctx, part)
		}
		b.drop(n, err)
		return nil
	}
	b.splits--
	perResource := b.ops.perResource(part)
	first, second := b.ops.split(part, splitPoint(perResource, n))
	errFirst, werr := b.try(ctx, first)
	if werr != nil {
		return werr
	}
	if errFirst == nil {
		// What the part was refused for is in the second half: split it
		// without writing it whole.
		return b.refuse(ctx, second, err, false)
	}
	errSecond, werr := b.try(ctx, second)
	switch {
	case werr != nil:
		return werr
	case errSecond == nil:
		return b.refuse(ctx, first, errFirst, true)
	case resources(perResource) == 1:
		b.drop(n, errFirst)
		return nil
	}
	if werr := b.refuse(ctx, first, errFirst, true); werr != nil {
		return werr
	}
	return b.refuse(ctx, second, errSecond, true)
}

// drop counts n records dropped for err.
func (b *bisection[T]) drop(n int, err error) {
	b.refused += n
	if b.err == nil {
		b.err = err
	}
}

// splitPoint is where to halve a part of n records with perResource records
// in each resource: at the resource boundary nearest its middle, if within
// its middle half, so that halves part clients rather than cut them; else
// at its middle.
func splitPoint(perResource []int, n int) int {
	at, best := n/2, n
	c := 0
	for _, k := range perResource[:max(len(perResource)-1, 0)] {
		c += k
		if d := abs(2*c - n); 4*c >= n && 4*c <= 3*n && d < best {
			at, best = c, d
		}
	}
	return at
}

// resources counts the resources that have records.
func resources(perResource []int) int {
	r := 0
	for _, k := range perResource {
		if k > 0 {
			r++
		}
	}
	return r
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// reject counts the records of a batch of n that the store refused and
// warns, once, of why.
func (e *storeExporter) reject(ctx context.Context, signal string, refused, n int, err error) {
	if refused == 0 {
		return
	}
	e.tel.TracesiftStoreRecordsRejected.Add(ctx, int64(refused), e.signal)
	if e.warnedRejected.CompareAndSwap(false, true) {
		e.logger.Warn("the store refused records: they hold a value it cannot store (see the error). Only they are dropped, "+
			"the rest of their batch was stored in parts. Fix the client that sends them; if every batch is refused, "+
			"the store's tables do not match this version of tracesift. Counted in otelcol_tracesift_store_records_rejected (logged once)",
			zap.String("signal", signal), zap.Int("count", refused), zap.Int("batch", n), zap.Error(err))
	}
}

// splitTraces copies td's first n spans, and the rest, apart, each under a
// copy of its resource and scope.
func splitTraces(td ptrace.Traces, n int) (ptrace.Traces, ptrace.Traces) {
	i := 0
	first := filterTraces(td, func(ptrace.ResourceSpans, ptrace.Span) bool { i++; return i <= n })
	i = 0
	rest := filterTraces(td, func(ptrace.ResourceSpans, ptrace.Span) bool { i++; return i > n })
	return first, rest
}

// tracesByTable copies td apart into its spans and each kind of analysis
// row (store.IsAnalysis: findings, clock offsets, ...), which the writer
// inserts into tables of their own; nil if td holds one kind. Each part
// keeps its records' order, so its write makes the same inserts as td's.
func tracesByTable(td ptrace.Traces) []ptrace.Traces {
	var kinds []string // of analysis rows, by span name
	spans := false
	for _, rs := range td.ResourceSpans().All() {
		analysis := store.IsAnalysis(rs)
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				switch {
				case !analysis:
					spans = true
				case !slices.Contains(kinds, s.Name()):
					kinds = append(kinds, s.Name())
				}
			}
		}
	}
	if len(kinds) == 0 || !spans && len(kinds) == 1 {
		return nil
	}
	var parts []ptrace.Traces
	if spans {
		parts = append(parts, filterTraces(td, func(rs ptrace.ResourceSpans, _ ptrace.Span) bool { return !store.IsAnalysis(rs) }))
	}
	for _, k := range kinds {
		parts = append(parts, filterTraces(td, func(rs ptrace.ResourceSpans, s ptrace.Span) bool {
			return store.IsAnalysis(rs) && s.Name() == k
		}))
	}
	return parts
}

// filterTraces copies the spans of td that keep takes, in order, each under
// a copy of its resource and scope; it leaves out the resources and scopes
// left without spans.
func filterTraces(td ptrace.Traces, keep func(ptrace.ResourceSpans, ptrace.Span) bool) ptrace.Traces {
	out := ptrace.NewTraces()
	for _, rs := range td.ResourceSpans().All() {
		var to ptrace.ResourceSpans
		made := false
		for _, ss := range rs.ScopeSpans().All() {
			var sto ptrace.ScopeSpans
			smade := false
			for _, s := range ss.Spans().All() {
				if !keep(rs, s) {
					continue
				}
				if !made {
					to, made = out.ResourceSpans().AppendEmpty(), true
					rs.Resource().CopyTo(to.Resource())
					to.SetSchemaUrl(rs.SchemaUrl())
				}
				if !smade {
					sto, smade = to.ScopeSpans().AppendEmpty(), true
					ss.Scope().CopyTo(sto.Scope())
					sto.SetSchemaUrl(ss.SchemaUrl())
				}
				s.CopyTo(sto.Spans().AppendEmpty())
			}
		}
	}
	return out
}

// splitLogs copies ld's first n log records, and the rest, apart, each
// under a copy of its resource and scope.
func splitLogs(ld plog.Logs, n int) (plog.Logs, plog.Logs) {
	i := 0
	first := filterLogs(ld, func() bool { i++; return i <= n })
	i = 0
	rest := filterLogs(ld, func() bool { i++; return i > n })
	return first, rest
}

// filterLogs is filterTraces for log records, keep called once a record in
// order.
func filterLogs(ld plog.Logs, keep func() bool) plog.Logs {
	out := plog.NewLogs()
	for _, rl := range ld.ResourceLogs().All() {
		var to plog.ResourceLogs
		made := false
		for _, sl := range rl.ScopeLogs().All() {
			var sto plog.ScopeLogs
			smade := false
			for _, lr := range sl.LogRecords().All() {
				if !keep() {
					continue
				}
				if !made {
					to, made = out.ResourceLogs().AppendEmpty(), true
					rl.Resource().CopyTo(to.Resource())
					to.SetSchemaUrl(rl.SchemaUrl())
				}
				if !smade {
					sto, smade = to.ScopeLogs().AppendEmpty(), true
					sl.Scope().CopyTo(sto.Scope())
					sto.SetSchemaUrl(sl.SchemaUrl())
				}
				lr.CopyTo(sto.LogRecords().AppendEmpty())
			}
		}
	}
	return out
}
