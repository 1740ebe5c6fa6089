package tailsampler

import (
	"math"
	"time"
)

// Latency sketch of one route: counts in logarithmic buckets of relative
// width 5 % from 1 µs to about 90 minutes, so a quantile is known within
// 5 % whatever the route's scale, in fixed memory. Two windows (current and
// previous) make it "recent" without per-sample timestamps.
const (
	sketchGamma   = 1.05
	sketchMin     = float64(time.Microsecond)
	sketchBuckets = 460
)

var sketchLogGamma = math.Log(sketchGamma)

type sketchWindow [sketchBuckets]uint32

type routeSketch struct {
	cur, prev   sketchWindow
	n, nPrev    uint32
	windowStart time.Time
	// The quantile is recomputed every quantileEvery samples: walking the
	// buckets on every decision would cost more than the decision.
	cached    time.Duration
	sinceCalc int
}

const quantileEvery = 32

func sketchBucket(d time.Duration) int {
	if float64(d) <= sketchMin {
		return 0
	}
	i := int(math.Log(float64(d)/sketchMin) / sketchLogGamma)
	return min(i, sketchBuckets-1)
}

func (r *routeSketch) rotate(now time.Time, window time.Duration) {
	switch age := now.Sub(r.windowStart); {
	case age >= 2*window:
		r.prev, r.nPrev = sketchWindow{}, 0
		r.cur, r.n = sketchWindow{}, 0
		r.windowStart = now
		r.sinceCalc = quantileEvery
	case age >= window:
		r.prev, r.nPrev = r.cur, r.n
		r.cur, r.n = sketchWindow{}, 0
		r.windowStart = r.windowStart.Add(window)
		r.sinceCalc = quantileEvery
	}
}

func (r *routeSketch) add(d time.Duration) {
	r.cur[sketchBucket(d)]++
	r.n++
	r.sinceCalc++
}

func (r *routeSketch) count() int { return int(r.n + r.nPrev) }

// quantile returns the upper bound of the bucket holding quantile q.
func (r *routeSketch) quantile(q float64) time.Duration {
	if r.sinceCalc < quantileEvery && r.cached > 0 {
		return r.cached
	}
	rank := uint32(math.Ceil(q * float64(r.n+r.nPrev)))
	var seen uint32
	i := 0
	for ; i < sketchBuckets; i++ {
		seen += r.cur[i] + r.prev[i]
		if seen >= rank {
			break
		}
	}
	r.cached = time.Duration(sketchMin * math.Pow(sketchGamma, float64(i+1)))
	r.sinceCalc = 0
	return r.cached
}

// routeKey is a route of one tenant: tenants' routes of one name are apart.
type routeKey struct {
	service, operation string
	tenant             uint32
}

// routeTable is one shard's sketches. Shards see a random share of every
// route (routing is by trace id), so each estimates the same quantiles from
// its own samples, with no sharing between shards.
type routeTable struct {
	cfg    AdaptiveSlowConfig
	routes map[routeKey]*routeSketch
}

func newRouteTable(cfg AdaptiveSlowConfig) routeTable {
	return routeTable{cfg: cfg, routes: make(map[routeKey]*routeSketch)}
}

// observe reports whether e2e is slow for the route — above its recent
// quantile, with at least min_samples seen and at least min_duration — and
// then records e2e. ok is false when the route cannot be tracked (max_routes).
func (t *routeTable) observe(k routeKey, e2e time.Duration, now time.Time) (slow, ok bool) {
	r, found := t.routes[k]
	if !found {
		if len(t.routes) >= t.cfg.MaxRoutes {
			return false, false
		}
		r = &routeSketch{windowStart: now}
		t.routes[k] = r
	}
	r.rotate(now, t.cfg.Window)
	if r.count() >= t.cfg.MinSamples && e2e >= t.cfg.MinDuration {
		slow = e2e > r.quantile(t.cfg.Quantile)
	}
	r.add(e2e)
	return slow, true
}

// rateLimiter caps the baseline per service (of a tenant) with one token
// bucket each, holding at most one second's worth of tokens.
type rateLimiter struct {
	buckets map[serviceKey]*tokenBucket
	max     int // services tracked; beyond it new services are not capped
}

type tokenBucket struct {
	tokens float64
	last   time.Time
}

// serviceKey is a service of one tenant: one tenant's traffic does not use
// up another's baseline.
type serviceKey struct {
	service string
	tenant  uint32
}

func (l *rateLimiter) allow(service serviceKey, perSecond float64, now time.Time) bool {
	if perSecond <= 0 {
		return true
	}
	b, ok := l.buckets[service]
	if !ok {
		if len(l.buckets) >= l.max {
			return true
		}
		b = &tokenBucket{tokens: max(perSecond, 1), last: now}
		l.buckets[service] = b
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(max(perSecond, 1), b.tokens+elapsed.Seconds()*perSecond)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
