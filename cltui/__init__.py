"""cltui: a terminal capture browser, replayer and exporter for OpenCL Intercept Layer dumps."""

import os

__version__ = "0.1.0"

# cltui makes no BLAS call; numpy's OpenBLAS would still start a thread per core at import and
# spin them (about 0.08 CPU s per process on 2 cores, measured), in the CLI and in every replay
# child: noise beside the kernels it times.  A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
