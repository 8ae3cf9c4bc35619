# lockcheck: `make demo` runs a short chaos run, `make test` runs the tests. Both install what is missing.
GO      ?= go
BIN     := bin/lockcheck
APT     := DEBIAN_FRONTEND=noninteractive apt-get

.PHONY: image-official image-full test-image-full release all build install demo smoke repro bisect shrink-campaign test test-all-seeds bench differential falsealarms lagging-decides twins-random explore-bench compare-servers deps vet clean images docker-engine compose-up compose-down

all: build

# redis-server, redis-sentinel, redis-benchmark and chromium from Debian's packages, installed only when missing.
deps:
	@if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-sentinel >/dev/null; then \
	  if [ "$$(id -u)" != 0 ]; then echo "redis-server is missing: run 'sudo apt-get install -y redis-server redis-sentinel redis-tools'"; exit 1; fi; \
	  $(APT) update -qq && $(APT) install -y -qq redis-server redis-sentinel redis-tools >/dev/null; \
	fi
	@# Debian's chromium, for the browser tests of the report pages (they skip without it, outside CI).
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" != 0 ]; then echo "chromium is missing, so the browser tests will skip: 'sudo apt-get install -y chromium'"; \
	  else $(APT) update -qq && $(APT) install -y -qq chromium >/dev/null; fi; \
	fi

# The version and commit the binary reports (lockcheck version), stamped as the release stamps them.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
STAMP      = -X main.version=$(VERSION) -X main.commit=$(COMMIT)

build: bin/libclockshift.so
	$(GO) build -ldflags "$(STAMP)" -o $(BIN) ./cmd/lockcheck

# make install: the stamped binary on PATH as `lockcheck`, so that every command lockcheck prints (repro
# lines, shrink's minimal command, a report's steps, the summary page) runs as printed.
PREFIX ?= $(HOME)/.local
install: build
	install -d $(PREFIX)/bin
	install -m 0755 $(BIN) $(PREFIX)/bin/lockcheck
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "$(PREFIX)/bin is not on PATH: add it (export PATH=\"$(PREFIX)/bin:\$$PATH\")";; esac

# The LD_PRELOAD library that shifts a node's wall clock (the clock fault). lockcheck also compiles the
# same embedded source into each run directory when a run asks for clock faults.
bin/libclockshift.so: node/clockshift/csrc/clockshift.c
	@mkdir -p bin
	$${CC:-cc} -O2 -fPIC -shared -o $@ $<

# The main job: Redisson's RLock on one local Redis under partitions and kill -9 (with AOF, so restarts keep
# the lock), 30 seconds, then the verdict. Exit code 0 valid, 1 invalid, 2 unknown.
demo: deps build
	./$(BIN) run --lock reentrant --nemesis partition,kill --persistence always --time 30s

# Release archives: dist/lockcheck_VERSION_OS_ARCH.tar.gz, a static -trimpath binary (with the workers'
# sources inside it) and the docs, for each platform lockcheck builds on.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	@for p in $(PLATFORMS); do ./scripts/release/archive.sh $${p%/*} $${p#*/} $(VERSION) $(COMMIT) dist || exit 1; done

# The smoke suite (about 2 minutes): every Go lock fault-free, the naive control, three safe faulted runs.
smoke: deps build
	./$(BIN) suite examples/suites/smoke.yaml --junit results/smoke.xml

# The catalog of reproduced bugs (lockcheck repro list), both sides of each on 3 seeds, two runs at a time, with JUnit.
repro: deps build
	./$(BIN) repro --all --seeds 3 --parallel 2 --junit results/repro.xml

# lockcheck bisect end to end on the registries' release lists: redis-py 2.10.0..3.2.0 and Redisson
# 3.16.0..3.17.0 each name their fix release (17 minutes here with fresh builds: real builds and runs per step).
bisect: deps build
	LOCKCHECK_BISECT=1 $(GO) test -count=1 -timeout 60m -v -run 'TestBisectEndToEnd' ./cmd/lockcheck/

# lockcheck shrink on docs/shrink.md's three runs (naive, redsync v4.0.3 client pause, Redisson lagging
# failover), each against issue 30's bar; the table's rows are in the -v log (about 30 minutes here).
shrink-campaign: deps build
	LOCKCHECK_SHRINK_CAMPAIGN=1 $(GO) test -count=1 -timeout 90m -v -run 'TestShrinkCampaign' ./cmd/lockcheck/

# Fuzzing runs a count of inputs (about 5 s each here), not a time: go1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" at the end of a -fuzztime window under load (golang/go#75804,
# fixed in go1.27; a CI run of FuzzRead, no crasher written).
# scripts/shards runs cmd/lockcheck's tests, which mostly wait on Redis, workers and fault clocks, in
# $(SHARDS) processes of one test binary beside go test of every other package: inside each process the
# sequential tests stay sequential (they swap os.Stderr, set the environment, share registries) and -parallel 4
# overlaps the rest; the processes share one worker cache and one built lockcheck.
SHARDS ?= 5
test: deps
	$(GO) vet ./...
	$(GO) run ./scripts/shards -shards $(SHARDS) -timeout 40m -parallel 4
	$(GO) test -run '^$$' -fuzz FuzzRead -fuzztime 40000x -fuzzminimizetime 2s ./history/
	$(GO) test -run '^$$' -fuzz FuzzOf -fuzztime 10000x -fuzzminimizetime 2s ./coverage/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 15000x -fuzzminimizetime 2s ./lockspec/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 15000x -fuzzminimizetime 2s ./clients/worker/
	$(GO) test -run '^$$' -fuzz FuzzServe -fuzztime 100000x -fuzzminimizetime 2s ./workers/sdk/
	$(GO) test -run '^$$' -fuzz FuzzDecoder -fuzztime 12000x -fuzzminimizetime 2s ./network/wire/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 80000x -fuzzminimizetime 2s ./suite/
	$(GO) test -run '^$$' -fuzz FuzzMerge -fuzztime 2000x -fuzzminimizetime 2s ./suite/

# The chaos tests that make test runs on one seed, on every seed their verdict was shown on.
test-all-seeds: deps
	LOCKCHECK_SEEDS=all $(GO) test -count=1 -timeout 40m -run 'Redsync|Redislock|ThirdParty' ./cmd/lockcheck/

# Speed targets, each printed beside its yardstick as a ratio.
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./bench/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 4h ./bench/violation/

# The differential check of the Go emulation against the real Redisson (--client redisson,go): every
# primitive of the suite on every topology it supports, fault-free, plus the wake-up tests across the two.
differential: deps
	LOCKCHECK_DIFFERENTIAL=1 $(GO) test -count=1 -timeout 60m -v -run 'TestDifferentialMatrix|TestMixedWaitersAreWoken|TestMixedWakeUpControl|TestRedissonEveryLockIsValid' ./cmd/lockcheck/

# No false alarms: fault-free runs of every emulated lock and seeds of every combination that must be safe,
# all through bin/lockcheck; prints the run count and names each invalid run with its command. Long (see
# README "Tests"); FALSEALARMS="-runs 10 -seeds 3" makes a shorter campaign.
falsealarms: build
	$(GO) run ./scripts/falsealarms -bin $(BIN) $(FALSEALARMS)

# Issue 12's "porcupine decides" measure: the lagging-failover run on seeds 1-10, each decided within 10 s
# (about 17 minutes, so not part of make test or make bench).
lagging-decides: deps build
	./scripts/lagging-decides.sh $(BIN)

# Issue 37's bar: what the random workload finds of the broken twins (examples/twins) in a budget each
# (10 minutes, two twins side by side, at nice 10: about 70 minutes for the 13); prints docs/explore.md's
# table. TWINS_RANDOM="-b 60 rw-read-shorter-lease" runs a shorter or narrower one.
twins-random: build
	./scripts/twins-random.sh $(TWINS_RANDOM)

# Issue 37's bar: lockcheck explore on each broken twin (3 seeds, 10 minutes each, stopping at the first
# finding, settled on 5 fresh seeds) and 30 minutes on each unbroken lock, two explores side by side at
# nice 10 (up to about 4 hours); prints docs/explore.md's "Measured" rows. EXPLORE_BENCH="-b 5m -u 3m -s '1 2'"
# runs a shorter one, EXPLORE_BENCH="-u 0 rw-read-shorter-lease" one twin only.
explore-bench: build
	./scripts/explore-bench.sh $(EXPLORE_BENCH)

# Issue 32's table of docs/compare.md "Per server": every default row under S1-S11 on the host's Redis and on
# Valkey 8.1.8, from one command, 2 seeds a cell (340 runs: 37 minutes here at load average 14).
compare-servers: deps build
	./$(BIN) compare --servers redis,valkey@8.1.8 --seeds 2 --parallel 2

# A Docker engine for --backend docker, where the machine allows it: docker.io from Debian's packages and
# dockerd with vfs storage, no iptables and no bridge (host networking only). Says plainly when it cannot.
docker-engine:
	@./docker/engine.sh

# The images, all built with no registry: lockcheck/redis:offline (FROM scratch with this host's
# redis-server, its libraries and clockshift), lockcheck/toxiproxy:offline (toxiproxy-server compiled
# statically) and lockcheck/lockcheck (lockcheck on the offline Redis image). lockcheck/redis:official
# (docker/redis-official, FROM redis:7.0) needs a registry; it is tried and reported.
images: build
	./$(BIN) images
	CGO_ENABLED=0 $(GO) build -o docker/toxiproxy/toxiproxy-server github.com/Shopify/toxiproxy/v2/cmd/server
	docker build -q -t lockcheck/toxiproxy:offline docker/toxiproxy
	CGO_ENABLED=0 $(GO) build -o bin/lockcheck-static ./cmd/lockcheck
	docker build -q -t lockcheck/lockcheck -f docker/lockcheck/Dockerfile .
	@docker build -q -t lockcheck/redis:official -f docker/redis-official/Dockerfile . >/dev/null 2>&1 \
	  && echo "built lockcheck/redis:official" \
	  || echo "lockcheck/redis:official not built: it starts FROM redis:7.0 and no registry answered"

# An official server image made fit for --docker-image where a registry answers (docker/redis-official:
# the clockshift library, the server as entrypoint): make image-official OFFICIAL=valkey/valkey:8.1
# OFFICIAL_SERVER=valkey-server OFFICIAL_TAG=lockcheck/valkey:official. The default is redis:7.0.
OFFICIAL ?= redis:7.0
OFFICIAL_SERVER ?= redis-server
OFFICIAL_TAG ?= lockcheck/redis:official
image-official:
	docker build -t $(OFFICIAL_TAG) --build-arg BASE=$(OFFICIAL) --build-arg SERVER=$(OFFICIAL_SERVER) -f docker/redis-official/Dockerfile .

# lockcheck/lockcheck:full (docker/full): JDK, Node, Python, Go and every shipped worker's default version
# prebuilt, on a Debian root filesystem made here (debootstrap, apt, docker import): no image registry.
image-full:
	./docker/full/build.sh

# The full image's test: builds it (or reuses it) and runs --client redisson and --client redis-py in it.
test-image-full:
	LOCKCHECK_IMAGE_FULL=1 $(GO) test -count=1 -timeout 30m -v -run 'TestImageFullRunsRealClients' ./cmd/lockcheck/

# The compose Sentinel deployment (docker/compose), for a look by hand or --backend external.
compose-up: images
	./docker/compose/up.sh
compose-down:
	./docker/compose/down.sh

vet:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet ./...

clean:
	rm -rf bin
