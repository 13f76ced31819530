#!/usr/bin/env bash
# Both runners on NVIDIA over the same bundles: their check results must agree (never CI).
#   bash benchmarks/h200/run_runners.sh   (in the repository root on the lent machine; bundles in .h200/, wheels in .whl/)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site
mkdir -p /tmp/icd; echo /usr/lib/libnvidia-opencl.so > /tmp/icd/nv.icd; export OCL_ICD_VENDORS=/tmp/icd
export PATH=$PATH:/opt/torch/.venv/bin
R=$OUT/res; mkdir -p "$R"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, numpy, pyopencl; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'pyopencl', pyopencl.__version__)"
  cmake --version | head -1; } > "$R/machine.txt" 2>&1
for b in .h200/images_svm_pocl-0-8 .h200/pyopencl_lib_pocl-14-38 .h200/pyopencl_lib_pocl-0-5 .h200/opencv_tapi_pocl-41-64 ".h200/with space/rng bundle"; do
  name=$(basename "$b" | tr ' ' _)
  (cd "$b" && python3 -W ignore replay.py --device nvidia --ulp 4 --json) > "$R/$name.py.json" 2> "$R/$name.py.err"
  echo "$name python rc=$?" >> "$R/rc.txt"
  (cd "$b" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j 8 >/dev/null && ./build/replay --device nvidia --ulp 4 --json) > "$R/$name.cpp.json" 2> "$R/$name.cpp.err"
  echo "$name cpp rc=$?" >> "$R/rc.txt"
done
(cd ".h200/with space/rng bundle/build" && ./replay --bundle .. --device nvidia --ulp 4) > "$R/space_from_build.txt" 2>&1
echo "space from build rc=$?" >> "$R/rc.txt"
tar czf "$OUT/res.tgz" -C "$OUT" res && rm -rf "$R"
