#!/usr/bin/env bash
# The cross-vendor run on the lent NVIDIA H200 machine (never CI).
#   bash benchmarks/h200/run_h200.sh BUNDLES_DIR OUT_DIR
# BUNDLES_DIR holds bundles made here by `cltui export` (see benchmarks/h200/README.md).
# Needs pyopencl (wheels installed to PYTHONPATH) and NVIDIA's OpenCL ICD:
#   mkdir -p /tmp/icd; echo /usr/lib/libnvidia-opencl.so > /tmp/icd/nv.icd; export OCL_ICD_VENDORS=/tmp/icd
set -uo pipefail
bundles=$1; out=$2
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, numpy, pyopencl; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'pyopencl', pyopencl.__version__)"
  cmake --version | head -1; g++ --version | head -1
} > "$out/machine.txt" 2>&1
for b in "$bundles"/*/; do
  name=$(basename "$b")
  echo "== $name"
  ( cd "$b" && python3 -W ignore replay.py --list-devices ) > "$out/$name.devices.txt" 2>&1
  ( cd "$b" && python3 -W ignore replay.py --device nvidia --repeat 20 --ulp 4 --json ) \
      > "$out/$name.nvidia.python.json" 2> "$out/$name.nvidia.python.err"
  echo "python rc=$?"
  ( cd "$b" && cmake -S . -B /tmp/build-"$name" -DCMAKE_BUILD_TYPE=Release >/dev/null \
      && cmake --build /tmp/build-"$name" -j 8 >/dev/null \
      && /tmp/build-"$name"/replay --device nvidia --repeat 20 --ulp 4 --json ) \
      > "$out/$name.nvidia.cpp.json" 2> "$out/$name.nvidia.cpp.err"
  echo "cpp rc=$?"
  python3 -W ignore "$(dirname "$0")/upload.py" "$b" --device nvidia --scale-mb 256 \
      > "$out/$name.upload.json" 2> "$out/$name.upload.err"
  echo "upload rc=$?"
done
