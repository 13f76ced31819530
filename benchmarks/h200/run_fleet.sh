#!/usr/bin/env bash
# cltui fleet on the H200 machine, through the transport template (no sshd there)
# Bundles: `cltui export CAPTURE RANGE -o .h200/bundles/NAME` here, carried with .whl (the wheels:
# pyopencl, pytools, platformdirs, siphash24, click, rich, markdown-it-py, mdurl, pygments, pcpp,
# pyyaml, typing_extensions for cp312); results land in $OUT (benchmarks/results/h200-fleet/).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/icd; echo /usr/lib/libnvidia-opencl.so > /tmp/icd/nv.icd; export OCL_ICD_VENDORS=/tmp/icd
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import sys,numpy,pyopencl;print(sys.version.split()[0],numpy.__version__,pyopencl.__version__)"; } > $OUT/machine.txt 2>&1
for b in "${1:-.h200/bundles}"/*/; do
  n=$(basename $b)
  ( time python3 -m cltui fleet $b --hosts benchmarks/h200/fleet-inventory.ini --ulp 4 --json --junit $OUT/$n.junit.xml ) > $OUT/$n.fleet.json 2> $OUT/$n.fleet.err
  echo "$n first rc=$?"
  ( time python3 -m cltui fleet $b --hosts benchmarks/h200/fleet-inventory.ini --ulp 4 ) > $OUT/$n.fleet.txt 2> $OUT/$n.fleet2.err
  echo "$n second rc=$?"
done
