.PHONY: test bench build
build:
	go build -o bin/bootctl ./cmd/bootctl
test:
	scripts/test
bench:
	go test -run '^$$' -bench . -benchmem ./...
