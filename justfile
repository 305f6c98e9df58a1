# Recipes; `./dev RECIPE` installs everything first (a fresh clone needs only Python 3.11+).
set shell := ["bash", "-euo", "pipefail", "-c"]
# Recipe arguments are also "$@" in a recipe's script, one word each (paths with spaces).
set positional-arguments

py := ".venv/bin/python"
keys := env_var_or_default("WEATHERAPI_KEYS_FILE", "keys.json")

# List recipes
default:
    @just --list

# Build every area into build/ (real inputs from datasets/ where present, else embedded defaults)
build *ARGS:
    {{py}} -m pipeline build {{ARGS}}

# Serve the API on http://127.0.0.1:8080 (builds the default data and a demo key on first run)
serve *ARGS:
    #!/usr/bin/env bash
    set -euo pipefail
    # The build directory the server will read: --build DIR (or =DIR), WEATHERAPI_BUILD_DIR, build/.
    out=${WEATHERAPI_BUILD_DIR:-build}; take=
    for arg in "$@"; do
        if [ -n "$take" ]; then out=$arg; take=; fi
        case $arg in --build) take=1 ;; --build=*) out=${arg#--build=} ;; esac
    done
    if [ "$out" = build ] && [ ! -e build/current ]; then {{py}} -m pipeline build; fi
    if [ ! -f "{{keys}}" ]; then
        key=$({{py}} -m server keys add demo --keys-file "{{keys}}" | tail -n 1)
        echo "A demo API key was created (only its hash is stored in {{keys}}); it is shown once:"
        echo "    $key"
        echo "Use it as:  curl -H 'X-API-Key: $key' 'http://127.0.0.1:${WEATHERAPI_PORT:-8080}/forecast/47.37,8.54'"
        echo "Geocoding needs no key:  curl 'http://127.0.0.1:${WEATHERAPI_PORT:-8080}/geocoding/lookup?q=zurich'"
        echo "More keys:  {{py}} -m server keys add NAME --keys-file {{keys}} [--rate-limit N]"
    fi
    {{py}} -m server.kernels.warmup "$out"   # numba's cache: no server start waits for the compiler
    exec {{py}} -m server --keys-file "{{keys}}" --port "${WEATHERAPI_PORT:-8080}" "$@"

# Run the whole test suite
test *ARGS:
    {{py}} -m server.kernels.warmup
    {{py}} -m pytest {{ARGS}}

# Lint: ruff's rules, ruff's formatting (checked, not applied) and mypy over the typed seams
lint:
    #!/usr/bin/env bash
    set -uo pipefail
    failed=0        # every check runs, so that one run shows every problem
    {{py}} -m ruff check --output-format concise . || failed=1
    {{py}} -m ruff format --check --output-format concise . || failed=1
    {{py}} -m mypy || failed=1
    exit $failed

# Benchmarks: build time and memory, server start, throughput and latency ratios
bench *ARGS:
    {{py}} -m bench.run {{ARGS}}

# Build the documentation site strictly into site/ (a broken link or anchor fails)
docs *ARGS:
    NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --clean --site-dir site {{ARGS}}

# Open the published catalog in the DuckDB CLI
sql:
    .venv/bin/duckdb -readonly build/current/catalog.duckdb
