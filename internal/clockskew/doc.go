// Package clockskew estimates the clock offset between pairs of hosts from
// the synchronous calls that cross them, keeps a robust per-pair estimate
// over many traces, raises clock_skew findings and maps a trace's span and
// log times onto one clock for display. Like analyze, it does no I/O: pure
// functions and an in-memory Estimator.
//
// # Evidence: one call, one observation
//
// PairOffsets turns every synchronous cross-host parent/child pair of a trace
// into an Observation. The child must be a SERVER span on another host than
// its parent; the parent may be of any kind but PRODUCER or CONSUMER (a
// message may be consumed long after it was produced, so messaging pairs
// carry no clock information); spans naming no host are skipped. As in
// Jaeger's and Zipkin's adjusters, the network time is assumed to split
// evenly between request and response, which is the same as aligning the
// two spans' midpoints:
//
//	offset(child host − parent host) = child.start − parent.start − (dur(parent) − dur(child)) / 2
//
// A child that does not fit inside its parent is marked Violation. A child
// that lasted longer than its parent (impossible for a synchronous call on
// correct clocks; usually a client that gave up on a timeout while the server
// went on) still gets the midpoint offset but is marked ChildLonger: the
// estimator ignores it, and Adjust's per-trace fallback uses it only when a
// pair has nothing better.
//
// # Sign convention
//
// Every offset is "clock of the second-named host minus clock of the first":
// Observation.Offset is clock(To) − clock(From) (callee minus caller),
// Estimator.Estimate(a, b) is clock(b) − clock(a), a Pair's offset is
// clock(B) − clock(A) with A < B lexically, and a clock_skew finding's value
// is clock(callee host) − clock(caller host) in milliseconds. Positive means
// the second host's clock is ahead: its timestamps read later than the truth
// as seen from the first host. (A,B) and (B,A) are the same pair with the
// sign flipped.
//
// # Estimate: a median over a sliding window
//
// The Estimator keeps, per unordered host pair, up to skew_max_samples
// samples (a ring buffer) no older than skew_window, one sample per trace and
// pair (the median of that trace's calls between the two hosts, so a trace
// calling a host a hundred times is still one vote). The estimate is the
// median of the samples in the window: half of them have to be wrong before
// it moves, so one odd trace (a GC pause, a retransmit) never decides. A
// trimmed mean would be smoother but needs a trim fraction; Hodges-Lehmann
// costs O(n²). The estimate is trusted once skew_min_samples samples are in
// the window. The estimator's clock is the latest time given to Observe, so
// the window is testable without sleeping. At most skew_max_pairs pairs are
// kept; the least recently observed are forgotten first.
//
// # Findings
//
// Estimator.Findings raises one clock_skew finding per host pair of a trace
// whose trusted estimate (never the trace's own observation) is at least
// skew_threshold either way: a 40 ms disagreement is not a finding at the
// default 100 ms threshold, but is still corrected by Adjust.
//
// # Adjusted times
//
// Estimator.Adjust maps a trace onto the clock of its reference host (the
// root span's host, else the earliest span's) using, per host, the trusted
// estimate against the reference host, else a breadth-first chain of the
// trace's own host pairs (each link the trusted estimate, or this trace's
// median when the estimator has fewer than skew_min_samples: the per-trace
// fallback, used for adjustment only, never for findings), else no shift.
// Raw span times are never modified; Adjustments.Time maps a log record's
// (host, time) the same way.
package clockskew
