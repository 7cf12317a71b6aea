#!/usr/bin/env bash
# Installs, offline, the wheels from benchmarks/prepare_device_wheels.sh and then this project
# (editable, no dependencies), on the GPU machine; run from the repository root there:
#
#   bash benchmarks/device_install.sh [WHEEL_DIR]      (default: device_wheels)
#   export PYTHONPATH=/tmp/actorq_site:$PWD            (harmless when the install went in place)
#
# --no-deps: the wheel set leaves out, on purpose, dependencies that nothing actorq runs imports
# (labmaze, codecarbon's CLI/cloud packages; see prepare_device_wheels.sh), so pip's resolver
# would refuse it. The import check at the end is what proves the set complete.
# If the Python environment cannot be written to, the wheels go to $DEVICE_SITE
# (/tmp/actorq_site) instead, and the repository is used from $PWD.
set -euo pipefail

WHEELS=${1:-device_wheels}
PY=${PYTHON:-python3}
SITE=${DEVICE_SITE:-/tmp/actorq_site}
PIP=("$PY" -m pip install --quiet --disable-pip-version-check --no-index --no-deps)
if ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  echo "error: no wheels in $WHEELS: run benchmarks/prepare_device_wheels.sh where pip works" \
       "and carry the folder" >&2
  exit 1
fi
start=$(date +%s)
if ! "${PIP[@]}" --find-links "$WHEELS" --no-compile "$WHEELS"/*.whl; then
  echo "installing into the environment failed: installing into $SITE instead" >&2
  "${PIP[@]}" --find-links "$WHEELS" --no-compile --upgrade --target "$SITE" "$WHEELS"/*.whl
fi
# setuptools and wheel are on the machine; without build isolation nothing is fetched.
if ! "${PIP[@]}" --no-build-isolation -e .; then
  echo "the editable install failed: the repository will be used from $PWD (PYTHONPATH)" >&2
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
MUJOCO_GL=${MUJOCO_GL:-disable} "$PY" - <<'EOF'
import importlib

for name in ("aqt.jax.v2.aqt_dot_general", "rlax", "distrax", "gymnasium", "ml_collections",
             "dm_env", "tree", "tensorboardX", "codecarbon", "mujoco", "dm_control.suite",
             "onnx", "onnxruntime", "matplotlib", "pandas", "actorq", "launchpad_programs"):
    importlib.import_module(name)
from actorq.envs import make_environment
from actorq.metrics.carbon import supported_country_codes

for task in ("walker_stand", "cartpole"):
    make_environment(task, seed=0).reset()
assert "USA" in supported_country_codes()
import jax

print("device install ok:", jax.__version__, jax.devices())
EOF
echo "installed in $(( $(date +%s) - start )) s"
