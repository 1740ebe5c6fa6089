package tailsampler

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/clockskew"
	"github.com/tracesift/tracesift/internal/model"
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
	// Store names the tracesift_store extension that the pipeline's
	// tracesift exporter writes to. When set, the findings and clock offsets
	// of each kept trace go down the pipeline with its spans (in a resource
	// of their own, see store.AppendAnalysis), and the exporter stores them
	// beside the spans; the pipeline's exporter must then be a tracesift
	// exporter. Empty: findings are only counted in
	// otelcol_tracesift_sampler_findings. Default empty; the shipped configurations
	// set tracesift_store.
	Store component.ID `mapstructure:"store"`
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

// analyzer runs the analyzers for every shard.
type analyzer struct {
	opts    analyze.Options
	skewCfg clockskew.Config
	skew    *clockskew.Estimator // the default tenant's
	logger  *zap.Logger
	tel     *telemetry
	tenants *tenantTable

	// skews are the other tenants' estimators, by tenant index: two
	// tenants' hosts are apart even when named alike.
	skewsMu sync.RWMutex
	skews   map[uint32]*clockskew.Estimator

	// skewed holds the host pairs whose estimate reaches the threshold, for
	// keep_clock_skew; rebuilt at most once a second from the estimators.
	skewed    atomic.Pointer[skewedPairs]
	skewedAt  atomic.Int64
	threshold time.Duration
	// pairsAt is when the skewed pairs' estimates were last sent to the
	// store (pairsDue).
	pairsAt atomic.Int64

	// export sends findings and clock offsets down the pipeline with the
	// kept spans (analyze::store is set); otherwise they are only counted.
	export bool
}

// skewedPairs are the skewed host pairs (pairKey of hostHash) by tenant;
// the default tenant's apart, found without a lookup.
type skewedPairs struct {
	def    map[uint64]struct{}
	others map[uint32]map[uint64]struct{}
}

func newAnalyzer(cfg AnalyzeConfig, logger *zap.Logger, tel *telemetry, tenants *tenantTable) (*analyzer, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	est, err := clockskew.NewEstimator(cfg.Skew)
	if err != nil {
		return nil, err
	}
	opts := analyze.DefaultOptions()
	opts.FanoutThreshold, opts.MinRepeatedCalls = cfg.FanoutThreshold, cfg.MinRepeatedCalls
	return &analyzer{opts: opts, skewCfg: cfg.Skew, skew: est, logger: logger, tel: tel, tenants: tenants,
		skews: map[uint32]*clockskew.Estimator{}, threshold: cfg.Skew.Threshold}, nil
}

// estimator is the clock-skew estimator of tenant tn.
func (a *analyzer) estimator(tn uint32) *clockskew.Estimator {
	if tn == 0 {
		return a.skew
	}
	a.skewsMu.RLock()
	e := a.skews[tn]
	a.skewsMu.RUnlock()
	if e != nil {
		return e
	}
	a.skewsMu.Lock()
	defer a.skewsMu.Unlock()
	if e = a.skews[tn]; e == nil {
		e, _ = clockskew.NewEstimator(a.skewCfg) // validated by newAnalyzer
		a.skews[tn] = e
	}
	return e
}

// tenantEstimator is an estimator with its tenant's index.
type tenantEstimator struct {
	tenant uint32
	est    *clockskew.Estimator
}

// estimators returns every tenant's estimator, each advanced to now: a
// tenant that stopped sending must not report estimates out of the window.
func (a *analyzer) estimators(now time.Time) []tenantEstimator {
	out := []tenantEstimator{{0, a.skew}}
	a.skewsMu.RLock()
	for tn, e := range a.skews {
		out = append(out, tenantEstimator{tn, e})
	}
	a.skewsMu.RUnlock()
	slices.SortFunc(out[1:], func(x, y tenantEstimator) int { return cmp.Compare(x.tenant, y.tenant) })
	for _, te := range out[1:] {
		te.est.Observe(now, nil)
	}
	return out
}

// checkStore checks that the extension analyze::store names is a
// tracesift_store.
func checkStore(host component.Host, id component.ID) error {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return fmt.Errorf("`analyze::store`: extension %q is not configured: add it under `extensions` and `service::extensions`", id)
	}
	if _, ok := ext.(interface{ Writer() *store.Writer }); !ok {
		return fmt.Errorf("`analyze::store`: extension %q is not a tracesift_store extension", id)
	}
	return nil
}

// analyzeKept runs the analyzers on the whole traces among td (the keys in
// whole; other spans of td are late spans of traces decided earlier; runs
// say whose td's resources are) and, when they are exported, appends their
// findings and clock offsets to td. It returns the number of findings.
func (a *analyzer) analyzeKept(td ptrace.Traces, runs []tenantRun, whole map[pcommon.TraceID]bool, now time.Time) int {
	traces := tracesOf(td, runs, a.tenants, whole)
	var rows []model.Finding
	var clocks []model.ClockOffset
	for _, t := range traces {
		est := a.estimator(t.tenant)
		row := a.tenants.get(t.tenant).row
		obs := clockskew.PairOffsets(&t.Trace)
		est.Observe(now, obs)
		a.refreshSkewed(now)
		findings := est.Findings(&t.Trace, obs)
		if len(obs) > 0 {
			adj := est.Adjust(&t.Trace)
			// Offsets the query API corrects this trace's times by.
			for _, h := range adj.Hosts {
				if h.Offset != 0 {
					clocks = append(clocks, model.ClockOffset{TraceID: t.TraceID, TimeUnixNano: t.start, Host: h.Host,
						OffsetNanos: int64(h.Offset), Source: h.Source.String(), Tenant: row})
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
			a.tel.TracesiftSamplerFindings.Add(context.Background(), 1, a.tel.findingKind(f.Kind))
			f.TraceID, f.TimeUnixNano, f.Tenant = t.TraceID, t.start, row
			rows = append(rows, f)
		}
	}
	if a.export {
		appendAnalysis(td, store.Analysis{Findings: rows, Clocks: clocks, Pairs: a.pairsDue(now)})
	}
	return len(rows)
}

// appendAnalysis is store.AppendAnalysis, a variable for the tests to see
// the rows as the sampler made them.
var appendAnalysis = store.AppendAnalysis

// pairsEvery is how often the estimates of skewed host pairs go to the store.
const pairsEvery = time.Minute

// pairsDue returns the estimates of the host pairs whose skew reaches the
// threshold, once every pairsEvery (to the first caller after it), for the
// store: a trace read later then carries the clock_skew finding although it
// was decided before the estimate had its samples.
func (a *analyzer) pairsDue(now time.Time) []model.ClockPair {
	last := a.pairsAt.Load()
	if now.UnixNano()-last < int64(pairsEvery) || !a.pairsAt.CompareAndSwap(last, now.UnixNano()) {
		return nil
	}
	var out []model.ClockPair
	for _, te := range a.estimators(now) {
		row := a.tenants.get(te.tenant).row
		for _, pe := range te.est.Snapshot() {
			if pe.OK && (pe.Offset >= a.threshold || pe.Offset <= -a.threshold) {
				out = append(out, model.ClockPair{TimeUnixNano: uint64(now.UnixNano()), A: pe.A, B: pe.B,
					OffsetNanos: int64(pe.Offset), Samples: pe.Samples, Tenant: row})
			}
		}
	}
	return out
}

// refreshSkewed rebuilds the set of skewed host pairs, once a second at most.
func (a *analyzer) refreshSkewed(now time.Time) {
	last := a.skewedAt.Load()
	if now.UnixNano()-last < int64(time.Second) || !a.skewedAt.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	sp := &skewedPairs{def: map[uint64]struct{}{}, others: map[uint32]map[uint64]struct{}{}}
	for _, te := range a.estimators(now) {
		set := sp.def
		if te.tenant != 0 {
			set = map[uint64]struct{}{}
		}
		for _, pe := range te.est.Snapshot() {
			if pe.OK && (pe.Offset >= a.threshold || pe.Offset <= -a.threshold) {
				set[pairKey(hostHash([]byte(pe.A)), hostHash([]byte(pe.B)))] = struct{}{}
			}
		}
		if te.tenant != 0 && len(set) > 0 {
			sp.others[te.tenant] = set
		}
	}
	a.skewed.Store(sp)
}

// crossesSkewedPair reports whether two of the hosts, tenant tn's, are a
// skewed pair.
func (a *analyzer) crossesSkewedPair(h *hostSet, tn uint32) bool {
	sp := a.skewed.Load()
	if sp == nil {
		return false
	}
	set := sp.def
	if tn != 0 {
		set = sp.others[tn]
	}
	if len(set) == 0 {
		return false
	}
	for i := range h {
		for j := i + 1; j < len(h) && h[i] != 0; j++ {
			if h[j] == 0 {
				break
			}
			if _, ok := set[pairKey(h[i], h[j])]; ok {
				return true
			}
		}
	}
	return false
}

// analyzedTrace is a trace in the analyzers' model, with its start time and
// tenant.
type analyzedTrace struct {
	model.Trace
	start  uint64
	tenant uint32
}

// tracesOf converts the spans of td whose trace key is in whole into the
// analyzers' model, one trace per key; runs say whose td's resources are.
func tracesOf(td ptrace.Traces, runs []tenantRun, tenants *tenantTable, whole map[pcommon.TraceID]bool) []*analyzedTrace {
	byID := make(map[pcommon.TraceID]*analyzedTrace, len(whole))
	var order []*analyzedTrace
	rss := td.ResourceSpans()
	run, left := -1, 0
	for i := range rss.Len() {
		for left == 0 && run+1 < len(runs) {
			run++
			left = runs[run].resources
		}
		left--
		var tn uint32
		if run >= 0 {
			tn = runs[run].tenant
		}
		tkey := &tenants.get(tn).key
		rs := rss.At(i)
		attrs := rs.Resource().Attributes()
		service, host := store.ServiceName(attrs), store.HostName(attrs)
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				id := sp.TraceID()
				key := id
				if tn != 0 {
					key = keyed(id, tkey)
				}
				if !whole[key] {
					continue
				}
				t := byID[key]
				if t == nil {
					t = &analyzedTrace{Trace: model.Trace{TraceID: hex.EncodeToString(id[:])}, start: math.MaxUint64,
						tenant: tn}
					byID[key] = t
					order = append(order, t)
				}
				if st := uint64(sp.StartTimestamp()); st != 0 && st < t.start {
					t.start = st
				}
				t.Spans = append(t.Spans, model.SpanFromPdata(sp, t.TraceID, service, host))
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
