// Package clockskew will estimate the clock offset between pairs of hosts
// from parent/child spans that cross them, keep a robust per-pair estimate
// over many traces, and adjust span and log times for display. Like analyze,
// it does no I/O.
package clockskew
