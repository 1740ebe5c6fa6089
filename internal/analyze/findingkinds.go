package analyze

// Finding kinds.
const (
	KindSlowestHop        = "slowest_hop"
	KindCriticalPath      = "critical_path"
	KindRetryFanout       = "retry_fanout"
	KindTimeout           = "timeout"
	KindClockSkew         = "clock_skew"
	KindErrorOrigin       = "error_origin"
	KindBrokenPropagation = "broken_propagation"
	KindFanout            = "fanout"
	KindThrottled         = "throttled"
	KindFastFail          = "fast_fail"
	KindFallback          = "fallback"
	KindPoolExhausted     = "pool_exhausted"
)
