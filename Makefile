# mpiskel tasks. `make demo` and `make test` set up everything they need on Debian.
.PHONY: deps demo test test-fast lint bench fuzz fixtures validate man install

export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

deps:
	@scripts/install-deps.sh

# Trace a bundled example program and show what was recorded.
demo: deps
	@scripts/demo.sh

# Every test, in two tiers: the library crates' tests (no MPI: unit, property, readers on
# ../shared/fixtures, fuzzing smoke runs and regressions), then the binary's (the tracer,
# skeletons compiled and run under OpenMPI, MPICH and SimGrid).
test: deps test-fast
	INSTA_UPDATE=no cargo test -p mpiskel

# The first tier alone: under two minutes, without MPI.
test-fast:
	INSTA_UPDATE=no cargo test -p mpiskel-trace -p mpiskel-logicalize -p mpiskel-compress -p mpiskel-program -p mpiskel-cut -p mpiskel-emit -p mpiskel-report -p mpiskel-make -p mpiskel-validate -p mpiskel-simulate -p mpiskel-fuzz

# Formatting, clippy, no import cycle among the modules of any crate, and the tracer compiled
# with -Wall -Wextra -Werror for each MPI.
lint: deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	python3 scripts/module-cycles.py
	python3 scripts/sizes.py
	for c in mpiskel-simulate mpiskel-report; do \
	  if cargo tree -p $$c -e normal,no-proc-macro --prefix none | grep -E '^(syn|quote|prettyplease) '; then \
	    echo "$$c must not depend on the Rust back end's code generators" >&2; exit 1; \
	  fi; \
	done
	for m in openmpi mpich; do \
	  mpicc.$$m -fsyntax-only -Wall -Wextra -Werror trace/tracer/mpiskel_tracer.c || exit 1; \
	done

# Benchmarks whose figures BENCHMARKS.md records.
bench: deps
	cargo bench --bench trace
	cargo bench --bench compress_npb
	cargo bench -p mpiskel-compress --bench loops
	cargo bench --bench logicalize_npb
	cargo bench -p mpiskel-logicalize --bench matchers
	cargo bench -p mpiskel-logicalize --bench identify
	cargo bench --bench skeleton
	cargo bench --bench scale
	cargo bench --bench simulate

# Fuzzing campaigns whose figures BENCHMARKS.md records (FUZZ_CASES per reader, five times as
# many through the pipeline, a tenth for OTF2, whose cases each run libotf2's reader, and as many
# again of the OTF2 reader's own half, libotf2's dumps mutated in process; about 1 h 45 min on
# 2 cores): optimized, with overflow checks.
FUZZ_CASES ?= 200000
fuzz:
	cargo build --profile fuzz -p mpiskel-fuzz
	target/fuzz/mpiskel-fuzz pipeline --cases $$(( $(FUZZ_CASES) * 5 )) --seed 1000000 --rust-every 4
	target/fuzz/mpiskel-fuzz native --cases $(FUZZ_CASES) --seed 2000000
	target/fuzz/mpiskel-fuzz ti --cases $(FUZZ_CASES) --seed 3000000
	target/fuzz/mpiskel-fuzz dumpi --cases $(FUZZ_CASES) --seed 4000000
	target/fuzz/mpiskel-fuzz otf2 --cases $$(( $(FUZZ_CASES) / 10 )) --seed 5000000
	target/fuzz/mpiskel-fuzz otf2-dump --cases $(FUZZ_CASES) --seed 6000000

# Re-record fixtures/traces with the project's tracer (OpenMPI; LAMMPS from Debian).
fixtures: deps
	cargo build --release
	fixtures/record.sh

# Predictions across platforms: VALIDATION.md, validation/results.json and validation/*.svg.
# The SimGrid suite needs ../shared/fixtures; the native suite runs real MPI under network
# namespaces and CPU cgroups, as root (about 25 minutes on 2 cores).
validate: deps
	cargo build --release
	target/release/mpiskel validate -o validation --markdown VALIDATION.md --reps 3

# The manual pages (mpiskel(1) and one per command) and the bash, zsh and fish completions,
# generated from the binary's own argument definitions into target/man and target/completions.
man:
	cargo build --release
	target/release/mpiskel man -o target/man/man1 >/dev/null
	mkdir -p target/completions
	target/release/mpiskel completions bash > target/completions/mpiskel.bash
	target/release/mpiskel completions zsh > target/completions/_mpiskel
	target/release/mpiskel completions fish > target/completions/mpiskel.fish

# The binary on PATH (cargo's bin folder, ~/.cargo/bin, which rustup puts on PATH), its manual
# pages and completions under PREFIX (default ~/.local: `man mpiskel-build` then works).
PREFIX ?= $(HOME)/.local
install: man
	cargo install --path . --locked --force
	install -d $(PREFIX)/share/man/man1 $(PREFIX)/share/bash-completion/completions \
	  $(PREFIX)/share/zsh/site-functions $(PREFIX)/share/fish/vendor_completions.d
	install -m 644 target/man/man1/*.1 $(PREFIX)/share/man/man1/
	install -m 644 target/completions/mpiskel.bash $(PREFIX)/share/bash-completion/completions/mpiskel
	install -m 644 target/completions/_mpiskel $(PREFIX)/share/zsh/site-functions/_mpiskel
	install -m 644 target/completions/mpiskel.fish $(PREFIX)/share/fish/vendor_completions.d/mpiskel.fish
