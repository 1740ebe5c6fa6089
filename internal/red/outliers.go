package red

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// KindInstanceOutlier is the finding kind of an instance whose error rate or
// latency stands out from its peers'.
const KindInstanceOutlier = "instance_outlier"

// Outlier detection: an instance is judged on the last OutlierWindow of its
// operation's traffic against at least two peers, and only with
// minOutlierRequests requests, so that no single slow or failed request
// decides.
const (
	OutlierWindow      = 5 * time.Minute
	outlierSlot        = 30 * time.Second
	minOutlierRequests = 20
	minPeers           = 2
	// An error rate stands out at 3 standard deviations above the peers'
	// (binomial), at least 5 errors, and twice the peers' rate plus 5 points.
	errorZ        = 3.0
	minErrors     = 5
	errorFactor   = 2.0
	errorMargin   = 0.05
	latencyFactor = 1.5 // the p99 at least this many times the peers' median p99
	// madScale makes the median absolute deviation estimate a standard
	// deviation; latencyMADs of them above the peers' median stand out.
	madScale    = 1.4826
	latencyMADs = 3.0
	// minSlowRequests requests of the instance must be slower than the peers'
	// median p99.
	minSlowRequests = 5
)

// instanceKey is an instance of one tenant's operation: tenants are judged
// apart.
type instanceKey struct{ tenant, service, operation, instance string }

type instanceTally struct {
	requests, errors uint64
	latency          Sketch
}

// Outliers keeps the last OutlierWindow of each instance's RED, in slots,
// and judges instances against their peers.
type Outliers struct {
	slots  map[uint64]map[instanceKey]*instanceTally // by slot start, Unix nanoseconds
	newest uint64                                    // the newest slot's start
}

// Add folds RED rows (any dimensions) into the window.
func (o *Outliers) Add(rows []model.RED) {
	for i := range rows {
		r := &rows[i]
		if r.Instance == "" || r.Dimensions[OverflowDimension] != "" {
			continue
		}
		slot := o.slot(r.TimeUnixNano - r.TimeUnixNano%uint64(outlierSlot))
		if slot == nil {
			continue
		}
		k := instanceKey{r.Tenant, r.Service, r.Operation, r.Instance}
		t := slot[k]
		if t == nil {
			t = &instanceTally{latency: Sketch{}}
			slot[k] = t
		}
		t.requests += r.Requests
		t.errors += r.Errors
		t.latency.Merge(r.Latency)
	}
}

// slot is the slot starting at at; nil when it is older than the window
// holds, counted back from the newest slot.
func (o *Outliers) slot(at uint64) map[instanceKey]*instanceTally {
	if o.slots == nil {
		o.slots = map[uint64]map[instanceKey]*instanceTally{}
	}
	if o.newest > uint64(OutlierWindow) && at+uint64(OutlierWindow) < o.newest {
		return nil
	}
	s := o.slots[at]
	if s == nil {
		s = map[instanceKey]*instanceTally{}
		o.slots[at] = s
		o.newest = max(o.newest, at)
	}
	return s
}

// Judge drops the slots older than OutlierWindow before now and returns a
// finding for each instance that stands out from its peers, at now.
func (o *Outliers) Judge(now time.Time) []model.Finding {
	from := uint64(now.Add(-OutlierWindow).UnixNano())
	for at := range o.slots {
		if at+uint64(outlierSlot) <= from {
			delete(o.slots, at)
		}
	}
	type op struct{ tenant, service, operation string }
	byOp := map[op]map[string]*instanceTally{}
	for _, slot := range o.slots {
		for k, t := range slot {
			insts := byOp[op{k.tenant, k.service, k.operation}]
			if insts == nil {
				insts = map[string]*instanceTally{}
				byOp[op{k.tenant, k.service, k.operation}] = insts
			}
			sum := insts[k.instance]
			if sum == nil {
				sum = &instanceTally{latency: Sketch{}}
				insts[k.instance] = sum
			}
			sum.requests += t.requests
			sum.errors += t.errors
			sum.latency.Merge(t.latency)
		}
	}
	var out []model.Finding
	for _, k := range slices.SortedFunc(maps.Keys(byOp), func(a, b op) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.service, b.service),
			cmp.Compare(a.operation, b.operation))
	}) {
		found := judgeOperation(k.service, k.operation, byOp[k], uint64(now.UnixNano()))
		for i := range found {
			found[i].Tenant = k.tenant
		}
		out = append(out, found...)
	}
	return out
}

// judgeOperation judges each instance of one operation with enough requests
// against the others that have enough.
func judgeOperation(service, operation string, insts map[string]*instanceTally, now uint64) []model.Finding {
	var names []string
	for name, t := range insts {
		if t.requests >= minOutlierRequests {
			names = append(names, name)
		}
	}
	if len(names) < minPeers+1 {
		return nil
	}
	slices.Sort(names)
	p99 := map[string]float64{}
	for _, n := range names {
		p99[n] = insts[n].latency.Quantile(0.99)
	}
	var out []model.Finding
	for _, n := range names {
		t := insts[n]
		var peerReq, peerErr uint64
		var peerP99 []float64
		for _, m := range names {
			if m != n {
				peerReq += insts[m].requests
				peerErr += insts[m].errors
				peerP99 = append(peerP99, p99[m])
			}
		}
		rate, peerRate := float64(t.errors)/float64(t.requests), float64(peerErr)/float64(peerReq)
		// The binomial standard deviation, with the peers' rate held off zero
		// so that a clean peer group does not make one error significant.
		p := max(peerRate, 0.5/float64(peerReq))
		z := (float64(t.errors) - float64(t.requests)*p) / math.Sqrt(float64(t.requests)*p*(1-p))
		errorsOut := t.errors >= minErrors && z >= errorZ && rate >= errorFactor*peerRate+errorMargin

		med := median(peerP99)
		var dev []float64
		for _, v := range peerP99 {
			dev = append(dev, math.Abs(v-med))
		}
		spread := max(madScale*median(dev), 0.1*med)
		latencyOut := med > 0 && p99[n] >= latencyFactor*med && p99[n] > med+latencyMADs*spread &&
			t.latency.CountAbove(uint64(med)) >= minSlowRequests
		if !errorsOut && !latencyOut {
			continue
		}
		value := 0.0
		if latencyOut {
			value = p99[n] / med
		}
		if errorsOut {
			value = max(value, rate/max(peerRate, 1/float64(peerReq)))
		}
		out = append(out, model.Finding{TimeUnixNano: now, Kind: KindInstanceOutlier, SpanIDs: []string{},
			Service: service, Subject: service + " " + operation + " on " + n, Value: math.Round(value*100) / 100,
			Summary: fmt.Sprintf("%s: p99 %s vs %s on its %d peers; errors %s vs %s (%s %s, last %s)", n,
				fmtMillis(p99[n]), fmtMillis(med), len(peerP99), pct(rate), pct(peerRate), service, operation,
				OutlierWindow)})
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fmtMillis renders nanoseconds as milliseconds: "930 ms", "2.5 ms".
func fmtMillis(ns float64) string {
	ms := ns / 1e6
	if ms >= 10 {
		return strconv.FormatFloat(math.Round(ms), 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(math.Round(ms*10)/10, 'f', -1, 64) + " ms"
}

// pct renders a rate as a percentage: "40 %", "0.5 %".
func pct(r float64) string {
	p := r * 100
	if p >= 10 || p == 0 {
		return strconv.FormatFloat(math.Round(p), 'f', -1, 64) + " %"
	}
	return strings.TrimSuffix(strconv.FormatFloat(math.Round(p*10)/10, 'f', 1, 64), ".0") + " %"
}
