# Go fixtures (test_gopclntab unit test, tests/system/test_go.sh), built only when `go` is
# found (golang-go, scripts/setup.sh); the tests skip without them. No network: GOPROXY=off,
# caches inside the build folder.
#   wl_go           the workload, stripped (-s -w: no .symtab, no DWARF, no .eh_frame)
#   wl_go.full      the same source unstripped (the same .text), for go tool objdump
#   wl_go.objdump   `go tool objdump` of wl_go.full: every instruction's function, file, line
#   wl_go.addr2line `go tool addr2line` on the stripped wl_go for each function's first and
#                   last instruction: "addr<TAB>function<TAB>file:line"
#   wl_go_cgo       a stripped cgo workload: Go -> C -> C hot loop and back (gcc links it)
#   wl_go_labels    stripped: goroutines under pprof.Do with labels, and one without
#   wl_go_labels.pie the same as a PIE (g's TLS slot is read differently)
#   wl_go_g0        stripped: goroutines growing their stacks (morestack) and GC marking
#                   (systemstack): code on g0 switched to from a goroutine
#   arm64_wl_go     wl_go cross-built for arm64 (GOARCH=arm64), stripped: the kernel matrix's
#                   arm64 row (its go= column) and test_unwind_go_arm64's tables
#   arm64_wl_go.objdump `go tool objdump` of the same source unstripped (the same .text)
#   esbuild         (when npm can fetch @esbuild/linux-x64) a stripped binary of a recent Go
#                   that nobody here built: the Go 1.20+ table format
#   esbuild-go116, esbuild-go117 (npm's esbuild-linux-64 0.11.23, 0.12.29) the same of Go 1.16
#                   and 1.17, with the toolchain's addr2line of every 61st byte of .text

# Debian's Go (golang-go, what scripts/setup.sh installs) when it is there: the fixtures'
# expectations are checked against its toolchain; a newer `go` first on PATH (/usr/local/go)
# is the runtime matrix's business (issue 30), not the unit tests'
GO       ?= $(firstword $(wildcard /usr/lib/go/bin/go) $(shell command -v go 2>/dev/null))
NPM      ?= $(shell command -v npm 2>/dev/null)
GO_ENV   := GOCACHE=$(BUILD)/go/cache GOPATH=$(BUILD)/go/path GOFLAGS=-mod=mod GOPROXY=off \
	    GO111MODULE=auto CGO_ENABLED=0

ifneq ($(GO),)
FIXTURES += $(addprefix $(BUILD)/,wl_go wl_go.full wl_go.objdump wl_go.addr2line wl_go_cgo \
	wl_go_labels wl_go_labels.pie wl_go_g0 arm64_wl_go arm64_wl_go.objdump)
endif

$(BUILD)/wl_go: wl_go.go | $(BUILD)
	$(GO_ENV) $(GO) build -ldflags='-s -w' -o $@ $<

$(BUILD)/wl_go_labels: wl_go_labels.go | $(BUILD)
	$(GO_ENV) $(GO) build -ldflags='-s -w' -o $@ $<

$(BUILD)/wl_go_labels.pie: wl_go_labels.go | $(BUILD)
	$(GO_ENV) $(GO) build -buildmode=pie -ldflags='-s -w' -o $@ $<

$(BUILD)/wl_go_g0: wl_go_g0.go | $(BUILD)
	$(GO_ENV) $(GO) build -ldflags='-s -w' -o $@ $<

$(BUILD)/wl_go_cgo: wl_go_cgo.go | $(BUILD)
	$(GO_ENV) CGO_ENABLED=1 $(GO) build -ldflags='-s -w' -o $@ $<

$(BUILD)/arm64_wl_go: wl_go.go | $(BUILD)
	$(GO_ENV) GOARCH=arm64 $(GO) build -ldflags='-s -w' -o $@ $<

$(BUILD)/arm64_wl_go.objdump: wl_go.go | $(BUILD)
	$(GO_ENV) GOARCH=arm64 $(GO) build -o $(BUILD)/arm64_wl_go.full $<
	$(GO_ENV) $(GO) tool objdump $(BUILD)/arm64_wl_go.full > $@.tmp && mv $@.tmp $@

$(BUILD)/wl_go.full: wl_go.go | $(BUILD)
	$(GO_ENV) $(GO) build -o $@ $<

$(BUILD)/wl_go.objdump: $(BUILD)/wl_go.full
	$(GO_ENV) $(GO) tool objdump $< > $@.tmp && mv $@.tmp $@

$(BUILD)/wl_go.addr2line: $(BUILD)/wl_go.objdump $(BUILD)/wl_go
	awk '/^TEXT /{ if (last) print last; first = 1; next } \
	     NF < 3 { next } first { print $$2; first = 0 } { last = $$2 } END { if (last) print last }' $< \
		| sort -u > $@.addrs
	$(GO_ENV) $(GO) tool addr2line $(BUILD)/wl_go < $@.addrs | paste - - > $@.out
	paste $@.addrs $@.out > $@.tmp && rm -f $@.addrs $@.out && mv $@.tmp $@

# esbuild: optional (needs the npm registry), never fails the build; tried once per build
# folder (esbuild.unavailable records a failure: delete it to try again).
.PHONY: esbuild
esbuild: | $(BUILD)
	@if [ -n "$(NPM)" ] && [ ! -x $(BUILD)/esbuild ] && [ ! -e $(BUILD)/esbuild.unavailable ]; then \
		d=$$(mktemp -d) && (cd $$d && timeout 60 $(NPM) pack --silent @esbuild/linux-x64 \
			>/dev/null 2>&1 && tar xzf esbuild-linux-x64-*.tgz package/bin/esbuild \
			&& mv package/bin/esbuild $(BUILD)/esbuild) \
			|| echo "npm pack @esbuild/linux-x64 failed" > $(BUILD)/esbuild.unavailable; \
		rm -rf $$d; fi; true
FIXTURES += esbuild

# esbuild-go116, esbuild-go117 (+ .addr2line): optional, the Go 1.16-1.17 table format from
# npm's old esbuild builds; see esbuild_go116.sh
.PHONY: esbuild-go116
esbuild-go116: | $(BUILD)
	@GOCACHE=$(BUILD)/go/cache bash esbuild_go116.sh $(BUILD) "$(GO)" "$(NPM)"
FIXTURES += esbuild-go116
