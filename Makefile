# gputally build, test and release targets. `make help` lists them.
GO          ?= go
BIN         ?= bin/gputally
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS     := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION) \
               -X $(VERSION_PKG).Branch=main -X $(VERSION_PKG).BuildUser=gputally
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# go-nvml's generated cgo uses deprecated NVML declarations on purpose.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: all build test lint e2e bench fuzz soak bench-fleet generate chart-test check help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/gputally (cgo on, for the NVML and DCGM backends)
	CGO_ENABLED=1 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gputally

test: ## unit, golden, property and promtool tests, with the race detector
	$(GO) test -race -count=1 -timeout 20m ./...

lint: ## gofmt, go vet, staticcheck, and that go.mod is tidy
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff
	@# Everything but the NVML backend builds without cgo (DESIGN.md).
	CGO_ENABLED=0 $(GO) vet $$($(GO) list ./... | grep -v '/collector/nvml$$')
	@# report --demo and simulate run on a laptop (README's first look), not only on Linux.
	GOOS=windows CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/gputally/

e2e: ## end-to-end tests against a real Prometheus, VictoriaMetrics and headless Chromium
	@# Backfilling simulated weeks with promtool is slow on a loaded machine.
	$(GO) test -count=1 -timeout 60m -tags e2e ./test/e2e/...

bench: ## benchmarks of the scrape, the sample tick, the ledger and attribution
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Every fuzz target, as package:Name. make fuzz runs each for FUZZTIME; an input
# that fails is written under the package's testdata/fuzz and then fails
# `make test` until fixed: commit it as the regression test.
FUZZTIME ?= 20s
FUZZ_TARGETS := ./cost:FuzzParse ./collector/sim:FuzzParse \
                ./attribution:FuzzKubeletAnswer ./attribution:FuzzParseCgroupLine ./attribution:FuzzParseDeviceID ./attribution:FuzzResourceSlice \
                ./report:FuzzPrometheusAnswer ./report/source/ledger:FuzzLedgerAnswers ./report/engine:FuzzDecodeAnswer ./report/engine:FuzzLoadOpenMetrics ./team:FuzzParseMap ./alerts:FuzzParseBudgets \
                ./collector/dcgm:FuzzClassify ./dashboards:FuzzExpandVariables ./dashboards:FuzzLabelValuesSelector

fuzz: ## run each fuzz target for FUZZTIME (default 20s): price book, scenario, kubelet answers, Prometheus answers, …
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $$t"; $(GO) test -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

soak: ## the exporter for minutes under churn and faults (GPUTALLY_SOAK_DURATION, default 5m); not part of check
	$(GO) test -count=1 -tags soak -timeout 2h -v ./test/soak/

bench-fleet: ## the report over 1,000 GPUs x 7 days, VictoriaMetrics over HTTP and embedded, held to the budgets (GPUTALLY_FLEET_GPUS=1000,10000 GPUTALLY_FLEET_DAYS=7,30 GPUTALLY_FLEET_ENGINES=vm,embedded GPUTALLY_FLEET_CONCURRENCY=2,1 GPUTALLY_FLEET_KEEP=dir)
	$(GO) test -count=1 -tags fleetbench -timeout 4h -run FleetReport -v ./report/

chart-test: ## helm lint and template, strict decoding, and a server-side dry-run against a real kube-apiserver
	bash scripts/chart-test.sh

generate: ## regenerate dashboards and rules from their Go code, and the chart's copies
	$(GO) test ./dashboards ./alerts -run Generated -update
	bash scripts/sync-chart-files.sh

check: lint test e2e ## everything CI runs
