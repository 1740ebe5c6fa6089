// Package bench compares tracesift's collector with the OpenTelemetry
// Collector's contrib tail_sampling processor under the same OTLP/gRPC load.
//
// The load generator (Generator, Load) lives in this package's normal files;
// the comparison itself is BenchmarkCollectorVsReference, which builds both
// binaries, runs each as a subprocess on free localhost ports, drives it with
// the same load and reads its CPU time and peak RSS from /proc. The reference
// collector is the separate module in ./reference, so that contrib and its
// older collector release never reach tracesift's own binaries.
//
//	make bench                     # micro-benchmarks, then 3 comparison runs and their medians
//	go test -run '^$' -bench CollectorVsReference -benchtime 1x ./bench/
//
// Environment: TRACESIFT_BENCH_DURATION (measured window per system, default
// 30s), TRACESIFT_BENCH_WARMUP (default 10s: decision_wait 5s + 5s), TRACESIFT_BENCH_CONNS (gRPC
// connections, default 4), TRACESIFT_BENCH_OUT (keep server logs, configs and
// metric scrapes in this folder), TRACESIFT_BENCH_SYSTEMS (default
// "reference,tracesift"), TRACESIFT_BENCH_REF_SHARDS (tail_sampling's
// num_shards, default one per CPU), TRACESIFT_BENCH_SAMPLER_SETTINGS (extra
// tracesift_sampler YAML, e.g. "max_buffered_bytes: 2147483648").
package bench
