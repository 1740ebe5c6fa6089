package tailsampler

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Receipt follows a request handed over with ConsumeRawTracesWithReceipt
// until every span of it is decided — forwarded if kept, or dropped — and
// the decisions are recorded (DecisionLog); then it calls done, once. A Kafka
// consumer commits a message's offset by it. A receipt whose spans were
// discarded (Discard), whose kept spans could not be forwarded or whose
// decisions could not be recorded is never done: its message is read again.
type Receipt struct {
	pending atomic.Int32 // chunks not settled yet
	done    func()
	// offset orders the receipts of a trace's source (a Kafka partition's
	// message offset): see Decision.Through.
	offset int64
}

// NewReceipt returns a receipt for the request at offset in its source; it
// calls done when it is settled; done runs on a shard's goroutine and must
// not block.
func NewReceipt(offset int64, done func()) *Receipt { return &Receipt{done: done, offset: offset} }

func (r *Receipt) settle() {
	if r.pending.Add(-1) == 0 {
		r.done()
	}
}

// Decision is what was decided of one trace.
type Decision struct {
	// TraceID is the trace's key: its id XOR its tenant's key (tenant.Key),
	// the id itself for the default tenant.
	TraceID pcommon.TraceID
	Kept    bool
	// Through is the highest offset of the requests whose spans of the
	// trace were forwarded (kept) or dropped with this decision: a sampler
	// reading the source again after a crash skips the trace's spans up to
	// it, since they are stored already, and follows the decision for the
	// rest.
	Through int64
}

// DecisionLog records the decisions of traces handed over with receipts,
// before the receipts are done: a sampler that takes over their source (a
// Kafka partition after a crash or a rebalance) is told them (Remember), so
// that late spans follow their trace's decision rather than being decided
// again as fragments.
type DecisionLog interface {
	Record(ctx context.Context, decisions []Decision) error
}

// ReceiptSampler is the sampler of a consumer that must know when what it
// handed over is safe to forget (a Kafka consumer: when to commit).
type ReceiptSampler interface {
	RawSampler
	// ConsumeRawTracesWithReceipt is ConsumeRawTraces, with r settled once
	// every valid span of req is decided and forwarded or dropped (at once
	// when req has none). On error, r is never done.
	ConsumeRawTracesWithReceipt(ctx context.Context, req []byte, r *Receipt) error
	// Discard forgets every buffered trace handed over with a receipt,
	// undecided, its receipts never done: their source is read again, by
	// this sampler or another (a Kafka rebalance).
	Discard(ctx context.Context) error
	// Remember makes late spans of the given traces follow these decisions
	// (decisions recorded by the sampler that had the traces before).
	Remember(ctx context.Context, decisions []Decision) error
}
