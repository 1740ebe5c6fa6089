# tracesift — `make run` starts the all-in-one, `make test` runs the suite.
# Everything a target needs is installed by the targets themselves.

SHELL := /bin/bash
GO ?= go
CHDB_LIB := $(CURDIR)/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so
# chdb-go loads the engine from CHDB_LIB_PATH.
export CHDB_LIB_PATH ?= $(CHDB_LIB)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all deps build run test test-short bench vet fmt clean

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

## run: the all-in-one in the foreground: OTLP on :4317/:4318, API on :16686, data in ./data
run: build
	./bin/tracesift

## test: the whole suite, with the race detector
test: deps vet
	$(GO) test -race -count=1 ./...

## vet: static checks
vet:
	@out=$$(gofmt -l ./cmd ./internal); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: Go benchmarks of the hot paths
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count=5 ./...

clean:
	rm -rf bin
