# inferwatch: build, test, demo. Needs only Go (1.26); VictoriaMetrics and
# NATS come from the Go module proxy at the versions go.mod holds.
GO ?= go

.PHONY: all build test test-short test-race test-deploy image vet bench bench-fleet bench-churn fuzz demo victoria-metrics generate clean

all: build

# What inferwatch version prints: git describe names the newest tag and
# the commits since it, or the commit alone in a clone without tags, and
# -dirty marks uncommitted changes. Outside a git checkout both are empty
# and the binary reads what the go command recorded instead.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)

build:
	$(GO) build -ldflags '-X main.version=$(VERSION) -X main.commit=$(COMMIT)' -o bin/inferwatch ./cmd/inferwatch

# The container image, without a container runtime (deploy/cmd/image): the
# static binary for amd64 and arm64 (CGO_ENABLED=0, -trimpath, stamped as
# build stamps it), a non-root user 65532 and /tmp, as a multi-architecture
# OCI layout in bin/image/oci and one tarball per architecture for docker
# load or podman load. Every time in it is the commit's, so the same commit
# makes the same digest.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
image:
	cd deploy && SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./cmd/image -repo .. -version $(VERSION) -commit $(COMMIT) -out ../bin/image

# Build VictoriaMetrics single-node once (the `tool` line of go.mod) so the
# integration tests do not race to compile it.
victoria-metrics:
	$(GO) tool -n victoria-metrics >/dev/null

# Every test, the integration tests against a real VictoriaMetrics and a
# real NATS server included, through internal/testrun: go test's usual
# output, then one line per skipped test with its reason. The tests run
# with TMPDIR set to a fresh directory, and anything left in it fails the
# run. SKIPS_ALLOWED=FILE also fails it on a skip FILE does not allow
# (.ci/run gives .ci/allowed-skips).
test: victoria-metrics
	$(GO) run ./internal/testrun -go $(GO) $(if $(SKIPS_ALLOWED),-allowed-skips $(SKIPS_ALLOWED)) -- -count=1 -timeout 20m ./...

# Unit tests only (no VictoriaMetrics, no NATS server).
test-short:
	$(GO) test -short -count=1 ./...

# The packages that fetch, evaluate and publish concurrently, their
# integration tests included, under the race detector (needs cgo: gcc).
test-race: victoria-metrics
	$(GO) test -race -count=1 -timeout 10m ./ingest/... ./rules/... ./alerting/...

# The Helm chart, the container image and the Grafana dashboard, tested
# without a cluster: the deploy module (its own go.mod) renders the chart
# with Helm's Go SDK and decodes every object into its Kubernetes type.
test-deploy: victoria-metrics
	cd deploy && $(GO) test -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...

# Regenerate the KEDA external scaler's Go code from its .proto (protoc from
# Debian's protobuf-compiler; the Go plugins are go.mod tools).
generate:
	$(GO) generate ./alerting/keda/externalscaler

bench:
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./ingest/ ./analysis/ ./forecasting/

# Run every Go fuzz target of the module for FUZZTIME each (one worker, so
# the machine stays usable): make fuzz FUZZTIME=5m
FUZZTIME ?= 30s
fuzz:
	@set -e; for d in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$d/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "== $$d $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -parallel 1 $$d; \
	  done; \
	done

# The daemon against a local VictoriaMetrics holding 10,000 and 100,000
# generated series: cold and steady cycles against the store's own figures
# (see go doc ./cmd/fleetbench; heavy: GBs of memory, most of an hour).
# More flags in FLEETBENCH_FLAGS, e.g. FLEETBENCH_FLAGS='-cases 10000/1h/auto'.
bench-fleet: victoria-metrics build
	$(GO) run ./cmd/fleetbench -inferwatch bin/inferwatch $(FLEETBENCH_FLAGS)

# The daemon's memory and tracked series while series come and go: a
# burst of 50,000 short-lived series on 200 steady ones (see go doc
# ./cmd/churnbench; about 12 minutes). More flags in CHURNBENCH_FLAGS.
bench-churn: victoria-metrics build
	$(GO) run ./cmd/churnbench -inferwatch bin/inferwatch $(CHURNBENCH_FLAGS)

# Start VictoriaMetrics and an embedded NATS, backfill a generated 7-day
# fleet with injected incidents, run the daemon over it and print what a
# subscriber receives.
demo: victoria-metrics build
	$(GO) run ./examples/demo --inferwatch bin/inferwatch

clean:
	rm -rf bin
