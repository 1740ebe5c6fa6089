// Package analyze will hold the analyzers that run on each whole kept trace
// and say what went wrong in it (slowest hop, retry fan-out, where a timeout
// started, error origin). They are pure functions over a trace — no I/O — so
// they are tested with golden traces under testdata/. The query API already
// returns `findings[]` from the store's findings table; this package fills it.
package analyze
