#!/usr/bin/env bash
# Downloads the wheels the GPU machine lacks into one folder (default: device_wheels/, ignored by
# git), so that they travel with the working tree (`carry: ["device_wheels"]`) and
# benchmarks/device_install.sh installs them offline there.
#
#   bash benchmarks/prepare_device_wheels.sh [OUT_DIR]
#
# The GPU machine (Python 3.12, x86-64, no network) already has jax 0.11.2 (CUDA), flax, optax,
# chex, orbax-checkpoint, onnx, onnxruntime 1.30, tensorboard, numpy, scipy, pandas, matplotlib,
# lxml, requests, tqdm, psutil, rich, typer, click, nvidia-ml-py, py-cpuinfo, prometheus-client,
# cloudpickle, six, etils, msgpack, absl-py, ... (the package list of the device docs, KINDS.md).
# What actorq needs beyond that is pinned below: the closure of actorq's dependencies, resolved
# for cp312 manylinux with jax 0.11.2, minus what the machine has, at the versions this project
# is tested with. Left out on purpose, to stay under the 64 MiB that may travel:
#   * labmaze (4.9 MB): dm-control's locomotion mazes only; dropped from the trimmed dm-control's
#     requirements with the locomotion package.
#   * codecarbon's command-line and cloud-API dependencies (authlib, joserfc, cryptography, cffi,
#     pycparser, pydantic, pydantic-core, annotated-types, typing-inspection, questionary,
#     prompt-toolkit, wcwidth, arrow, tzdata, websockets: ~10 MB): the offline tracker actorq
#     uses imports none of them (checked: starting and stopping actorq.metrics.carbon's tracker
#     loads pandas, pycountry and rapidfuzz among codecarbon's dependencies, nothing else).
# That is why device_install.sh installs with --no-deps, then imports everything it needs.
#
# dm-control 1.0.50's wheel is 56 MB, mostly locomotion/manipulation assets; it is rebuilt here
# with the same name and version holding the suite only (see trim_dm_control below).
#
# Fails if the wheels exceed 64 MiB, or if they and the rest of the working tree that travels
# (tracked and untracked-not-ignored files) exceed 64 MiB together.
set -euo pipefail

OUT=${1:-device_wheels}
PY=${PYTHON:-python3}
LIMIT_MIB=64

PINS=(
  # actorq's direct dependencies missing there
  aqtp==0.9.0
  rlax==0.1.9
  distrax==0.1.9
  # distrax 0.1.9 requires tfp-nightly (the tensorflow-probability JAX substrate this project is
  # tested with; tensorflow-probability 0.25 predates jax 0.10)
  tfp-nightly==0.26.0.dev20261027
  gast==0.7.0
  decorator==5.3.1
  gymnasium==1.4.0
  farama-notifications==0.0.6
  ml-collections==1.1.0
  dm-env==1.6
  dm-tree==0.1.10
  tensorboardX==2.6.5
  codecarbon==3.3.2
  pycountry==26.2.16
  rapidfuzz==3.14.6
  # mujoco<4: dm-control 1.0.50 fails on mujoco 4 (and needs >= 3.17.0)
  mujoco==3.17.0
  websockets==17.4
  pyopengl==3.1.10
  glfw==2.11.0
)
DM_CONTROL=dm-control==1.0.50

PIP_FLAGS=(
  --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux_2_24_x86_64 --platform manylinux_2_27_x86_64
  --platform manylinux_2_28_x86_64
)

mkdir -p "$OUT"
rm -f "$OUT"/*.whl  # one version of each package: two would stop the install there
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "downloading ${#PINS[@]} wheels + $DM_CONTROL into $OUT"
"$PY" -m pip download --quiet --disable-pip-version-check -d "$OUT" "${PIP_FLAGS[@]}" "${PINS[@]}"
"$PY" -m pip download --quiet --disable-pip-version-check -d "$TMP" "${PIP_FLAGS[@]}" "$DM_CONTROL"

# trim_dm_control: rebuild dm-control's wheel with the suite only, same file name and version.
# Removed: locomotion (39 MB of assets; needs labmaze), manipulation, the Blender exporter, the
# suite's dog assets (the dog domain, not a paper task, fails to load without them; importing the
# suite does not read them), mujoco/testing assets, kinova meshes, tests and the overview image.
# RECORD is rewritten with the remaining files' hashes, and labmaze leaves METADATA.
"$PY" - "$TMP" "$OUT" <<'EOF'
import base64
import hashlib
import sys
import zipfile
from pathlib import Path

src_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
(src,) = src_dir.glob("dm_control-*.whl")
DROP_PREFIXES = (
    "dm_control/locomotion/",
    "dm_control/manipulation/",
    "dm_control/blender/",
    "dm_control/suite/dog_assets/",
    "dm_control/mujoco/testing/assets/",
    "dm_control/third_party/kinova/",
)
DROP_FILES = ("dm_control/suite/all_domains.png",)


def dropped(name: str) -> bool:
    return (name.startswith(DROP_PREFIXES) or name in DROP_FILES
            or name.endswith("_test.py"))


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


with zipfile.ZipFile(src) as zin:
    names = [i.filename for i in zin.infolist() if not i.is_dir()]
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    record_name = f"{dist_info}/RECORD"
    kept = [n for n in names if not dropped(n) and n != record_name]
    files = {n: zin.read(n) for n in kept}
meta_name = f"{dist_info}/METADATA"
meta = files[meta_name].decode()
lines = [ln for ln in meta.split("\n") if not ln.startswith("Requires-Dist: labmaze")]
files[meta_name] = "\n".join(lines).encode()
record = [f"{n},{record_hash(d)},{len(d)}" for n, d in files.items()] + [f"{record_name},,"]
files[record_name] = ("\n".join(record) + "\n").encode()
dest = out_dir / src.name
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zout:
    for name, data in files.items():
        zout.writestr(name, data)
with zipfile.ZipFile(dest) as check:
    bad = check.testzip()
    if bad is not None:
        sys.exit(f"error: the trimmed wheel is corrupt at {bad}")
print(f"trimmed {src.name}: {src.stat().st_size / 2**20:.2f} MiB -> "
      f"{dest.stat().st_size / 2**20:.2f} MiB ({len(names) - len(kept)} files dropped)")
EOF

# Sizes, and the limit of what may travel to the device machine.
"$PY" - "$OUT" "$LIMIT_MIB" <<'EOF'
import subprocess
import sys
from pathlib import Path

out, limit_mib = Path(sys.argv[1]), float(sys.argv[2])
wheels = sorted(out.glob("*.whl"), key=lambda p: -p.stat().st_size)
total = sum(p.stat().st_size for p in wheels)
for p in wheels:
    print(f"{p.stat().st_size / 2**20:8.2f} MiB  {p.name}")
print(f"{total / 2**20:8.2f} MiB  total, {len(wheels)} wheels ({total / 1e6:.1f} MB)")
if total > limit_mib * 2**20:
    sys.exit(f"error: the wheels take {total / 2**20:.2f} MiB, over the {limit_mib:g} MiB that "
             "may travel to the device machine")
try:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, capture_output=True).stdout.split(b"\0")
except (OSError, subprocess.CalledProcessError):
    print("(not in a git checkout: the working tree's share was not checked)")
    sys.exit(0)
tree = sum(Path(n.decode()).stat().st_size for n in listed if n and Path(n.decode()).is_file())
both = tree + total
print(f"{tree / 2**20:8.2f} MiB  working tree that travels (tracked + untracked, not ignored)")
print(f"{both / 2**20:8.2f} MiB  with the wheels (limit {limit_mib:g} MiB)")
if both > limit_mib * 2**20:
    sys.exit(f"error: wheels + working tree = {both / 2**20:.2f} MiB, over {limit_mib:g} MiB")
EOF
