# Entry points; each script installs what it needs on a Debian machine first.
# make bench BENCH_FLAGS='-sections context -reps 1' passes flags to the harness.
.PHONY: bench test demo

bench:
	@scripts/bench.sh $(BENCH_FLAGS)

test:
	scripts/test.sh

demo:
	scripts/demo.sh
