# tracesift — `make run` starts the all-in-one, `make test` runs the suite.
# Everything a target needs is installed by the targets themselves.

SHELL := /bin/bash
GO ?= go
# The embedded engine; the binaries and tests find it in node_modules by themselves.
CHDB_LIB := $(CURDIR)/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so
# The Kafka broker's jars (make kafka-broker); tests find them through TRACESIFT_KAFKA_LIBS.
KAFKA_LIBS := $(CURDIR)/build/kafka/libs
export TRACESIFT_KAFKA_LIBS := $(KAFKA_LIBS)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all deps build browser kafka-broker run-kafka bench-kafka bench-ui generate grafana-plugin dashboards run test bench-red bench-red-cost test-short bench bench-compare bench-logs bench-store bench-stat vet fmt fuzz clean

all: build

## deps: install the embedded ClickHouse engine (libchdb.so, npm package @chdb/lib-linux-x64-gnu)
deps: $(CHDB_LIB)

$(CHDB_LIB): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm is required to install libchdb.so (npm package @chdb/lib-linux-x64-gnu)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@test -f $@ && touch $@

## build: the collector (bin/tracesift) and the query service (bin/tracesift-query)
build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tracesift ./cmd/collector
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tracesift-query ./cmd/query

## generate: the Collector components' generated code and documentation.md from their metadata.yaml
## (mdatagen, pinned in internal/tools)
generate:
	cd internal/tools && $(GO) build -o $(CURDIR)/bin/mdatagen go.opentelemetry.io/collector/cmd/mdatagen
	PATH="$(CURDIR)/bin:$$PATH" $(GO) generate ./internal/...

## grafana-plugin: the Grafana data source in $(PLUGIN_DIR)/dist, a folder Grafana loads from its plugins path:
## module.js (the editors, built from src/ with webpack), plugin.json, and the backend
## (gpx_tracesift_linux_amd64 and _arm64)
PLUGIN_DIR := grafana/tracesift-datasource
# Its Go packages, named: ./... would reach into node_modules, where npm packages may ship Go code.
PLUGIN_GO := ./pkg/... ./dashboards/...
PLUGIN_NODE := $(PLUGIN_DIR)/node_modules/.installed
$(PLUGIN_NODE): $(PLUGIN_DIR)/package.json $(PLUGIN_DIR)/package-lock.json
	cd $(PLUGIN_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

grafana-plugin: $(PLUGIN_NODE)
	rm -rf $(PLUGIN_DIR)/dist
	cd $(PLUGIN_DIR) && npm run --silent build
	cd $(PLUGIN_DIR) && for arch in amd64 arm64; do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -ldflags "-w -s" -o dist/gpx_tracesift_linux_$$arch ./pkg || exit 1; \
	done

## dashboards: rewrite dashboards/*.json from their code (grafana/tracesift-datasource/dashboards)
dashboards:
	cd $(PLUGIN_DIR) && $(GO) test ./dashboards -count=1 -update

## run: the all-in-one in the foreground: OTLP on :4317/:4318, API on :16686, data in ./data
run: build
	./bin/tracesift

## run-kafka: distributed mode on this machine: a Kafka broker (KRaft, data in data/kafka), the gateway on
## 4317/4318/3100, two samplers and the ingester with the query API on 16686 (data in data/ingester); Ctrl-C stops all
run-kafka: build kafka-broker
	$(GO) run ./cmd/runkafka

## kafka-broker: the Apache Kafka broker's jars (Maven Central, org.apache.kafka:kafka_2.13 and kafka-tools,
## deploy/kafka/pom.xml) in build/kafka/libs, for make run-kafka and the distributed-mode tests
kafka-broker: $(KAFKA_LIBS)/.done

$(KAFKA_LIBS)/.done: deploy/kafka/pom.xml
	@command -v mvn >/dev/null && command -v java >/dev/null || { echo "Maven and Java 17 are required for the Kafka broker"; exit 1; }
	rm -rf $(KAFKA_LIBS)
	mvn -q -B -f deploy/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(KAFKA_LIBS)
	touch $@

## browser: Debian's chromium for the web UI's tests, installed (as root) when it is missing
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
		[ "$$(id -u)" = 0 ] || { echo "the web UI's tests need Chromium: run make browser as root, or apt-get install chromium"; exit 1; }; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || \
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }; }

## test: the whole suite, with the race detector; the web UI's screenshots go to test-output/ui
test: deps kafka-broker vet browser $(PLUGIN_NODE)
	TRACESIFT_TEST_OUT=$(CURDIR)/test-output $(GO) test -race -count=1 ./...
	@# The Grafana data source: its backend is a Go module of its own (grafana-plugin-sdk-go stays out of
	@# the collector's); its frontend is type-checked, unit-tested and built as Grafana loads it.
	cd $(PLUGIN_DIR) && $(GO) vet $(PLUGIN_GO) && $(GO) test -race -count=1 $(PLUGIN_GO)
	cd $(PLUGIN_DIR) && npm run --silent typecheck && npm test --silent && npm run --silent build
	@# The frame encoder's unchecked loads, checked.
	$(GO) test -count=1 -tags s2dict_safe ./internal/tailsampler/s2dict/
	@# Every micro-benchmark of make bench runs once, so that a broken one fails here.
	@out=$$($(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./internal/... 2>&1) || { echo "$$out"; exit 1; }; \
		echo "micro-benchmarks: each ran once"

## fuzz: every Go fuzz target of the collector module (internal/, cmd/) for FUZZTIME each (default 60s), one
## at a time, then each target's executions; fails when one fails (its input goes to testdata/fuzz/, to commit)
FUZZTIME ?= 60s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) .ci/fuzz.sh

## vet: static checks
vet:
	@out=$$(gofmt -l ./cmd ./internal ./bench $(addprefix ./$(PLUGIN_DIR)/,pkg dashboards)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: Go benchmarks of the hot paths (5 runs each), then tracesift against the OpenTelemetry
## Collector's tail_sampling under the same OTLP/gRPC load (bench/, BENCH_COUNT runs, medians at the end),
## then the log search over 10 million lines.
## BENCH_DURATION is each system's measured window; logs, configs and metrics go to $(BENCH_OUT).
BENCH_COUNT ?= 3
BENCH_DURATION ?= 30s
BENCH_OUT ?= bench/out
BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count=5 ./internal/...
	$(MAKE) --no-print-directory bench-compare
	$(MAKE) --no-print-directory bench-logs

## bench-logs: log ingestion through the Loki and OTLP paths (lines/s, lines per CPU-second), then
## 10 million lines loaded into the embedded ClickHouse and the log searches timed over them
## (TRACESIFT_BENCH_LOG_DURATION, TRACESIFT_BENCH_LOG_LINES to change them; about 4 minutes)
bench-logs: deps
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run '^$$' -bench 'LogIngest|LogSearch' -benchtime 1x -timeout 60m ./bench/ | tee $(BENCH_OUT)/logs.txt

## bench-store: 10 million spans (1 million traces) loaded into the embedded ClickHouse through the store's
## writer (spans/s, spans per CPU-second), then their 8 million log lines, findings and clock offsets (lines/s);
## trace by id (with its logs, findings and offsets) over 1000 random ids and five trace searches timed, as
## loaded, after OPTIMIZE FINAL and while more spans are inserted (150 000 spans/s offered); bytes on disk per
## span and trace by id beside the OpenTelemetry Collector ClickHouse exporter's schema on the same spans
## (TRACESIFT_BENCH_STORE_SPANS, TRACESIFT_BENCH_STORE_BATCH, TRACESIFT_BENCH_STORE_WRITERS,
## TRACESIFT_BENCH_STORE_BUSY_RATE to change them; about 8 minutes, 32 at 100 M spans)
bench-store: deps
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkStore$$' -benchtime 1x -timeout 180m ./bench/ | tee $(BENCH_OUT)/store.txt

## bench-red: 24 hours of RED for 1000 series (TRACESIFT_BENCH_RED_SERIES) in the embedded ClickHouse, then
## GET /api/v1/red's and /api/v1/compare's reads timed (target: under 200 ms)
bench-red: deps
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkRED$$' -benchtime 1x -timeout 60m ./bench/ | tee $(BENCH_OUT)/red.txt

## bench-red-cost: RED's share of the collector's CPU at 150 000 spans/s — two collectors of this build,
## RED on and off, fed the same load in alternate 2 s slices (5 runs of a minute, median and worst at the end)
bench-red-cost: deps
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkREDCost$$' -benchtime 1x -count 5 -timeout 60m ./bench/ \
		| tee $(BENCH_OUT)/red-cost.txt

## bench-ui: a trace of 10 000 spans in the web UI, in headless Chromium (5 runs of 5 navigations, each run
## a fresh collector and browser; ms to the first screen and to every row, medians, and the cold first one)
bench-ui: deps browser
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkWebUITrace10k$$' -benchtime 5x -count 5 -timeout 30m ./cmd/collector/ \
		| tee $(BENCH_OUT)/ui.txt

## bench-kafka: distributed mode (gateway, two samplers, ingester) against the Collector's own Kafka path (kafka
## exporter by trace id → two kafka receivers → tail_sampling), each on a broker of its own, at the same offered rate
## (TRACESIFT_BENCH_RATE, default 30000 spans/s): spans per CPU-second, then error-trace recall with a consumer killed;
## TRACESIFT_BENCH_PROFILE=1 with TRACESIFT_BENCH_OUT=dir saves a CPU profile of each tracesift role
bench-kafka: deps kafka-broker
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkKafkaVsReference$$' -benchtime $${TRACESIFT_BENCH_RUNS:-5}x \
		-timeout 90m ./bench/ | tee $(BENCH_OUT)/kafka.txt

## bench-compare: only the comparison with the Collector's tail_sampling (about 2 minutes per run)
bench-compare: deps
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; TRACESIFT_BENCH_DURATION=$(BENCH_DURATION) TRACESIFT_BENCH_OUT=$(CURDIR)/$(BENCH_OUT) \
		$(GO) test -run '^$$' -bench CollectorVsReference -benchtime 1x -count $(BENCH_COUNT) -timeout 60m ./bench/ \
		| tee $(BENCH_OUT)/compare.txt

## bench-stat: benchstat's summary (median, confidence interval) of the last comparison
bench-stat:
	$(GO) run $(BENCHSTAT) $(BENCH_OUT)/compare.txt

clean:
	rm -rf bin
