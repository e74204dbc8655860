# Two commands do all set-up on a fresh machine: `make test` and `make demo`.
# Each creates .venv and installs every member of the repository editable.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
KERNELS := $(wildcard core/src/robohal/kinematics/_kernels/*.py core/src/robohal/kinematics/_kernels/*.pxd)
MEMBERS := requirements-dev.txt core/pyproject.toml core/setup.py $(KERNELS) \
	plugins/abb/pyproject.toml \
	plugins/franka/pyproject.toml plugins/arduino_planar/pyproject.toml plugins/feetech/pyproject.toml
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
AVR_PACKAGES := gcc-avr avr-libc binutils-avr simavr libsimavr-dev libsimavrparts1 arduino-core-avr

# Third-party parts the Franka tests run against (tests/franka/test_third_party*.py): the
# franky-sim FCI simulator (MuJoCo, pinocchio) and the franky-control client (its own libfranka).
# They live in their own venv, away from the project's numpy and pylibfranka. Pinned: the versions
# these tests were written against; mujoco and pin too, as franky-sim leaves them open.
FRANKY_SIM_VENV := .venv-franky-sim
FRANKY_SIM_STAMP := $(FRANKY_SIM_VENV)/.installed
FRANKY_SIM_FAILED := $(FRANKY_SIM_VENV)/install-failed.txt
FRANKY_SIM_PACKAGES := franky-sim==1.0.4 franky-control==2.0.0 mujoco==4.0.0 pin==4.1.0

.PHONY: venv franky-sim test stress lint demo view hil bench browser-deps avr-deps firmware harness proto clean

$(STAMP): $(MEMBERS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

# Rebuilt when this file changes (the pins live here); pip leaves what is already installed.
# The venv's own .gitignore keeps it out of git and ruff. Where the packages cannot install (no
# wheel for the platform, no index), `make test` goes on and the tests that need them skip, naming
# the reason kept in $(FRANKY_SIM_FAILED); `make franky-sim` fails.
$(FRANKY_SIM_STAMP): Makefile
	@rm -f $(FRANKY_SIM_FAILED)
	@mkdir -p $(FRANKY_SIM_VENV) && echo '*' > $(FRANKY_SIM_VENV)/.gitignore
	@if $(PYTHON) -m venv $(FRANKY_SIM_VENV) > $(FRANKY_SIM_VENV)/install.log 2>&1 \
		&& $(FRANKY_SIM_VENV)/bin/python -m pip install --quiet --upgrade pip >> $(FRANKY_SIM_VENV)/install.log 2>&1 \
		&& $(FRANKY_SIM_VENV)/bin/python -m pip install --quiet $(FRANKY_SIM_PACKAGES) >> $(FRANKY_SIM_VENV)/install.log 2>&1; \
	then \
		touch $(FRANKY_SIM_STAMP); \
	else \
		{ echo "pip install $(FRANKY_SIM_PACKAGES) failed:"; tail -n 5 $(FRANKY_SIM_VENV)/install.log; } \
			> $(FRANKY_SIM_FAILED); \
		cat $(FRANKY_SIM_FAILED) >&2; \
		echo "make: the franky-sim and franky-control tests will skip" >&2; \
	fi

## franky-sim: the third-party Franka simulator and client venv that the Franka tests use
franky-sim: $(FRANKY_SIM_STAMP)
	@[ -f $(FRANKY_SIM_STAMP) ] || { cat $(FRANKY_SIM_FAILED) >&2; exit 1; }

## test: lint, then every unit test (tests/) and HIL suite (in the packages) against the bundled simulators
## (and the Franka backend against franky-sim, franky-control against the bundled FCI simulator)
test: $(STAMP) $(FRANKY_SIM_STAMP) lint
	$(PY) -m pytest $(PYTEST_ARGS)

## stress: the whole suite five times in a row beside a busy process; every run must pass (about 45 min)
stress: $(STAMP) $(FRANKY_SIM_STAMP) lint
	$(PY) tests/stress.py --runs $(or $(RUNS),5) -- $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

## demo: the main job, on the bundled simulators
demo: $(STAMP)
	$(VENV)/bin/robohal demo

## hil: HIL suites against TARGET (a robot URI), else the cells of CELLS (default: hil/cells.example.toml's
## bundled simulators; CELL=name, JOBS at once, default 4: one per simulator) into REPORT (default hil-report/)
hil: $(STAMP)
	$(VENV)/bin/robohal hil $(if $(TARGET),--target '$(TARGET)' $(if $(REPORT),--report $(REPORT)),\
		--cells $(or $(CELLS),hil/cells.example.toml) --cell $(or $(CELL),all) --jobs $(or $(JOBS),4) \
		--report $(or $(REPORT),hil-report)) $(if $(YES),--yes)

# The packages of core's bench extra, installed as they are (robohal itself is installed already).
export BENCH_EXTRA := import sys; toml = __import__("tomllib" if sys.version_info >= (3, 11) else "tomli"); \
	print(" ".join(toml.load(open("core/pyproject.toml", "rb"))["project"]["optional-dependencies"]["bench"]))

## bench: speed figures as ratios against peers (printed, never asserted); first the peers of the
## numeric IK (robohal[bench]): where one cannot install, its rows are skipped and the rest runs
bench: $(STAMP)
	-@$(PY) -m pip install --quiet $$($(PY) -c "$$BENCH_EXTRA") \
		|| echo "make: robohal[bench] did not install; benchmarks/ik.py skips the peers it lacks" >&2
	$(PY) benchmarks/run.py

## view: the live 3D page for URI (default: the Franka simulator) at http://127.0.0.1:8080
view: $(STAMP)
	$(VENV)/bin/robohal view '$(or $(URI),franka://sim?model=franka.fr3)'

## browser-deps: Debian's chromium, which the view's browser tests drive headless (apt)
browser-deps:
	$(SUDO) apt-get update -qq
	$(SUDO) apt-get install -y -qq --no-install-recommends chromium

## avr-deps: the AVR toolchain and simulator that the Arduino firmware tests need (apt)
avr-deps:
	$(SUDO) apt-get update -qq
	$(SUDO) apt-get install -y -qq --no-install-recommends $(AVR_PACKAGES)

## firmware: build the Arduino firmware; prints the sketch folder, the .hex and (last) the .elf
firmware: $(STAMP)
	@$(PY) -m robohal_arduino_planar.firmware

harness: $(STAMP)
	@$(PY) -c 'from robohal_arduino_planar.firmware import build_harness; print(build_harness())'

## proto: regenerate the ABB EGM Python classes from plugins/abb's egm.proto
proto: $(STAMP)
	$(MAKE) --no-print-directory -C plugins/abb proto PYTHON=$(abspath $(PY))

clean:
	-@[ -x $(PY) ] && $(PY) -c 'import shutil; from robohal_arduino_planar.firmware import build_dir; shutil.rmtree(build_dir(), ignore_errors=True)'
	rm -rf $(VENV) $(FRANKY_SIM_VENV) .pytest_cache .ruff_cache
