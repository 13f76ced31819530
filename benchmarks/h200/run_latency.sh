#!/usr/bin/env bash
# Issue 16 on the lent NVIDIA H200 machine (never CI): cltui latency on the shared captures'
# ranges and the synthetic known cases, and CUDA's launch cost on the same machine.
#   bash benchmarks/h200/run_latency.sh CAPTURES_DIR OUT_DIR [REPEAT]
# Needs pyopencl (wheels installed to PYTHONPATH), NVIDIA's OpenCL ICD, cmake, c++, nvcc:
#   mkdir -p /tmp/icd; echo /usr/lib/libnvidia-opencl.so > /tmp/icd/nv.icd; export OCL_ICD_VENDORS=/tmp/icd
set -uo pipefail
caps=$1; out=$2; repeat=${3:-40}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
  echo "cpus $(nproc)"
  python3 -c "import sys, numpy, pyopencl; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'pyopencl', pyopencl.__version__)"
  cmake --version | head -1; c++ --version | head -1; nvcc --version | tail -1
} > "$out/machine.txt" 2>&1
python3 -m cltui devices > "$out/devices.txt" 2>&1
( nvcc -O2 -o /tmp/cuda_launch "$here/cuda_launch.cu" && /tmp/cuda_launch ) > "$out/cuda_launch.json" 2>&1
echo "cuda rc=$?"
PYTHONUNBUFFERED=1 python3 -W ignore benchmarks/bench_latency.py --device "${DEVICE:-nvidia}" --repeat "$repeat" \
    --tiny 200 --spin-n 64 ${SPIN:---spin-global 131072 --spin-iters 40000} --captures --capture-root "$caps" --timeout "${TIMEOUT:-120}" \
    --out "$out/bench_latency.${DEVICE:-nvidia}.json" > /dev/null 2> "$out/bench_latency.err"
echo "bench rc=$?"
for spec in heat2d_large:122380-122419 pyopencl_lib_pocl:14-38 pyopencl_lib_oclgrind:14-38 pyopencl_lib_coldcache:14-38 opencv_tapi_pocl:41-55 images_svm_pocl:0-8; do
  name=${spec%%:*}; rng=${spec#*:}
  dir="$caps/$name"; [ -d "$dir" ] || dir="cltui/demo/$name"
  python3 -W ignore -m cltui latency "$dir" "$rng" -d "${DEVICE:-nvidia}" --repeat "${TEXT_REPEAT:-$repeat}" \
      > "$out/$name-$rng.${DEVICE:-nvidia}.txt" 2>&1
  echo "$name text rc=$?"
done
python3 -W ignore -m cltui latency "$caps/pyopencl_lib_pocl" 14-38 -d "${DEVICE:-nvidia}" --repeat 5 \
    --trace "$out/trace.pyopencl_lib_pocl-14-38.${DEVICE:-nvidia}.json" --json \
    > "$out/pyopencl_lib_pocl-14-38.${DEVICE:-nvidia}.json" 2> /dev/null
echo "trace rc=$?"
