#!/usr/bin/env bash
# The GPU check (benchmarks/gpu_check.py: neural's MLP and context-aware ranker on CUDA and on
# the CPU), in two steps:
#
#   bash benchmarks/gpu_check.sh --build       here, from the repository root: the wheels the
#                                              GPU machine lacks, into .gpu_wheels/ (ignored
#                                              by git): ltr-bench and ltr-bench-neural (pure
#                                              Python, built with --no-deps), pytest and what
#                                              it needs
#   bash benchmarks/gpu_check.sh OUT [ARGS]    on the GPU machine: installs .gpu_wheels/ with
#                                              --no-deps beside the machine's own torch (no
#                                              other torch, no download), runs the check,
#                                              writes OUT/gpu_check.json, OUT/gpu_check.log
#                                              and OUT/wheels.txt; ARGS go to gpu_check.py
#
# The device run, as one call of the session's `run` tool (about 4 minutes; the limit leaves
# room to run it again within 15 minutes of device time):
#   command: bash benchmarks/gpu_check.sh "$OUT"
#   carry:   [".gpu_wheels"]
#   timeout_s: 330
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=.gpu_wheels

if [ "${1:-}" = "--build" ]; then
  rm -rf "$wheels"
  # built from a copy of what the run tool carries (tracked and untracked-not-ignored files),
  # so setuptools' build/ and *.egg-info never land in this checkout (an in-tree egg-info
  # would change the metadata importlib sees here)
  src="$(mktemp -d)"
  trap 'rm -rf "$src"' EXIT
  git ls-files -z --cached --others --exclude-standard \
    | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$src"
  python -m pip wheel -q --no-deps --no-build-isolation -w "$wheels" "$src" "$src/plugins/neural"
  # pytest for the gpu-marked tests, at the versions installed here
  pins="$(python -c "from importlib.metadata import version as v
print(' '.join(f'{d}=={v(d)}' for d in ('pytest', 'pluggy', 'iniconfig', 'pygments', 'packaging')))")"
  # shellcheck disable=SC2086
  python -m pip download -q --no-deps --only-binary=:all: -d "$wheels" $pins
  git log -1 --format='%H %s' > "$wheels/BUILT_FROM"
  git status --short --untracked-files=no >> "$wheels/BUILT_FROM"
  ls -l "$wheels"
  exit 0
fi

out="${1:?usage: bash benchmarks/gpu_check.sh --build | OUT [ARGS for gpu_check.py]}"
shift
mkdir -p "$out"
if ! ls "$wheels"/ltr_bench-*.whl "$wheels"/ltr_bench_neural-*.whl >/dev/null 2>&1; then
  echo "gpu_check: no wheels in $wheels; build them first: bash benchmarks/gpu_check.sh --build" >&2
  exit 2
fi
{ cat "$wheels/BUILT_FROM" 2>/dev/null || true; sha256sum "$wheels"/*.whl; } > "$out/wheels.txt"
site="$(mktemp -d)"
python3 -m pip install -q --no-index --no-deps --target "$site" "$wheels"/*.whl
export PYTHONPATH="$site"
LTR_BENCH_CACHE="$(mktemp -d)"  # generated folds are cached here, not in the user's folders
export LTR_BENCH_CACHE
python3 benchmarks/gpu_check.py --out "$out/gpu_check.json" "$@" 2>&1 | tee "$out/gpu_check.log"
