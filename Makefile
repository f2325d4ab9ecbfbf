# hintstream: `make run` (demo on an embedded JetStream server) and
# `make test` do all the set-up a fresh machine with Go needs.
GO      ?= go
BIN     := bin/hintstream
export CGO_ENABLED := 1

.PHONY: all deps build run test test-long sim check vet fmt-check race parity bench fuzz generate docs clean loadtest reliability chart-test report-check vectors

all: build

deps:
	@./scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/hintstream

## run: hintstream on an embedded JetStream server with simulated workers and traffic
run: build
	./$(BIN) run --demo --agents $(ARGS)

## test: formatting, vet, every test with the race detector (simulations
## at a small size), the simulations at full size without it, the full
## Dynamo parity run, and the Helm chart: about 6 minutes on 2 quiet cores (clean clone, warm Go build cache; docs/benchmarks.md)
test: deps check race sim parity chart-test

## test-long: what is long by nature (HINTSTREAM_TEST_LONG=1: the 65,536-rank
## flood, the ingestion run against a nats CLI built from source) and every
## fuzz target for FUZZTIME; CI runs it after `make test`
test-long: deps
	HINTSTREAM_TEST_LONG=1 $(GO) test -race -count=1 -timeout 20m -run 'TestGapsTablesAdmitRegisteredRanks|TestIngestSmallWithNatsBench|TestNatsBenchOwnStream' ./e2e/ ./loadtest/speed/
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

## report-check: a whatif --report loaded in headless Chromium (installed
## from Debian if absent; as root): tables, summary and charts in the DOM,
## no network request by the page. Not part of `make test`.
report-check: deps
	@./scripts/report-check.sh

check: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# TESTLDFLAGS: test binaries linked without DWARF and the symbol table
# (-s -w): a third less link time for each of the ~46 test binaries;
# race reports and panics keep their file:line (from the pclntab).
TESTLDFLAGS ?= -s -w

race:
	$(GO) test -race -count=1 -timeout 20m -ldflags='$(TESTLDFLAGS)' ./...

## sim: the simulation-heavy packages at their full size, without the race
## detector (under -race above they play a small case; see internal/race)
# The tests whose case is cut under -race, run again whole without it
# (scripts/sim-tests.py finds them: they read race.Enabled).
sim: deps
	$(GO) test -count=1 -timeout 20m -ldflags='$(TESTLDFLAGS)' -run '$(shell ./scripts/sim-tests.py)' $(shell ./scripts/sim-tests.py --packages)

## parity: the worker choice against the Python reference of Dynamo's
## selector over 10,000 random cases (under -race above it runs 2,000)
parity: deps
	$(GO) test -count=1 -ldflags='$(TESTLDFLAGS)' -run 'TestCostMatchesPythonReference|TestCostVectors|TestDynamoSelectorCases' ./decide/routing/

## chart-test: the Helm chart (deploy/helm), rendered and checked by its own
## Go module (Helm stays out of the main module; `./...` above skips it)
chart-test: deps
	cd deploy/helm/charttest && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

## vectors: the vectors hintstream makes itself (not copies of shared/):
## SGLang's namespaced page hashes and Mooncake keys, from SGLang's source
## in Python (actions.TestSGLangSaltedVectorsCurrent checks the file)
vectors:
	/usr/bin/python3 scripts/sglang-salted-vectors.py

## bench: the benchmarks (figures in the README and closing notes)
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./kvevents/ ./kvevents/index/ ./schemas/ ./actions/...
	$(GO) test -run '^$$' -bench WakeupToHint -benchtime 1000x ./loadtest/
	$(GO) test -run '^$$' -bench BurstSpreading -benchtime 1x ./loadtest/
	$(GO) test -run '^$$' -bench WhatifAgentic -benchtime 1x ./whatif/

## fuzz: each fuzz target for FUZZTIME (default 20s); see scripts/fuzz.sh
FUZZTIME ?= 20s
# Minimizing a new input can outlast a short -fuzztime (default 60s) and
# end the run with "context deadline exceeded": keep it short.
FUZZMINTIME ?= 2s
FUZZPKGS := ./schemas/ ./kvevents/ ./kvevents/index/ ./ingest/bridge/ ./streams/ ./state/registry/ ./ingest/eventplane/ ./emit/receiver/ ./emit/adapter/ ./emit/lmcachepin/ ./decide/engine/ ./consumers/ ./service/ ./ingest/agentevents/ ./ingest/requesttrace/ ./decide/agents/ ./whatif/workload/ ./whatif/cluster/ ./actions/
fuzz: deps
	@GO="$(GO)" FUZZTIME=$(FUZZTIME) FUZZMINTIME=$(FUZZMINTIME) ./scripts/fuzz.sh $(FUZZPKGS)

generate:
	$(GO) generate ./...

## docs: regenerate docs/configuration.md from every command's --help-all
docs: deps
	$(GO) test -count=1 -run TestConfigurationDoc ./cmd/hintstream/ -update

clean:
	rm -rf bin .hintstream

## loadtest: 5 alternated rounds each of latency and CPU vs the floor (msgpack
## and JSON requests; both programs side by side, the wake-ups in 5 ms turns) and ingestion vs nats bench (Dynamo JSON and vLLM
## msgpack), judged on per-round medians, then hint value vs the clairvoyant
## bound; about 9 min on 2 cores; report in loadtest/out/summary.md.
## The committed loadtest/RESULTS.md was made with
##   make loadtest LOADTEST_ARGS='--out loadtest/results --results loadtest/RESULTS.md'
LOADTEST_ARGS ?=
loadtest: deps
	$(GO) run ./loadtest/cmd/loadtest $(LOADTEST_ARGS)

## reliability: the fault and hostile-input tests alone, with their figures
## (they also run in `make test`); see docs/reliability.md
reliability: deps
	@out=$$($(GO) test -race -count=1 -v -run 'Fault' ./e2e/ 2>&1); rc=$$?; \
	echo "$$out" | grep -E 'FIGURE|^(--- |ok|FAIL)'; exit $$rc
	$(GO) test -race -count=1 -run 'Hostile|Huge|DeadLetterCopy|TenMillion|DeepNesting|JSONShape|CheckHeaders|Timestamps|LoadTableBounded' ./consumers/ ./schemas/ ./decide/routing/
