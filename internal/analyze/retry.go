package analyze

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// RetryCall is one call made more than once by one parent span: two or more
// sibling CLIENT or PRODUCER spans with the same kind, the same name and the
// same peer — the first set of the attributes peer.service, server.address,
// net.peer.name, rpc.service, db.system/db.name, messaging.destination.name,
// and the callee's service when the callee reported (a child span from
// another service). An attempt whose callee never reported joins the
// attempts of its name and peer attribute when they all reached one callee.
// Same-name calls to different peers (fan-out to shards) are different calls.
type RetryCall struct {
	ParentSpanID string // the span that made the call
	Service      string // the calling service
	Name         string // the call's span name
	// Peer is what was called: the callee's service when it reported, else
	// the peer attribute; "" when unknown.
	Peer string

	SpanIDs  []string // the attempts, by start time
	Attempts int
	Failed   int // attempts that failed: status ERROR, a timeout, HTTP 5xx or 429, a retryable gRPC status

	// Retry says the attempts are retries: every attempt but the last
	// failed, or at least half of them (and at least two) failed; for
	// parallel attempts, at least one failed (hedged requests, the losers
	// cancelled). Otherwise they are repeated calls (a loop, N+1 queries).
	Retry bool
	// Parallel says attempts overlap in time (hedged or batched requests).
	Parallel bool

	// Delays are the idle times from each attempt's end to the next one's
	// start (0 when they overlap), Attempts-1 of them.
	Delays []time.Duration
	// Intervals are the times from each attempt's start to the next one's.
	Intervals []time.Duration

	// Backoff, Jitter and FixedInterval are judged only for sequential
	// retries of at least 3 attempts (false otherwise). Backoff: the delays
	// grow (never shrinking by more than 10%, the last at least 1.5 times
	// the first and at least 1 ms). Jitter: the delays are irregular — not
	// growing and not even, or growing by ratios that vary (coefficient of
	// variation >= 0.1, needs 4 attempts). FixedInterval: no backoff and no
	// jitter — the delays are all under 1 ms (immediate retries) or evenly
	// spaced (coefficient of variation < 0.1), or the starts are.
	Backoff       bool
	Jitter        bool
	FixedInterval bool
}

// Evenness thresholds of retry spacing.
const (
	evenCV        = 0.1 // coefficient of variation under which gaps are even
	immediateWait = 1e6 // ns: delays all under this are immediate retries
	minBackoff    = 1e6 // ns: the last delay of a backoff is at least this
	backoffGrowth = 1.5 // the last delay is at least this times the first
	backoffSlack  = 0.9 // a delay may shrink to this fraction of the previous
)

// How a fixed-interval retry was spaced.
const (
	fixedNone = iota
	fixedImmediate
	fixedDelay
	fixedInterval
)

// callNode is a sibling group: the calls with one key under one parent span
// (one or more attempts).
type callNode struct {
	parent   int32 // parent span
	lo, hi   int32 // attempts: members[lo:hi], by start
	peer     peerID
	callee   string
	logical  int32
	nextNode int32 // next node of the same logical call, -1 at the end
	gaps     int32 // delays then intervals: gaps[gaps:gaps+2(hi-lo-1)]

	failed                 int
	retry, parallel        bool
	backoff, jitter, fixed bool
	fixedBy                int
	spacing                uint64 // the fixed delay or interval
}

// display names what a node calls for a summary.
func (nd *callNode) display() string {
	if nd.callee != "" {
		return nd.callee
	}
	return nd.peer.String()
}

// delays and intervals of a node's attempts (empty for a single attempt).
func (ra *retryAnalysis) delays(nd *callNode) []uint64 {
	k := int(nd.hi - nd.lo - 1)
	return ra.gaps[nd.gaps : int(nd.gaps)+k]
}

func (ra *retryAnalysis) intervals(nd *callNode) []uint64 {
	k := int(nd.hi - nd.lo - 1)
	return ra.gaps[int(nd.gaps)+k : int(nd.gaps)+2*k]
}

// logicalCall merges the nodes of one call made by every attempt of the
// call above it (its parent logical call): the layer of a call chain.
type logicalCall struct {
	parent                 int32 // parent logical call, -1 at the top
	first, last            int32 // nodes, linked by nextNode
	spans, nodes           int
	minAtt, maxAtt         int
	failed                 int
	retry, parallel        bool
	backoff, jitter, fixed bool
	firstStart             uint64
	repeated, repBelow     bool
	top                    int32 // topmost repeated logical call above or at it, -1
}

// logicalKey identifies a logical call.
type logicalKey struct {
	parent, topParent int32 // parent logical call; at the top, the parent span
	kind              model.Kind
	name, callee      string
	peer              peerID
}

// retryAnalysis is the call structure of a trace; its buffers are part of
// the pooled index.
type retryAnalysis struct {
	members  []int32
	nodes    []callNode
	logicals []logicalCall
	gaps     []uint64
	nodeOf   []int32  // per span: its node, -1 when not a call
	nca      []int32  // per span: the nearest call strictly above, -1
	peers    []peerID // per call span
	callees  []string // per call span: the callee's service, ""
	ids      map[logicalKey]int32
}

// release drops what refers to the trace's strings.
func (ra *retryAnalysis) release() {
	clear(ra.nodes)
	clear(ra.peers)
	clear(ra.callees)
	if len(ra.ids) > 4096 {
		ra.ids = nil
	} else {
		clear(ra.ids)
	}
}

// RetryCalls returns the calls of t made more than once by one parent span,
// by the first attempt's start time (nil when there are none).
func RetryCalls(t *model.Trace) []RetryCall {
	ix := newIndex(t)
	defer ix.free()
	ra := ix.analyzeCalls()
	if ra == nil {
		return nil
	}
	var order []int32
	for k := range ra.nodes {
		if nd := &ra.nodes[k]; nd.hi-nd.lo >= 2 {
			order = append(order, int32(k))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		sa, sb := ix.start[ra.members[ra.nodes[a].lo]], ix.start[ra.members[ra.nodes[b].lo]]
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	out := make([]RetryCall, 0, len(order))
	for _, k := range order {
		nd := &ra.nodes[k]
		att := ra.members[nd.lo:nd.hi]
		first := ix.span(att[0])
		rc := RetryCall{
			ParentSpanID:  ix.span(nd.parent).SpanID,
			Service:       first.Service,
			Name:          first.Name,
			Peer:          nd.display(),
			SpanIDs:       make([]string, len(att)),
			Attempts:      len(att),
			Failed:        nd.failed,
			Retry:         nd.retry,
			Parallel:      nd.parallel,
			Delays:        make([]time.Duration, len(att)-1),
			Intervals:     make([]time.Duration, len(att)-1),
			Backoff:       nd.backoff,
			Jitter:        nd.jitter,
			FixedInterval: nd.fixed,
		}
		for j, a := range att {
			rc.SpanIDs[j] = ix.span(a).SpanID
		}
		delays, intervals := ra.delays(nd), ra.intervals(nd)
		for j := range delays {
			rc.Delays[j] = duration(delays[j])
			rc.Intervals[j] = duration(intervals[j])
		}
		out = append(out, rc)
	}
	return out
}

// hasRepeatedCalls reports, cheaply, whether any parent span has two call
// children with the same kind and name: without one there is nothing to
// report.
func (ix *index) hasRepeatedCalls() bool {
	buf := ix.scratch2[:0]
	defer func() { ix.scratch2 = buf }()
	for i := int32(0); i < int32(ix.n); i++ {
		ch := ix.children(i)
		if len(ch) < 2 {
			continue
		}
		buf = buf[:0]
		for _, c := range ch {
			if ix.isCall(c) {
				buf = append(buf, c)
			}
		}
		if len(buf) < 2 {
			continue
		}
		ix.sortCalls(buf, false)
		for k := 1; k < len(buf); k++ {
			if ix.sameCall(buf[k-1], buf[k]) {
				return true
			}
		}
	}
	return false
}

// sameCall reports whether calls a and b have the same kind and name.
func (ix *index) sameCall(a, b int32) bool {
	sa, sb := ix.span(a), ix.span(b)
	return sa.Kind == sb.Kind && sa.Name == sb.Name
}

// sortCalls sorts calls by kind, name, then (withPeer) peer and callee,
// then start.
func (ix *index) sortCalls(s []int32, withPeer bool) {
	ra := &ix.calls
	slices.SortFunc(s, func(a, b int32) int {
		sa, sb := ix.span(a), ix.span(b)
		if sa.Kind != sb.Kind {
			return int(sa.Kind) - int(sb.Kind)
		}
		if c := strings.Compare(sa.Name, sb.Name); c != 0 {
			return c
		}
		if withPeer {
			if c := ra.peers[a].compare(ra.peers[b]); c != 0 {
				return c
			}
			if c := strings.Compare(ra.callees[a], ra.callees[b]); c != 0 {
				return c
			}
		}
		switch {
		case ix.start[a] < ix.start[b]:
			return -1
		case ix.start[a] > ix.start[b]:
			return 1
		}
		return int(a - b)
	})
}

// analyzeCalls builds the call structure, nil when no call is repeated.
func (ix *index) analyzeCalls() *retryAnalysis {
	if ix.n < 2 || !ix.hasRepeatedCalls() {
		return nil
	}
	n := ix.n
	ra := &ix.calls
	ra.members, ra.nodes, ra.logicals, ra.gaps = ra.members[:0], ra.nodes[:0], ra.logicals[:0], ra.gaps[:0]
	ra.nodeOf = sized(ra.nodeOf, n)
	ra.nca = sized(ra.nca, n)
	ra.peers = sized(ra.peers, n)
	ra.callees = sized(ra.callees, n)
	if ra.ids == nil {
		ra.ids = make(map[logicalKey]int32)
	}
	peer, callee := ra.peers, ra.callees
	for i := int32(0); i < int32(n); i++ {
		ra.nodeOf[i] = -1
		if ix.kept(i) && ix.isCall(i) {
			peer[i] = attrPeer(ix.span(i))
			callee[i] = ix.calleeService(i)
		}
	}

	// Nodes: per parent (in pre-order), runs of kind, name and peer, split
	// by callee when they reached different callees.
	buf := ix.scratch2[:0]
	for _, p := range ix.pre {
		buf = buf[:0]
		for _, c := range ix.children(p) {
			if ix.isCall(c) {
				buf = append(buf, c)
			}
		}
		if len(buf) == 0 {
			continue
		}
		ix.sortCalls(buf, true)
		for lo := 0; lo < len(buf); {
			hi := lo + 1
			for hi < len(buf) && ix.sameCall(buf[lo], buf[hi]) && peer[buf[lo]] == peer[buf[hi]] {
				hi++
			}
			run := buf[lo:hi] // callees sorted, "" first
			distinct := 0
			for k := range run {
				if c := callee[run[k]]; c != "" && (k == 0 || c != callee[run[k-1]]) {
					distinct++
				}
			}
			if distinct <= 1 {
				ra.addNode(ix, p, run)
			} else {
				for a := 0; a < len(run); {
					b := a + 1
					for b < len(run) && callee[run[b]] == callee[run[a]] {
						b++
					}
					ra.addNode(ix, p, run[a:b])
					a = b
				}
			}
			lo = hi
		}
	}
	ix.scratch2 = buf

	// Logical calls: a node's parent logical call is the logical call of
	// the nearest call at or above its parent span.
	nca := ra.nca
	for _, i := range ix.pre {
		nca[i] = -1
		if p := ix.parent[i]; p >= 0 {
			if ra.nodeOf[p] >= 0 { // a call (a top-level call span has no node)
				nca[i] = p
			} else {
				nca[i] = nca[p]
			}
		}
	}
	lid := ra.ids
	for k := range ra.nodes {
		nd := &ra.nodes[k]
		above := nd.parent
		if ra.nodeOf[above] < 0 {
			above = nca[above]
		}
		key := logicalKey{parent: -1, topParent: nd.parent, peer: nd.peer, callee: nd.callee}
		if above >= 0 {
			key.parent, key.topParent = ra.nodes[ra.nodeOf[above]].logical, -1
		}
		s := ix.span(ra.members[nd.lo])
		key.kind, key.name = s.Kind, s.Name
		id, ok := lid[key]
		if !ok {
			id = int32(len(ra.logicals))
			lid[key] = id
			ra.logicals = append(ra.logicals, logicalCall{parent: key.parent, first: -1, last: -1, top: -1})
		}
		nd.logical = id
		lc := &ra.logicals[id]
		if lc.last >= 0 {
			ra.nodes[lc.last].nextNode = int32(k)
		} else {
			lc.first = int32(k)
		}
		lc.last = int32(k)
		att := int(nd.hi - nd.lo)
		if lc.nodes == 0 || ix.start[ra.members[nd.lo]] < lc.firstStart {
			lc.firstStart = ix.start[ra.members[nd.lo]]
		}
		if lc.nodes == 0 || att < lc.minAtt {
			lc.minAtt = att
		}
		lc.maxAtt = max(lc.maxAtt, att)
		lc.nodes++
		lc.spans += att
		lc.failed += nd.failed
		lc.retry = lc.retry || nd.retry
		lc.parallel = lc.parallel || nd.parallel
		lc.backoff = lc.backoff || nd.backoff
		lc.jitter = lc.jitter || nd.jitter
		lc.fixed = lc.fixed || nd.fixed
	}
	// Parents are created before their children.
	for k := range ra.logicals {
		lc := &ra.logicals[k]
		lc.repeated = lc.maxAtt >= 2
		if lc.parent >= 0 && ra.logicals[lc.parent].top >= 0 {
			lc.top = ra.logicals[lc.parent].top
		} else if lc.repeated {
			lc.top = int32(k)
		}
	}
	for k := len(ra.logicals) - 1; k >= 0; k-- {
		lc := &ra.logicals[k]
		if lc.parent >= 0 && (lc.repeated || lc.repBelow) {
			ra.logicals[lc.parent].repBelow = true
		}
	}
	return ra
}

// addNode adds the calls run (sorted by start unless the run was split; it
// is sorted here) as one node under parent p, and classifies it.
func (ra *retryAnalysis) addNode(ix *index, p int32, run []int32) {
	lo := int32(len(ra.members))
	ra.members = append(ra.members, run...)
	att := ra.members[lo:]
	ix.sortByStart(att)
	nd := callNode{parent: p, lo: lo, hi: int32(len(ra.members)), peer: ra.peers[att[0]], nextNode: -1, gaps: int32(len(ra.gaps))}
	for _, a := range att {
		if c := ra.callees[a]; c != "" {
			nd.callee = c
			break
		}
	}
	id := int32(len(ra.nodes))
	for _, a := range att {
		ra.nodeOf[a] = id
	}
	if len(att) >= 2 {
		for range 2 * (len(att) - 1) {
			ra.gaps = append(ra.gaps, 0)
		}
		nd.classify(ix, att, ra.delays(&nd), ra.intervals(&nd))
	}
	ra.nodes = append(ra.nodes, nd)
}

// RetryVerdict says whether k attempts of one call (at least two) are
// retries rather than repeated calls (see RetryCall.Retry): failed of them
// failed, every one but the last when allButLastFailed; parallel when they
// overlap in time.
func RetryVerdict(k, failed int, allButLastFailed, parallel bool) bool {
	if parallel {
		return failed >= 1
	}
	return allButLastFailed || failed >= 2 && 2*failed >= k
}

// classify judges a node's attempts (at least two, by start), filling in
// their delays and intervals.
func (nd *callNode) classify(ix *index, att []int32, delays, intervals []uint64) {
	k := len(att)
	allButLast := true
	for j, a := range att {
		if failed(ix.span(a)) {
			nd.failed++
		} else if j < k-1 {
			allButLast = false
		}
	}
	maxEnd := ix.end[att[0]]
	for j := 1; j < k; j++ {
		s := ix.start[att[j]]
		if s < maxEnd {
			nd.parallel = true
		} else {
			delays[j-1] = s - ix.end[att[j-1]] // s >= maxEnd >= that end
		}
		intervals[j-1] = s - ix.start[att[j-1]]
		maxEnd = max(maxEnd, ix.end[att[j]])
	}
	nd.retry = RetryVerdict(k, nd.failed, allButLast, nd.parallel)
	if !nd.retry || nd.parallel || k < 3 {
		return
	}
	w := delays
	growing := w[len(w)-1] >= minBackoff && float64(w[len(w)-1]) >= backoffGrowth*float64(w[0])
	for j := 1; j < len(w) && growing; j++ {
		growing = float64(w[j]) >= backoffSlack*float64(w[j-1])
	}
	immediate := slices.Max(w) < immediateWait
	evenDelays := immediate || cv(w) < evenCV
	evenStarts := cv(intervals) < evenCV
	switch {
	case growing:
		nd.backoff = true
		nd.jitter = len(w) >= 3 && ratioCV(w) >= evenCV
	case evenDelays || evenStarts:
		nd.fixed = true
		switch {
		case immediate:
			nd.fixedBy = fixedImmediate
		case evenDelays:
			nd.fixedBy, nd.spacing = fixedDelay, mean(w)
		default:
			nd.fixedBy, nd.spacing = fixedInterval, mean(intervals)
		}
	default:
		nd.jitter = true
	}
}

// ratioCV is the coefficient of variation of the ratios of consecutive
// non-zero delays, 0 when there are fewer than two ratios.
func ratioCV(w []uint64) float64 {
	var n, sum, sq float64
	for j := 1; j < len(w); j++ {
		if w[j-1] > 0 {
			r := float64(w[j]) / float64(w[j-1])
			n, sum, sq = n+1, sum+r, sq+r*r
		}
	}
	if n < 2 || sum == 0 {
		return 0
	}
	m := sum / n
	return math.Sqrt(max(sq/n-m*m, 0)) / m
}

// mean is the rounded mean of xs (non-empty).
func mean(xs []uint64) uint64 {
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return uint64(s/float64(len(xs)) + 0.5)
}

// cv is the coefficient of variation of xs (population standard deviation
// over mean); 0 when they are all 0.
func cv(xs []uint64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	m := s / float64(len(xs))
	if m == 0 {
		return 0
	}
	var v float64
	for _, x := range xs {
		d := float64(x) - m
		v += d * d
	}
	return math.Sqrt(v/float64(len(xs))) / m
}

// retryFanout appends to out chains of repeated calls, one finding per maximal
// chain. A chain runs down the call tree from the topmost call made more
// than once by one parent (its layer's "attempts") to a repeated call with
// no repeated call below it, through the calls each attempt makes in turn
// (layers made once count as 1). Value is the amplification: how many calls
// reached the bottom layer for the one call at the top — the product of the
// attempts per layer when every attempt retried alike (3 × 3 × 3 = 27),
// else the actual count. spanIds are the calls of every layer, top layer
// first, each by start time; service is the calling service of the top
// layer. A chain of repeated calls none of which is a retry (see RetryCall)
// is reported only when at least Options.MinRepeatedCalls calls reach its
// bottom. Findings are ordered by the top layer's first start.
func (ix *index) retryFanout(out []model.Finding, opts Options) []model.Finding {
	ra := ix.analyzeCalls()
	if ra == nil {
		return out
	}
	type chain struct {
		layers []int32 // logical calls, top first
		start  uint64
		bottom int32
	}
	var chains []chain
	for k := range ra.logicals {
		lc := &ra.logicals[k]
		if !lc.repeated || lc.repBelow {
			continue
		}
		var layers []int32
		for l := int32(k); ; l = ra.logicals[l].parent {
			layers = append(layers, l)
			if l == lc.top {
				break
			}
		}
		slices.Reverse(layers)
		report := lc.spans >= opts.MinRepeatedCalls
		for _, l := range layers {
			report = report || ra.logicals[l].retry
		}
		if report {
			chains = append(chains, chain{layers, ra.logicals[lc.top].firstStart, int32(k)})
		}
	}
	slices.SortStableFunc(chains, func(a, b chain) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return int(a.bottom - b.bottom)
	})
	for _, c := range chains {
		out = append(out, ix.retryFinding(ra, c.layers, opts))
	}
	return out
}

// retryFinding renders the finding of one chain of logical calls.
func (ix *index) retryFinding(ra *retryAnalysis, layers []int32, opts Options) model.Finding {
	top, bottom := &ra.logicals[layers[0]], &ra.logicals[layers[len(layers)-1]]
	topNode := &ra.nodes[top.first]
	topSpan := ix.span(ra.members[topNode.lo])

	// The calls of every layer, each layer by start.
	var spans []int32
	failedAll, callsAll := 0, 0
	var retry, parallel, backoff, jitter bool
	var fixedNode *callNode
	for _, l := range layers {
		lc := &ra.logicals[l]
		lo := len(spans)
		for nd := lc.first; nd >= 0; nd = ra.nodes[nd].nextNode {
			node := &ra.nodes[nd]
			spans = append(spans, ra.members[node.lo:node.hi]...)
			if node.fixed && fixedNode == nil {
				fixedNode = node
			}
		}
		ix.sortByStart(spans[lo:])
		failedAll += lc.failed
		callsAll += lc.spans
		retry = retry || lc.retry
		parallel = parallel || lc.parallel
		backoff = backoff || lc.backoff
		jitter = jitter || lc.jitter
	}
	ids, cut := spanIDs(ix, spans, opts.MaxSpanIDs)

	var b strings.Builder
	if topSpan.Service != "" {
		b.WriteString(topSpan.Service)
		b.WriteString(" → ")
	}
	if d := topNode.display(); d != "" {
		b.WriteString(d)
		b.WriteByte(' ')
	}
	b.WriteString(clip(topSpan.Name, 80))
	b.WriteString(": ")
	if len(layers) == 1 {
		b.WriteString(itoa(top.spans))
		if retry {
			b.WriteString(" attempts, ")
			b.WriteString(itoa(top.failed))
			b.WriteString(" failed")
		} else {
			b.WriteString(" repeated calls, not retries")
			if top.failed == 0 {
				b.WriteString(" (all succeeded)")
			} else {
				b.WriteString(" (" + itoa(top.failed) + " failed)")
			}
		}
	} else {
		product := 1.0
		for k, l := range layers {
			lc := &ra.logicals[l]
			if k > 0 {
				b.WriteString(" × ")
			}
			b.WriteString(itoa(lc.minAtt))
			if lc.maxAtt != lc.minAtt {
				b.WriteString("–")
				b.WriteString(itoa(lc.maxAtt))
			}
			if k == 0 {
				b.WriteString(" attempts")
			}
			product *= float64(lc.maxAtt)
		}
		if product == float64(bottom.spans) {
			b.WriteString(" = ")
		} else {
			b.WriteString(": ")
		}
		b.WriteString(itoa(bottom.spans))
		b.WriteString(" calls at the bottom (")
		bn := &ra.nodes[bottom.first]
		if d := bn.display(); d != "" {
			b.WriteString(d)
			b.WriteByte(' ')
		}
		b.WriteString(clip(ix.span(ra.members[bn.lo]).Name, 80))
		b.WriteString(")")
		if retry {
			b.WriteString("; retries, " + itoa(failedAll) + " of " + itoa(callsAll) + " calls failed")
		} else {
			b.WriteString("; repeated calls, not retries")
		}
	}
	switch {
	case parallel && retry:
		b.WriteString("; attempts overlap (hedged)")
	case parallel:
		b.WriteString("; calls run in parallel")
	}
	switch {
	case fixedNode != nil:
		b.WriteString("; retried ")
		switch fixedNode.fixedBy {
		case fixedImmediate:
			b.WriteString("immediately")
		case fixedDelay:
			b.WriteString("after a fixed " + fmtDur(fixedNode.spacing) + " delay")
		default:
			b.WriteString("every " + fmtDur(fixedNode.spacing))
		}
		b.WriteString(" with no backoff or jitter")
	case backoff && jitter:
		b.WriteString("; with backoff and jitter")
	case backoff:
		b.WriteString("; with backoff")
	case jitter:
		b.WriteString("; with jittered delays")
	}
	b.WriteString(cut)
	return model.Finding{
		Kind:    KindRetryFanout,
		SpanIDs: ids,
		Service: topSpan.Service,
		Value:   float64(bottom.spans),
		Summary: b.String(),
	}
}
