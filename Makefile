# t9k-sdk developer tasks. `make help` lists them.
# Everything runs inside .venv, which `make venv` (and every target that needs it) creates.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEPS_VENVS := .venvs
PY_SOURCES := t9k_sdk operator/t9k_operator tests bench tools training docs/gen_reference.py pulumi_examples

.PHONY: help
help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[1m%-14s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml tools/constraints-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e ".[pulumi,operator]" --group dev -c tools/constraints-dev.txt
	@touch $@

.PHONY: venv
venv: $(STAMP) ## Create .venv and install the project with every extra and the dev group

.PHONY: fmt
fmt: $(STAMP) ## Format the code (black) and apply ruff's safe fixes
	$(BIN)/black $(PY_SOURCES)
	$(BIN)/ruff check --fix $(PY_SOURCES)

.PHONY: lint
lint: $(STAMP) actionlint ## black --check, ruff, mypy --strict, import-layer contracts, no function over 80 lines, actionlint on .github/workflows
	$(BIN)/black --check --quiet $(PY_SOURCES)
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/mypy
	$(BIN)/mypy bench
	$(BIN)/lint-imports
	$(BIN)/python tools/function_length.py t9k_sdk operator/t9k_operator
	"$$(tools/ensure-lint-binaries.sh --print-dir)/actionlint" .github/workflows/*.yml

.PHONY: actionlint
actionlint: ## Build (or reuse) actionlint, the GitHub Actions workflow linter `make lint` runs
	tools/ensure-lint-binaries.sh

.PHONY: binaries
binaries: cluster-binaries pulumi-binaries gitops-binaries node-binaries kueue-binaries ## Build (or reuse) every binary the tests need

.PHONY: cluster-binaries
cluster-binaries: ## Build (or reuse) etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
	tools/ensure-binaries.sh

.PHONY: kueue-binaries
kueue-binaries: ## Build (or reuse) Kueue's manager and copy its CRDs and webhook configurations (tools/kueue.py starts it)
	tools/ensure-kueue-binaries.sh

.PHONY: node-binaries
node-binaries: ## Build (or reuse) the real node's kubelet and CoreDNS
	tools/ensure-node-binaries.sh

.PHONY: images
images: system-packages ## Build (or reuse) the real node's images: pause, base (Debian, OpenSSH, pdsh), train (torch, DeepSpeed, ColossalAI), operator
	$(PYTHON) tools/images.py build

# The build alone, for `make test`, which has installed the system packages already: a
# prerequisite to run first would let the Go builds take every job slot before the images start.
.PHONY: images-only
images-only:
	$(PYTHON) tools/images.py build

.PHONY: operator-image
operator-image: system-packages ## Build (or reuse) the operator's image, the one a release publishes (tools/images.py; no Docker, no registry), and load it into the running real node
	$(PYTHON) tools/images.py build operator
	@if [ -f .cluster/state.json ]; then $(PYTHON) tools/cluster.py import-images; fi
	@echo "operator image: $$($(PYTHON) tools/images.py path operator) ($$($(PYTHON) tools/images.py ref operator), also named ghcr.io/t9k/t9k-operator:$$(sed -n 's/^version = \"\(.*\)\"/\1/p' pyproject.toml))"

.PHONY: pulumi-binaries
pulumi-binaries: ## Build (or reuse) the Pulumi CLI, its Python language host and the Kubernetes provider
	tools/ensure-pulumi-binaries.sh

.PHONY: gitops-binaries
gitops-binaries: ## Build (or reuse) helm, kstatus and the Lua runner the GitOps tests use; fetch Argo CD's and Flux's CRDs
	tools/ensure-gitops-binaries.sh

.PHONY: cluster-up
cluster-up: $(STAMP) cluster-binaries node-binaries system-packages ## Start (or reuse) the local cluster in .cluster/: control plane, kwok nodes, the real node (KUBECONFIG=.cluster/kubeconfig)
	$(BIN)/python tools/cluster.py up

.PHONY: cluster-down
cluster-down: ## Stop the local cluster (the real node first: fails if the host is not as it was) and remove .cluster/
	$(BIN)/python tools/cluster.py down

.PHONY: system-packages
system-packages: ## Install the Debian packages the tests need (openssh-server, containerd, runc, CNI plugins, mmdebstrap, ...) if missing
	tools/ensure-system-packages.sh

.PHONY: test
# The prerequisites run side by side, the ones that wait on the network and the disk first (the
# images, the dependency-version venvs: pip downloads) while the Go builds take the CPU. Each
# one's output is printed whole when it ends (--output-sync).
test: system-packages ## Everything CI runs: lint, all tests on the real cluster (real node included), other dependency versions, the built package
	$(MAKE) --no-print-directory -j4 --output-sync=target images-only deps-venvs binaries lint
	export T9K_REQUIRE_CLUSTER=1; $(BIN)/python -m pytest
	$(MAKE) --no-print-directory deps-newest-run deps-lowest-run dist-check

# The package as users get it: `python -m build` makes the sdist and then the wheel from the
# sdist; the wheel, without extras, goes into a fresh venv and runs outside the checkout.
DIST_VENV := $(DEPS_VENVS)/dist

.PHONY: dist-check
dist-check: $(STAMP) ## Build the sdist and wheel, check their contents, install the wheel in a fresh venv and run it
	rm -rf dist $(DIST_VENV)
	$(BIN)/python -m build --outdir dist . > /dev/null
	$(BIN)/python tools/check_dist.py dist
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/python -m pip install --quiet dist/t9k_sdk-*.whl
	@# The install lines of the docs, with the pip a fresh venv has (no upgrade): from source
	@# (as from git+https or a checkout), which builds the wheel with hatchling.
	rm -rf $(DIST_VENV)-source && $(PYTHON) -m venv $(DIST_VENV)-source
	$(DIST_VENV)-source/bin/python -m pip --version
	$(DIST_VENV)-source/bin/python -m pip install --quiet dist/t9k_sdk-*.tar.gz
	$(DIST_VENV)-source/bin/t9k-sdk --version
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cp examples/deepspeed_bert.py "$$tmp/" && \
	  cd "$$tmp" && \
	  $(CURDIR)/$(DIST_VENV)/bin/t9k-sdk --help > /dev/null && \
	  $(CURDIR)/$(DIST_VENV)/bin/t9k-sdk render deepspeed_bert.py > rendered.yaml && \
	  diff -u $(CURDIR)/examples/deepspeed_bert.yaml rendered.yaml && \
	  $(CURDIR)/$(DIST_VENV)/bin/t9k-operator --help | grep -q 'pip install "t9k-sdk\[operator\]' && \
	  { $(CURDIR)/$(DIST_VENV)/bin/t9k-operator 2> err.txt; test $$? -eq 3; } && grep -q '\[operator\]' err.txt
	@echo "dist-check: the wheel installs and runs without the checkout"

# Other dependency versions (docs/contributing/dependencies.md): a fresh venv per run, outside
# .venv, with the project and every extra; the unit tests plus the `smoke` cluster tests (a job
# applied with the client runs to success under the operator), on a kwok-only cluster
# (T9K_REAL_NODE=0: no smoke test runs a real container). Only the pip cache is reused.
# deps-lowest: kubernetes 31 builds its ApiException with urllib3's getheaders(), which urllib3
# 2.0-2.6 deprecate (a warning only, silent by default; the tests turn warnings into errors).
# The benchmarks' tests are left out: bench/render.py needs the dev group's Kubeflow SDK.
EXTRAS := client,operator,pulumi
DEPS_TESTS := -m "not cluster or smoke" --ignore=tests/sdk/test_bench_render.py \
  --ignore=tests/sdk/test_bench_scripts.py -p no:cacheprovider
# Packages whose versions the report prints before the tests run
DEPS_SHOWN := kubernetes|urllib3|pydantic|pydantic-core|pyyaml|cryptography|prometheus[-_]client|pulumi|pulumi-kubernetes

.PHONY: deps-venvs
deps-venvs: deps-newest-venv deps-lowest-venv ## Make both dependency-version venvs (pip only; `make test` makes them while the Go builds run)

.PHONY: deps-newest-venv
deps-newest-venv:
	rm -rf $(DEPS_VENVS)/newest
	$(PYTHON) -m venv $(DEPS_VENVS)/newest
	$(DEPS_VENVS)/newest/bin/python -m pip install --quiet --upgrade "pip>=25.1"
	$(DEPS_VENVS)/newest/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager ".[$(EXTRAS)]" --group test

.PHONY: deps-lowest-venv
deps-lowest-venv:
	rm -rf $(DEPS_VENVS)/lowest
	$(PYTHON) -m venv $(DEPS_VENVS)/lowest
	$(PYTHON) tools/lower_bounds.py > $(DEPS_VENVS)/lowest-constraints.txt
	$(DEPS_VENVS)/lowest/bin/python -m pip install --quiet --upgrade "pip>=25.1"
	$(DEPS_VENVS)/lowest/bin/python -m pip install --quiet ".[$(EXTRAS)]" --group test -c $(DEPS_VENVS)/lowest-constraints.txt

.PHONY: deps-newest
deps-newest: ## Fresh venv with the newest allowed version of every dependency: unit + smoke tests
	$(MAKE) --no-print-directory deps-newest-venv
	$(MAKE) --no-print-directory deps-newest-run

.PHONY: deps-newest-run
deps-newest-run: binaries system-packages
	@test -x $(DEPS_VENVS)/newest/bin/python || { echo "no $(DEPS_VENVS)/newest: make deps-newest-venv" >&2; exit 2; }
	$(DEPS_VENVS)/newest/bin/python -m pip list --format=freeze | grep -iE '^($(DEPS_SHOWN))=='
	export T9K_REQUIRE_CLUSTER=1 T9K_REAL_NODE=0; $(DEPS_VENVS)/newest/bin/python -m pytest -q $(DEPS_TESTS)

.PHONY: deps-lowest
deps-lowest: ## Fresh venv with every dependency at its declared lower bound: unit + smoke tests
	$(MAKE) --no-print-directory deps-lowest-venv
	$(MAKE) --no-print-directory deps-lowest-run

.PHONY: deps-lowest-run
deps-lowest-run: binaries system-packages
	@test -x $(DEPS_VENVS)/lowest/bin/python || { echo "no $(DEPS_VENVS)/lowest: make deps-lowest-venv" >&2; exit 2; }
	$(DEPS_VENVS)/lowest/bin/python -m pip list --format=freeze | grep -iE '^($(DEPS_SHOWN))=='
	export T9K_REQUIRE_CLUSTER=1 T9K_REAL_NODE=0; $(DEPS_VENVS)/lowest/bin/python -m pytest -q $(DEPS_TESTS) \
	  -W "ignore:HTTPResponse.getheaders:DeprecationWarning"

.PHONY: unit
unit: $(STAMP) ## The fast tests only: no cluster, no Go binaries (tests marked `binaries` are left out)
	$(BIN)/python -m pytest -m "not cluster and not binaries"

.PHONY: crds
crds: $(STAMP) ## Regenerate the committed CRDs (operator/deploy, deploy/) and the API reference from the models
	$(BIN)/t9k-sdk crds --out-dir operator/deploy/crds
	$(MAKE) install-files
	$(BIN)/python docs/gen_reference.py

.PHONY: install-files
install-files: $(STAMP) ## Regenerate the committed kustomize tree (deploy/kustomize) and Helm chart (deploy/helm) from t9k_sdk/install.py and install_trees.py
	rm -rf deploy/kustomize deploy/helm/t9k-operator
	$(BIN)/t9k-sdk install --kustomize deploy/kustomize
	$(BIN)/t9k-sdk install --helm-chart deploy/helm/t9k-operator

.PHONY: argocd-health
argocd-health: $(STAMP) ## Regenerate deploy/argocd (health.lua copies, argocd-cm patch, test cases) from t9k_sdk/argocd
	$(BIN)/t9k-sdk argocd-health --out-dir deploy/argocd
	$(BIN)/python tools/argocd_testdata.py

.PHONY: argocd-testdata
argocd-testdata: $(STAMP) cluster-binaries gitops-binaries ## Re-record deploy/argocd's live-* test objects from jobs on the local control plane
	T9K_RECORD_ARGOCD=1 $(BIN)/python -m pytest -q tests/cluster/test_argocd_health.py
	$(MAKE) argocd-health

.PHONY: golden
golden: $(STAMP) ## Rewrite the golden YAML twins of the examples and examples/gitops/manifests after an intended change
	T9K_REGENERATE=1 $(BIN)/python -m pytest -q tests/sdk/test_examples.py
	cd examples/gitops && $(CURDIR)/$(BIN)/t9k-sdk render jobs/ --out-dir manifests --kustomization --prune

# The site needs only the docs dependency group (mkdocs, the theme), in a venv of its own: the
# pages are Markdown in docs/, and the generated ones are committed (docs/gen_reference.py).
DOCS_VENV := $(DEPS_VENVS)/docs

$(DOCS_VENV)/.installed: pyproject.toml
	rm -rf $(DOCS_VENV)
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet --upgrade "pip>=25.1"  # --group: pip 25.1
	$(DOCS_VENV)/bin/python -m pip install --quiet --group docs
	@touch $@

.PHONY: docs
docs: $(DOCS_VENV)/.installed ## Build the documentation site into site/ (a venv with the docs group only)
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict

.PHONY: bench
bench: $(STAMP) ## Run the benchmarks in bench/ (bench/startup.py writes its table into docs/performance.md)
	$(BIN)/python bench/render.py
	$(BIN)/python bench/reconcile.py
	$(BIN)/python bench/startup.py --doc

# The fault campaign of docs/reliability.md (tools/chaos.py): 200 jobs under operator kills,
# API server and etcd restarts and more, then 1,000 jobs at once; about 15 minutes. The result
# goes to bench/chaos-result.json and its table into docs/reliability.md, even when it fails.
CHAOS_ARGS ?=

.PHONY: chaos
chaos: $(STAMP) cluster-binaries ## Fault campaign on the local control plane; figures into docs/reliability.md
	rc=0; $(BIN)/python tools/chaos.py run --size long --out bench/chaos-result.json $(CHAOS_ARGS) || rc=$$?; \
	  $(BIN)/python tools/chaos.py render bench/chaos-result.json && exit $$rc

.PHONY: bench-operator
bench-operator: $(STAMP) cluster-binaries ## The operator at scale beside the plain clients (Python and Go) and Kubeflow's training operator at --qps 20, 200 and no limit, then how its cost grows with job size and count (over an hour; writes docs/performance.md and docs/images/operator-growth.svg)
	tools/ensure-bench-binaries.sh
	$(BIN)/python bench/operator.py --doc
	$(BIN)/python bench/growth.py --doc

.PHONY: demo
demo: $(STAMP) cluster-binaries node-binaries system-packages ## Real training on the local cluster's real node: torchrun and DeepSpeed jobs, their loss live (docs/demo.md)
	$(BIN)/python tools/demo.py

.PHONY: demo-simulated
demo-simulated: $(STAMP) cluster-binaries node-binaries system-packages ## The examples of examples/ on kwok's simulated pods (fast)
	$(BIN)/python tools/demo.py --simulated

# A test that fails by chance is a defect: measure how often, before and after its fix
# (docs/contributing/test-cluster.md, "A flaky test"). TEST takes pytest node ids or files.
N ?= 20
SOAK_ARGS ?=

.PHONY: soak
soak: $(STAMP) cluster-binaries node-binaries images ## Run TEST (pytest arguments) N times (default 20) on the local cluster and count the failures, e.g. make soak TEST=tests/cluster/test_real_faults.py N=50 SOAK_ARGS=--churn
	@test -n "$(TEST)" || { echo "make soak: give the test, e.g. make soak TEST=tests/cluster/test_real_faults.py N=50" >&2; exit 2; }
	$(BIN)/python tools/soak.py -n $(N) $(SOAK_ARGS) -- $(TEST)

.PHONY: clean
clean: ## Remove build and test leftovers (keeps .venv and the binary cache)
	rm -rf .pytest_cache .mypy_cache .ruff_cache .hypothesis site dist build .demo

# Time to recovery of real DeepSpeedJobs and ColossalAIJobs after a killed rank, pod or launcher
# (tests/cluster/bench_recovery.py; docs/operator/semantics.md quotes it). Needs `make cluster-up`.
BENCH_ARGS ?=

.PHONY: bench-recovery
bench-recovery: $(STAMP) ## Time to recovery on the real node per launcher and fault, twice each (about 40 minutes; JSON lines in bench/results/recovery.jsonl)
	mkdir -p bench/results
	T9K_REQUIRE_CLUSTER=1 T9K_RECOVERY_RESULTS=$(CURDIR)/bench/results/recovery.jsonl \
	  KUBECONFIG=$(CURDIR)/.cluster/kubeconfig $(BIN)/python -m pytest -q -s \
	  tests/cluster/bench_recovery.py $(BENCH_ARGS)
