// Package analyze holds the analyzers that run on each whole kept trace and
// say what went wrong in it: the slowest hop and the critical path, retry
// fan-out (and its amplification down a call chain), where a timeout
// started, where errors originated, broken context propagation and unusually
// large fan-out. The query API returns their output as `findings[]` from the
// store's trace_facts table.
//
// Analyze runs them all; Timings and RetryCalls expose the structured
// results behind the findings. Everything here is a pure function over a
// model.Trace — no I/O, no clocks, no globals besides a pool of scratch
// buffers — so the package is tested with golden traces under testdata/.
//
// The analyzers run in the tail sampler's hot path on every kept trace, so a
// trace is indexed once (span id to position, children lists sorted by start
// time, a pre-order walk) and the index is shared by all analyzers; the
// index's buffers are pooled and reused, and text is only formatted for the
// few findings that are raised.
//
// # Findings
//
// Every finding names the spans it is about (lowercase hex span ids, at most
// Options.MaxSpanIDs of them), the service it is about, its subject (the
// call edge of a retry chain, else the operation of its first span: the key
// findings are aggregated by across traces), a value and a one sentence
// summary:
//
//   - slowest_hop: the span with the largest self time; value in ms.
//   - critical_path: the spans that determined the end-to-end latency, root
//     first; value is the root's duration in ms (= the path's sections).
//   - retry_fanout: a chain of calls made several times by one parent, down
//     nested layers; value is the calls that reached the bottom layer
//     (3 attempts at each of 3 layers: 27).
//   - timeout: where a timeout started; value is that span's duration in ms.
//   - error_origin: an error span with no error below it; value is its
//     duration in ms.
//   - broken_propagation: spans whose parent never arrived, or several root
//     spans; value is how many.
//   - fanout: an entry span making unusually many downstream calls; value is
//     how many.
//
// # Robustness
//
// Analyzers never panic and never produce NaN or negative values, whatever
// the trace: empty traces, a single span, traces missing their root, spans
// whose parent never arrived, end before start (the span counts as
// zero-length), parent chains that loop (the loop is cut), and duplicate span
// ids. For duplicates, the first span with an id (in trace order) is kept and
// later ones are ignored, except the Zipkin "shared span" case: a CLIENT and
// a SERVER span with the same id are both kept, the SERVER span becoming the
// CLIENT span's child and the parent of the spans that name that id.
//
// # Trace root
//
// The root is the longest span without a parent span id (ties: earliest
// start, then first in the trace). A trace missing its root falls back to its
// longest top-level span (a span whose parent never arrived). Self times are
// computed for every span; the critical path starts at the root.
package analyze
