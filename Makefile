# Two entry points do all set-up on a fresh Debian machine (run as root):
#   make demo   set-up, then analyze, optimize and verify a default program from cuda_inputs/
#   make test   set-up, then the test suite
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed
DEMO   ?= cuda_inputs/bert_qkv.cu
DEMO_FLAGS ?=

.PHONY: setup demo test test-fast clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v clang-22 >/dev/null 2>&1 || { \
	  echo "installing clang-22 from apt"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang-22; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(VENV)/bin/sirius analyze $(DEMO) $(DEMO_FLAGS)
	@mkdir -p build
	$(VENV)/bin/sirius optimize $(DEMO) $(DEMO_FLAGS) -o build/demo_optimized.cu --report build/demo_report.json
	$(VENV)/bin/sirius verify $(DEMO) build/demo_optimized.cu --backend cpu $(DEMO_FLAGS)

test: setup
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile

# the tests that took under 5 s each in a measured run (tests/slow_tests.txt)
test-fast: setup
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile -m "not slow"

clean:
	rm -rf $(VENV) .sirius-cache build *.egg-info
