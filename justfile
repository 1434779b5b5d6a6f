# Convenience recipes; every one is a plain cargo command (see book/src/development.md).

default:
    @just --list

# Run scenarios (default: the whole library) on the pinned Claude Code CLI.
run *ARGS:
    cargo run --release -- run {{ARGS}}

# The test suite (unit, proptest, simulator and real-CLI end-to-end tests).
test:
    cargo test

# Formatting and lints, as CI checks them.
lint:
    cargo fmt --check
    cargo clippy --all-targets -- -D warnings

# Benchmarks: fake API latency vs a baseline server, harness overhead vs the CLI's own time.
bench:
    cargo bench --bench fake_api
    cargo bench --bench harness_overhead
    cargo bench --bench library_parallel
    cargo bench --bench import_speed

# Minimizing seed 000's padded stall on the real CLI (several minutes; not part of `bench`).
bench-minimize:
    cargo bench --bench minimize_seed

# What CI runs.
ci:
    bash .ci/run

# Every scenario on four real Claude Code versions, scaled down (about 90 s); its matrix.md is
# the committed baseline/matrix.md shown in the README.
matrix-smoke:
    cargo run --release -- matrix --versions 2.1.219,2.1.228,latest~3,latest --set bg_seconds=7
