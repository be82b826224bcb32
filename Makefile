# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint bench train-example clean ui-vendor

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rlguard demo

# Three workers on two cores: while one waits on a server or a subprocess the cores stay busy
# (98% of a measured run; README "The test suite"). Whole files per worker, so a module's shared
# fixture (a built world, a server) is made once; in collection order (tests/conftest.py puts the
# slow modules first), not xdist's largest-file-first, which started the one-test demo last.
test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest -n 3 --dist loadfile --no-loadscope-reorder

# The edit loop: what runs in process, without the end-to-end experiments and live platforms
# (`slow`) or a Ray cluster (`ray`); `make test` is the whole suite, as CI runs it.
test-fast: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest -n 3 --dist loadfile -m "not slow and not ray"

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_simulator.py --out benchmarks/results/simulator.json
	$(BIN)/python benchmarks/bench_train.py --out benchmarks/results/train.json
	$(BIN)/python benchmarks/compare_optimizers_toy.py --out benchmarks/results/optimizers_toy.json

# The paper's pipeline SFT -> reward model -> DPO warm-up -> CGPO on the toy world (CPU, ~1 min).
train-example: $(STAMP)
	$(BIN)/python -m rlguard.train.toy runs/toy/world
	for stage in sft reward dpo cgpo; do $(BIN)/rlguard train examples/toy/$$stage.yaml || exit 1; done

clean:
	rm -rf $(VENV) runs

# The dashboard's chart library, vendored (built) from the npm registry: the page works offline
# and the package needs no JavaScript build step.
UPLOT := 1.6.32
ui-vendor:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack uplot@$(UPLOT) --silent && tar xzf uplot-$(UPLOT).tgz \
	&& cp package/dist/uPlot.iife.min.js package/dist/uPlot.min.css $(CURDIR)/src/rlguard/platform/static/vendor/ \
	&& cp package/LICENSE $(CURDIR)/src/rlguard/platform/static/vendor/uPlot.LICENSE
