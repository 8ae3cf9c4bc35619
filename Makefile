# lockcheck: `make demo` runs a short chaos run, `make test` runs the tests. Both install what is missing.
GO      ?= go
BIN     := bin/lockcheck
APT     := DEBIAN_FRONTEND=noninteractive apt-get

.PHONY: all build demo test bench deps vet clean

all: build

# redis-server, redis-sentinel and redis-benchmark from Debian's packages, installed only when missing.
deps:
	@if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-sentinel >/dev/null; then \
	  if [ "$$(id -u)" != 0 ]; then echo "redis-server is missing: run 'sudo apt-get install -y redis-server redis-sentinel redis-tools'"; exit 1; fi; \
	  $(APT) update -qq && $(APT) install -y -qq redis-server redis-sentinel redis-tools >/dev/null; \
	fi

build: bin/libclockshift.so
	$(GO) build -o $(BIN) ./cmd/lockcheck

# The LD_PRELOAD library that shifts a node's wall clock (the clock fault). lockcheck also compiles the
# same embedded source into each run directory when a run asks for clock faults.
bin/libclockshift.so: node/clockshift/csrc/clockshift.c
	@mkdir -p bin
	$${CC:-cc} -O2 -fPIC -shared -o $@ $<

# The main job: Redisson's RLock on one local Redis under partitions and kill -9 (with AOF, so restarts keep
# the lock), 30 seconds, then the verdict. Exit code 0 valid, 1 invalid, 2 unknown.
demo: deps build
	./$(BIN) run --lock reentrant --nemesis partition,kill --persistence always --time 30s

test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

# Speed targets, each printed beside its yardstick as a ratio.
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./bench/

vet:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet ./...

clean:
	rm -rf bin
