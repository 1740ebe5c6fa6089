package tailsampler

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/clockskew"
	"github.com/tracesift/tracesift/internal/store"
)

// AnalyzeConfig configures the analyzers that run on every kept trace, where
// it is whole: internal/analyze (slowest hop, critical path, retry fan-out,
// timeout and error origins, broken propagation, fan-out) and the clock-skew
// estimator of internal/clockskew, which keeps a per-host-pair estimate over
// many traces.
type AnalyzeConfig struct {
	// Enabled runs the analyzers. Default true.
	Enabled bool `mapstructure:"enabled"`
	// Store is the tracesift_store extension the findings are written to
	// (the findings table, returned with the trace and aggregated by
	// GET /api/v1/findings). Empty: findings are only counted in
	// tracesift_sampler_findings. Default empty; the shipped configurations
	// set tracesift_store.
	Store component.ID `mapstructure:"store"`
	// FlushInterval is how long findings and clock offsets wait to be
	// inserted together (sooner once 10 000 are waiting): every insert is a
	// part ClickHouse merges later. Default 5s, as the exporter's batches
	// of kept spans, so a trace's findings show with it.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// FanoutThreshold is how many downstream calls one entry span must make
	// for a fanout finding. Default 50.
	FanoutThreshold int `mapstructure:"fanout_threshold"`
	// MinRepeatedCalls is how many calls a chain of repeated calls that are
	// not retries (all succeed) must reach for a retry_fanout finding;
	// retries are reported from 2 attempts. Default 5.
	MinRepeatedCalls int `mapstructure:"min_repeated_calls"`
	// The clock-skew estimator: skew_threshold (default 100ms, the offset
	// that raises a clock_skew finding), skew_window (5m), skew_min_samples
	// (5 traces before an estimate counts), skew_max_pairs (10000 host
	// pairs), skew_max_samples (256 per pair).
	Skew clockskew.Config `mapstructure:",squash"`
}

func defaultAnalyzeConfig() AnalyzeConfig {
	opts := analyze.DefaultOptions()
	return AnalyzeConfig{
		Enabled:          true,
		FlushInterval:    5 * time.Second,
		FanoutThreshold:  opts.FanoutThreshold,
		MinRepeatedCalls: opts.MinRepeatedCalls,
		Skew:             clockskew.DefaultConfig(),
	}
}

// Validate reports every invalid field, naming its YAML key.
func (c *AnalyzeConfig) Validate() error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if c.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("`analyze::flush_interval` must be positive, got %s", c.FlushInterval))
	}
	if c.FanoutThreshold < 1 {
		errs = append(errs, fmt.Errorf("`analyze::fanout_threshold` must be at least 1, got %d", c.FanoutThreshold))
	}
	if c.MinRepeatedCalls < 2 {
		errs = append(errs, fmt.Errorf("`analyze::min_repeated_calls` must be at least 2, got %d", c.MinRepeatedCalls))
	}
	if err := c.Skew.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("`analyze`: %w", err))
	}
	return errors.Join(errs...)
}

// FindingsWriter stores findings and the clock offsets of kept traces;
// *store.Writer is one.
type FindingsWriter interface {
	WriteFindings(ctx context.Context, rows []store.FindingRow) error
	WriteClockOffsets(ctx context.Context, rows []store.ClockRow) error
}

// analysisBatch is what one decision pass's kept traces gave to store.
type analysisBatch struct {
	findings []store.FindingRow
	clocks   []store.ClockRow
}

// analyzer runs the analyzers for every shard and hands the findings to a
// writer goroutine, so that a slow store never holds up a decision.
type analyzer struct {
	opts   analyze.Options
	skew   *clockskew.Estimator
	logger *zap.Logger
	tel    *telemetry

	// skewed holds the host pairs (pairKey of hostHash) whose estimate
	// reaches the threshold, for keep_clock_skew; rebuilt at most once a
	// second from the estimator.
	skewed    atomic.Pointer[map[uint64]struct{}]
	skewedAt  atomic.Int64
	threshold time.Duration

	writer  FindingsWriter // nil: findings are only counted
	flush   time.Duration  // analyze::flush_interval
	queue   chan analysisBatch
	done    chan struct{}
	dropped sync.Once // the first dropped batch is logged
}

// findingsQueue bounds the batches of findings waiting for the store; a
// batch is one decision pass's kept traces.
const findingsQueue = 256

func newAnalyzer(cfg AnalyzeConfig, logger *zap.Logger, tel *telemetry) (*analyzer, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	est, err := clockskew.NewEstimator(cfg.Skew)
	if err != nil {
		return nil, err
	}
	opts := analyze.DefaultOptions()
	opts.FanoutThreshold, opts.MinRepeatedCalls = cfg.FanoutThreshold, cfg.MinRepeatedCalls
	return &analyzer{opts: opts, skew: est, logger: logger, tel: tel, threshold: cfg.Skew.Threshold,
		flush: cfg.FlushInterval}, nil
}

// start looks up the store and starts the writer goroutine.
func (a *analyzer) start(host component.Host, id component.ID) error {
	if id != (component.ID{}) {
		ext, ok := host.GetExtensions()[id]
		if !ok {
			return fmt.Errorf("`analyze::store`: extension %q is not configured: add it under `extensions` and `service::extensions`", id)
		}
		p, ok := ext.(interface{ Writer() *store.Writer })
		if !ok {
			return fmt.Errorf("`analyze::store`: extension %q is not a tracesift_store extension", id)
		}
		a.writer = p.Writer()
	}
	if a.writer == nil {
		return nil
	}
	a.queue = make(chan analysisBatch, findingsQueue)
	a.done = make(chan struct{})
	go a.write()
	return nil
}

// stop writes what is queued and stops the writer goroutine.
func (a *analyzer) stop() {
	if a.queue == nil {
		return
	}
	close(a.queue)
	<-a.done
}

// maxPendingFindings bounds the findings and clock rows the writer holds
// while the store fails; beyond it the oldest batch is dropped and counted.
const maxPendingFindings = 200_000

// Backoff between failed inserts of findings: doubling from the first to
// the cap, each wait drawn within ±50 % so that restarted writers spread out.
// (Variables for the tests.)
var (
	findingsRetryFirst = time.Second
	findingsRetryCap   = 30 * time.Second
)

// retryDelay is the wait after the n-th failure in a row (n ≥ 1).
func retryDelay(n int, rnd *rand.Rand) time.Duration {
	d := findingsRetryCap
	if n < 16 {
		d = min(findingsRetryFirst<<(n-1), findingsRetryCap)
	}
	return d/2 + time.Duration(rnd.Int64N(int64(d)))
}

// write inserts queued findings, once per flush interval at most, or sooner
// when 10000 are waiting. A failed insert is retried after a backoff with
// exactly the same rows, so that its deduplication token is the same and an
// insert that had succeeded after all is not stored twice; batches queued
// meanwhile (up to maxPendingFindings) are inserted after it.
func (a *analyzer) write() {
	defer close(a.done)
	var (
		pending  []analysisBatch
		rows     int            // in pending
		inflight *analysisBatch // rows being inserted, kept as they are until they are stored
		failures int
		retryAt  time.Time
		rnd      = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x7ace))
	)
	tick := time.NewTicker(a.flush)
	defer tick.Stop()
	lose := func(b *analysisBatch, err error) {
		a.tel.findingsDropped.Add(context.Background(), int64(len(b.findings)))
		a.logger.Error("Writing findings and clock offsets failed; they are lost (tracesift_sampler_findings_dropped)",
			zap.Int("findings", len(b.findings)), zap.Int("clock_offsets", len(b.clocks)), zap.Error(err))
	}
	flush := func(now time.Time, final bool) {
		if !final && now.Before(retryAt) {
			return
		}
		for {
			if inflight == nil {
				if rows == 0 {
					return
				}
				var next analysisBatch
				for _, b := range pending {
					next.findings = append(next.findings, b.findings...)
					next.clocks = append(next.clocks, b.clocks...)
				}
				pending, rows, inflight = pending[:0], 0, &next
			}
			err := a.insert(inflight)
			switch {
			case err == nil:
				inflight, failures = nil, 0
				continue
			case final || store.IsPermanent(err):
				lose(inflight, err)
				inflight, failures = nil, 0
				if final {
					for i := range pending {
						lose(&pending[i], err)
					}
					pending, rows = nil, 0
				}
				continue
			}
			failures++
			delay := retryDelay(failures, rnd)
			retryAt = now.Add(delay)
			if failures == 1 {
				a.logger.Warn("Writing findings failed; retrying with backoff while they queue up",
					zap.Int("findings", len(inflight.findings)), zap.Duration("retry_in", delay), zap.Error(err))
			}
			return
		}
	}
	for {
		select {
		case b, ok := <-a.queue:
			if !ok {
				flush(time.Now(), true)
				return
			}
			pending = append(pending, b)
			rows += len(b.findings) + len(b.clocks)
			for rows > maxPendingFindings && len(pending) > 1 {
				old := pending[0]
				pending = pending[1:]
				rows -= len(old.findings) + len(old.clocks)
				a.tel.findingsDropped.Add(context.Background(), int64(len(old.findings)))
				a.dropped.Do(func() {
					a.logger.Warn("The store is not keeping up with findings; dropping the oldest (counted in "+
						"tracesift_sampler_findings_dropped, logged once)", zap.Int("findings", len(old.findings)))
				})
			}
			if rows >= 10000 {
				flush(time.Now(), false)
			}
		case now := <-tick.C:
			flush(now, false)
		}
	}
}

// insert writes b's findings, then its clock offsets, forgetting each part
// once it is stored so that a retry sends only what is missing.
func (a *analyzer) insert(b *analysisBatch) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(b.findings) > 0 {
		if err := a.writer.WriteFindings(ctx, b.findings); err != nil {
			return err
		}
		b.findings = nil
	}
	if len(b.clocks) > 0 {
		if err := a.writer.WriteClockOffsets(ctx, b.clocks); err != nil {
			return err
		}
		b.clocks = nil
	}
	return nil
}

// analyzeKept runs the analyzers on the whole traces among td (the ids in
// whole; other spans of td are late spans of traces decided earlier) and
// queues their findings.
func (a *analyzer) analyzeKept(td ptrace.Traces, whole map[pcommon.TraceID]bool, now time.Time) {
	traces := tracesOf(td, whole)
	var rows []store.FindingRow
	var clocks []store.ClockRow
	for _, t := range traces {
		obs := clockskew.PairOffsets(&t.Trace)
		a.skew.Observe(now, obs)
		a.refreshSkewed(now)
		findings := a.skew.Findings(&t.Trace, obs)
		if len(obs) > 0 {
			adj := a.skew.Adjust(&t.Trace)
			// Offsets the query API corrects this trace's times by.
			for _, h := range adj.Hosts {
				if h.Offset != 0 {
					clocks = append(clocks, store.ClockRow{TraceID: t.TraceID, TimeUnixNano: t.start, Host: h.Host,
						OffsetNanos: int64(h.Offset), Source: h.Source.String()})
				}
			}
			// The other analyzers judge timing across hosts on the
			// corrected clocks (this copy only; stored times stay raw).
			for i := range t.Spans {
				t.Spans[i].StartUnixNano, t.Spans[i].EndUnixNano = adj.Spans[i].Start, adj.Spans[i].End
			}
		}
		findings = append(analyze.Analyze(&t.Trace, a.opts), findings...)
		for _, f := range findings {
			a.tel.findingsCount.Add(context.Background(), 1, a.tel.findingKind(f.Kind))
			rows = append(rows, store.FindingRow{
				TraceID: t.TraceID, TimeUnixNano: t.start, Kind: f.Kind, Service: f.Service,
				Subject: subjectOf(&t.Trace, &f), SpanIDs: f.SpanIDs, Value: f.Value, Summary: f.Summary,
			})
		}
	}
	if len(rows)+len(clocks) == 0 || a.queue == nil {
		return
	}
	select {
	case a.queue <- analysisBatch{findings: rows, clocks: clocks}:
	default:
		a.tel.findingsDropped.Add(context.Background(), int64(len(rows)))
		a.dropped.Do(func() {
			a.logger.Warn("The store is not keeping up with findings; dropping them (counted in "+
				"tracesift_sampler_findings_dropped, logged once)", zap.Int("findings", len(rows)))
		})
	}
}

// refreshSkewed rebuilds the set of skewed host pairs, once a second at most.
func (a *analyzer) refreshSkewed(now time.Time) {
	last := a.skewedAt.Load()
	if now.UnixNano()-last < int64(time.Second) || !a.skewedAt.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	set := map[uint64]struct{}{}
	for _, pe := range a.skew.Snapshot() {
		if pe.OK && (pe.Offset >= a.threshold || pe.Offset <= -a.threshold) {
			set[pairKey(hostHash([]byte(pe.A)), hostHash([]byte(pe.B)))] = struct{}{}
		}
	}
	a.skewed.Store(&set)
}

// crossesSkewedPair reports whether two of the hosts are a skewed pair.
func (a *analyzer) crossesSkewedPair(h *hostSet) bool {
	set := a.skewed.Load()
	if set == nil || len(*set) == 0 {
		return false
	}
	for i := range h {
		for j := i + 1; j < len(h) && h[i] != 0; j++ {
			if h[j] == 0 {
				break
			}
			if _, ok := (*set)[pairKey(h[i], h[j])]; ok {
				return true
			}
		}
	}
	return false
}

// analyzedTrace is a trace in the analyzers' model, with its start time.
type analyzedTrace struct {
	analyze.Trace
	start uint64
}

// tracesOf converts the spans of td whose trace id is in whole into the
// analyzers' model, one trace per id.
func tracesOf(td ptrace.Traces, whole map[pcommon.TraceID]bool) []*analyzedTrace {
	byID := make(map[pcommon.TraceID]*analyzedTrace, len(whole))
	var order []*analyzedTrace
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		attrs := rs.Resource().Attributes()
		service, host := store.ServiceName(attrs), store.HostName(attrs)
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				id := sp.TraceID()
				if !whole[id] {
					continue
				}
				t := byID[id]
				if t == nil {
					t = &analyzedTrace{Trace: analyze.Trace{TraceID: hex.EncodeToString(id[:])}, start: math.MaxUint64}
					byID[id] = t
					order = append(order, t)
				}
				if st := uint64(sp.StartTimestamp()); st != 0 && st < t.start {
					t.start = st
				}
				t.Spans = append(t.Spans, spanOf(sp, service, host))
			}
		}
	}
	for _, t := range order {
		if t.start == math.MaxUint64 {
			t.start = 0
		}
	}
	return order
}

func spanOf(sp ptrace.Span, service, host string) analyze.Span {
	s := analyze.Span{
		SpanID:        spanIDHex(sp.SpanID()),
		ParentSpanID:  spanIDHex(sp.ParentSpanID()),
		Name:          sp.Name(),
		Kind:          analyze.Kind(sp.Kind()),
		Service:       service,
		Host:          host,
		StartUnixNano: uint64(sp.StartTimestamp()),
		EndUnixNano:   uint64(sp.EndTimestamp()),
		StatusCode:    analyze.StatusCode(sp.Status().Code()),
		StatusMessage: sp.Status().Message(),
		Attributes:    stringMap(sp.Attributes()),
	}
	for i := range sp.Events().Len() {
		ev := sp.Events().At(i)
		s.Events = append(s.Events, analyze.Event{Name: ev.Name(), TimeUnixNano: uint64(ev.Timestamp()),
			Attributes: stringMap(ev.Attributes())})
	}
	for i := range sp.Links().Len() {
		l := sp.Links().At(i)
		tid := l.TraceID()
		s.Links = append(s.Links, analyze.Link{TraceID: hex.EncodeToString(tid[:]), SpanID: spanIDHex(l.SpanID())})
	}
	return s
}

func spanIDHex(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

func stringMap(m pcommon.Map) map[string]string {
	if m.Len() == 0 {
		return nil
	}
	out := make(map[string]string, m.Len())
	for k, v := range m.All() {
		out[k] = v.AsString()
	}
	return out
}

// subjectOf is what a finding is about, for aggregation across traces: the
// operation of its first span, the call edge of a retry chain, the host pair
// of a clock skew.
func subjectOf(t *analyze.Trace, f *analyze.Finding) string {
	if len(f.SpanIDs) == 0 {
		return ""
	}
	var span, parent *analyze.Span
	for i := range t.Spans {
		if t.Spans[i].SpanID == f.SpanIDs[0] {
			span = &t.Spans[i]
			break
		}
	}
	if span == nil {
		return ""
	}
	for i := range t.Spans {
		if span.ParentSpanID != "" && t.Spans[i].SpanID == span.ParentSpanID {
			parent = &t.Spans[i]
			break
		}
	}
	switch f.Kind {
	case analyze.KindClockSkew:
		if parent != nil {
			return parent.Host + " → " + span.Host
		}
		return span.Host
	case analyze.KindRetryFanout:
		callee := span.Attributes["peer.service"]
		if callee == "" {
			callee = span.Attributes["server.address"]
		}
		if callee != "" {
			return span.Service + " → " + callee + " " + span.Name
		}
		return span.Service + " → " + span.Name
	}
	return span.Service + " " + span.Name
}
