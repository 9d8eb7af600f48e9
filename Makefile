.PHONY: test bench build deb

# The version and commit come from git and are stamped with -ldflags, so that a build without VCS
# information (GOFLAGS=-buildvcs=false, as in some CI and package builds) still says what it is:
# bootctl --version prints them when the toolchain recorded none. Outside a git tree they stay empty.
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo ' (modified)')
LDFLAGS := -X 'main.stampVersion=$(VERSION)' -X 'main.stampCommit=$(COMMIT)'

build:
	go build -ldflags "$(LDFLAGS)" -o bin/bootctl ./cmd/bootctl
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/bootfetch ./cmd/bootfetch   # static: a node's first stage runs it
# The Debian package (packaging/build-deb says what is in it and where) in bin/.
deb:
	packaging/build-deb -o bin
test:
	scripts/test
bench:
	go test -run '^$$' -bench . -benchmem ./...
