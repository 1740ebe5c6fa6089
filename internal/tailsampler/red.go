package tailsampler

import (
	"cmp"
	"context"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/store"
)

// redCounter counts the requests, errors and durations of every entry span
// the sampler receives, before it decides (internal/red), and sends the rows
// down the pipeline every interval, as the findings go (store.Analysis).
type redCounter struct {
	agg      *red.Aggregator
	interval time.Duration
	next     consumer.Traces
	tel      *telemetry
	logger   *zap.Logger
	// keys are the resource attributes the scan reads (ResourceKeys):
	// instance are the indexes of red.InstanceKeys among them, dims those of
	// the dimensions, in the aggregator's order.
	keys           []string
	instance, dims []int
	// spanKeys are the configured dimensions, read from the span first
	// (Request.SpanKeys); spanDims[j] is dimension j's index among them, -1
	// for a default dimension (resource only).
	spanKeys       []string
	spanDims       []int
	spanDimensions bool // some spanDims ≥ 0
	droppedLogged  atomic.Bool

	// retries counts the calls of every call edge against the retry budget;
	// calleeKeys, resendKey, statusKeys and errorTypeKey are the indexes of
	// the span attributes it reads (retryKeys) among spanKeys.
	retries             *red.Retries
	calleeKeys          []int
	resendKey           int
	statusKeys          []int
	errorTypeKey        int
	seed                maphash.Seed
	retryOverflowLogged atomic.Bool

	// outliers judges each instance against its peers every outlierEvery,
	// on the rows flushed (flush is never called concurrently).
	outliers   red.Outliers
	lastJudged time.Time
}

// outlierEvery is how often instances are judged against their peers, and
// call edges against the retry budget.
const outlierEvery = 30 * time.Second

// The span attributes the retry budget reads of client and producer spans:
// what a call reaches, best first (the edge's callee; else the span name),
// the HTTP resend count (an attempt after the first), and what says that an
// attempt failed besides its status (as analyze does: HTTP 5xx, 429, 408,
// error.type).
var (
	calleeKeys   = []string{"peer.service", "server.address", "net.peer.name", "rpc.service"}
	resendKey    = "http.request.resend_count"
	statusKeys   = []string{"http.response.status_code", "http.status_code"}
	errorTypeKey = "error.type"
)

func newREDCounter(cfg red.Config, next consumer.Traces, tel *telemetry, logger *zap.Logger) *redCounter {
	dims := cfg.AllDimensions()
	c := &redCounter{agg: red.NewAggregator(cfg.Interval, cfg.MaxSeries, dims), interval: cfg.Interval,
		next: next, tel: tel, logger: logger, retries: red.NewRetries(cfg.MaxSeries), seed: maphash.MakeSeed()}
	for _, k := range red.InstanceKeys {
		c.instance = append(c.instance, keyIndex(&c.keys, k))
	}
	for _, k := range dims {
		c.dims = append(c.dims, keyIndex(&c.keys, k))
		sk := -1
		if slices.Contains(cfg.Dimensions, k) && !slices.Contains(red.DefaultDimensions, k) {
			sk = keyIndex(&c.spanKeys, k)
		}
		c.spanDims = append(c.spanDims, sk)
		c.spanDimensions = c.spanDimensions || sk >= 0
	}
	for _, k := range calleeKeys {
		c.calleeKeys = append(c.calleeKeys, keyIndex(&c.spanKeys, k))
	}
	for _, k := range statusKeys {
		c.statusKeys = append(c.statusKeys, keyIndex(&c.spanKeys, k))
	}
	c.resendKey, c.errorTypeKey = keyIndex(&c.spanKeys, resendKey), keyIndex(&c.spanKeys, errorTypeKey)
	return c
}

// keyIndex is k's index in *keys, appended when missing: the scan reads
// each attribute once however many readers want it.
func keyIndex(keys *[]string, k string) int {
	if i := slices.Index(*keys, k); i >= 0 {
		return i
	}
	*keys = append(*keys, k)
	return len(*keys) - 1
}

// redScratch is what count needs of a request beyond its scan, pooled with
// it.
type redScratch struct {
	dims     [][]byte // the dimension values of one span
	calls    []call
	slots    []int32 // countRetries' table: a call's index + 1, 0 empty
	attempts []call
	edges    []edgeCount
}

// call is one client or producer span, an attempt of a call: made by one
// parent span with one name to one callee (call hashes the four) on one
// edge (the calling service and the callee).
type call struct {
	edge, call uint64
	span       int32
	next       int32 // the next attempt of this call; -1: none
	first      bool  // the call's first attempt met
	callee     []byte
	start, end uint64
	failed     bool
	resent     bool // http.request.resend_count > 0: a retry whatever its siblings
}

// count counts the valid entry spans of the scanned request — server and
// consumer spans, and roots — and its calls for the retry budget. services
// are the resources' service names; tenant is the request's ("" for the
// default), whose series and edges are its own.
func (c *redCounter) count(req *otlpwire.Request, services []string, sc *redScratch, tenant string) {
	var s red.Span
	s.Tenant = tenant
	s.Dimensions = sc.dims[:len(c.dims)]
	sc.calls = sc.calls[:0]
	var tenantHash uint64
	if tenant != "" {
		tenantHash = red.Mix64(maphash.String(c.seed, tenant))
	}
	res := -1 // the resource s was filled from: its entry spans share all but the name
	for i := range req.Spans {
		sp := &req.Spans[i]
		if !sp.Valid() {
			continue
		}
		if (sp.Kind == kindClient || sp.Kind == kindProducer) && sp.ParentSpanID != [8]byte{} {
			sc.calls = append(sc.calls, c.call(req, i, services, tenantHash))
		}
		if !(sp.Kind == kindServer || sp.Kind == kindConsumer || sp.ParentSpanID == [8]byte{}) {
			continue
		}
		s.Operation = sp.Name
		if sp.Resource != res || c.spanDimensions {
			res = sp.Resource
			c.seriesOf(req, i, services, &s)
		}
		s.Start, s.Duration = sp.Start, 0
		if sp.End > sp.Start {
			s.Duration = sp.End - sp.Start
		}
		s.Error = sp.StatusCode == otlpwire.StatusError || sp.Marked // marked: timed out (timeoutMarks)
		c.agg.Add(&s)
	}
	if len(sc.calls) > 0 {
		c.countRetries(sc, services, req, tenant)
	}
}

// seriesOf fills what s takes from span i's resource (and, when dimensions
// are read from spans, from the span): its service, instance and dimensions.
func (c *redCounter) seriesOf(req *otlpwire.Request, i int, services []string, s *red.Span) {
	sp := &req.Spans[i]
	res := &req.Resources[sp.Resource]
	s.Prefix = 0
	s.Service = services[sp.Resource]
	if s.Service == "" {
		s.Service = store.UnknownService
	}
	s.Instance = nil
	for _, k := range c.instance {
		if v := res.Values[k]; len(v) > 0 {
			s.Instance = v
			break
		}
	}
	var spanVals [][]byte
	if c.spanDimensions {
		spanVals = req.SpanValues(i)
	}
	for j, k := range c.dims {
		s.Dimensions[j] = res.Values[k]
		if sk := c.spanDims[j]; sk >= 0 && spanVals[sk] != nil {
			s.Dimensions[j] = spanVals[sk] // the span's own value wins over its resource's
		}
	}
}

// call reads span i of req, a client or producer span, as an attempt;
// tenantHash (0 for the default tenant) keeps tenants' edges apart.
func (c *redCounter) call(req *otlpwire.Request, i int, services []string, tenantHash uint64) call {
	sp := &req.Spans[i]
	vals := req.SpanValues(i)
	callee := sp.Name
	for _, k := range c.calleeKeys {
		if len(vals[k]) > 0 {
			callee = vals[k]
			break
		}
	}
	failed := sp.StatusCode == otlpwire.StatusError || sp.Marked || len(vals[c.errorTypeKey]) > 0
	for _, k := range c.statusKeys {
		if len(vals[k]) == 0 {
			continue
		}
		if code, err := strconv.Atoi(string(vals[k])); err == nil && (code >= 500 || code == 429 || code == 408) {
			failed = true
		}
	}
	resent := len(vals[c.resendKey]) > 0 && string(vals[c.resendKey]) != "0"
	// Ids are random already: they are folded in, the names hashed.
	edge := red.Mix64(maphash.String(c.seed, services[sp.Resource]) ^ red.Mix64(maphash.Bytes(c.seed, callee)))
	if tenantHash != 0 {
		edge = red.Mix64(edge ^ tenantHash)
	}
	id := red.Mix64(edge^maphash.Bytes(c.seed, sp.Name)) ^ binary.LittleEndian.Uint64(sp.TraceID[:8]) ^
		red.Mix64(binary.LittleEndian.Uint64(sp.TraceID[8:])^red.Mix64(binary.LittleEndian.Uint64(sp.ParentSpanID[:])))
	return call{edge: edge, call: id, span: int32(i), callee: callee, start: sp.Start, end: sp.End,
		failed: failed, resent: resent}
}

// countRetries counts the calls of a request by edge: every attempt is a
// call; the attempts after the first of a call that analyze would call
// retried (analyze.RetryVerdict), or that carry a resend count, are its
// retries. Attempts of one call in different requests count as calls only.
func (c *redCounter) countRetries(sc *redScratch, services []string, req *otlpwire.Request, tenant string) {
	calls := sc.calls
	// The attempts of one call are chained from its first (next, -1 ends):
	// an open-addressing table of call ids finds them in one pass (few
	// calls repeat, so sorting them all would be wasted).
	size := 8
	for size < 2*len(calls) {
		size *= 2
	}
	sc.slots = slices.Grow(sc.slots[:0], size)[:size]
	clear(sc.slots)
	mask := uint64(size - 1)
	for i := range calls {
		calls[i].next, calls[i].first = -1, true
		j := calls[i].call & mask
		for sc.slots[j] != 0 && calls[sc.slots[j]-1].call != calls[i].call {
			j = (j + 1) & mask
		}
		if f := sc.slots[j] - 1; f >= 0 {
			calls[i].first, calls[i].next, calls[f].next = false, calls[f].next, int32(i)
		} else {
			sc.slots[j] = int32(i + 1)
		}
	}
	edges := sc.edges[:0]
	for i := range calls {
		if !calls[i].first {
			continue
		}
		att := append(sc.attempts[:0], calls[i])
		for n := calls[i].next; n >= 0; n = calls[n].next {
			att = append(att, calls[n])
		}
		if len(att) > 1 {
			slices.SortFunc(att, func(a, b call) int { return cmp.Compare(a.start, b.start) })
		}
		sc.attempts = att
		// A request's calls reach few edges: a short list beats a map.
		e := slices.IndexFunc(edges, func(e edgeCount) bool { return e.edge == calls[i].edge })
		if e < 0 {
			e = len(edges)
			edges = append(edges, edgeCount{edge: calls[i].edge, first: i})
		}
		edges[e].calls += uint64(len(att))
		edges[e].retries += attemptRetries(att)
	}
	sc.edges = edges
	now := time.Now()
	for _, e := range edges {
		first := &calls[e.first]
		service := services[req.Spans[first.span].Resource]
		if service == "" {
			service = store.UnknownService
		}
		if !c.retries.Add(now, e.edge, tenant, service, first.callee, e.calls, e.retries) {
			c.tel.TracesiftSamplerRedRetryOverflowCalls.Add(context.Background(), int64(e.calls))
			if c.retryOverflowLogged.CompareAndSwap(false, true) {
				c.logger.Warn("More call edges than red::max_series in 30 s: the calls of the others are not judged "+
					"against the retry budget; they are counted in otelcol_tracesift_sampler_red_retry_overflow_calls "+
					"(logged once)", zap.Int("max_series", c.retries.MaxEdges()))
			}
		}
	}
}

// edgeCount is the calls and retries of one edge in a request; first is
// one of its calls (in the sorted calls).
type edgeCount struct {
	edge, calls, retries uint64
	first                int
}

// attemptRetries is how many of the attempts of one call (by start) were
// retries: all but the first when they failed as retries do, at least those
// resent.
func attemptRetries(att []call) uint64 {
	var failed, resent int
	allButLast, parallel := true, false
	maxEnd := att[0].end
	for j := range att {
		if att[j].failed {
			failed++
		} else if j < len(att)-1 {
			allButLast = false
		}
		if att[j].resent {
			resent++
		}
		if j > 0 {
			parallel = parallel || att[j].start < maxEnd
			maxEnd = max(maxEnd, att[j].end)
		}
	}
	retries := 0
	if len(att) >= 2 && analyze.RetryVerdict(len(att), failed, allButLast, parallel) {
		retries = len(att) - 1
	}
	return uint64(max(retries, resent))
}

// run flushes every interval until stopping is closed.
func (c *redCounter) run(ctx context.Context, stopping <-chan struct{}) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			c.flush(ctx, now)
		case <-stopping:
			return
		}
	}
}

// flush sends what was counted since the last flush down the pipeline, and
// every outlierEvery the instance_outlier findings of the last minutes.
func (c *redCounter) flush(ctx context.Context, now time.Time) {
	rows, overflowed := c.agg.Flush()
	if overflowed > 0 {
		c.tel.TracesiftSamplerRedOverflowSpans.Add(ctx, int64(overflowed))
	}
	c.outliers.Add(rows)
	var findings []model.Finding
	if now.Sub(c.lastJudged) >= outlierEvery {
		c.lastJudged = now
		findings = append(c.outliers.Judge(now), c.retries.Judge(now)...)
		for _, f := range findings {
			c.tel.TracesiftSamplerFindings.Add(ctx, 1, c.tel.findingKind(f.Kind))
		}
	}
	if len(rows)+len(findings) == 0 {
		return
	}
	td := ptrace.NewTraces()
	appendAnalysis(td, store.Analysis{RED: rows, Findings: findings})
	if err := c.next.ConsumeTraces(ctx, td); err != nil {
		c.tel.TracesiftSamplerRedRowsDropped.Add(context.Background(), int64(len(rows)))
		c.tel.TracesiftSamplerFindingsDropped.Add(context.Background(), int64(len(findings)))
		if c.droppedLogged.CompareAndSwap(false, true) {
			c.logger.Warn("The next consumer rejected RED rows and instance_outlier findings; they are lost, counted in "+
				"otelcol_tracesift_sampler_red_rows_dropped and …_findings_dropped (logged once)",
				zap.Int("rows", len(rows)), zap.Int("findings", len(findings)), zap.Error(err))
		}
		return
	}
	c.tel.TracesiftSamplerRedRows.Add(ctx, int64(len(rows)))
}
