"""Unpack .tar.zst archives into a folder on the lent machine: ``tar --zstd`` where the
machine's tar and zstd can, else the ``zstandard`` wheel carried in ``.whl``.

    python3 benchmarks/h200/unpack.py ARCHIVE.tar.zst [...] DEST
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path


def unpack(archive: Path, dest: Path) -> str:
    done = subprocess.run(["tar", "--zstd", "-xf", str(archive), "-C", str(dest)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode == 0:
        return "tar --zstd"
    import zstandard

    with (
        archive.open("rb") as f,
        zstandard.ZstdDecompressor().stream_reader(f) as r,
        tarfile.open(fileobj=r, mode="r|") as tar,
    ):
        tar.extractall(dest, filter="data")
    return "zstandard"


def main() -> int:
    *archives, dest = (Path(a) for a in sys.argv[1:])
    dest.mkdir(parents=True, exist_ok=True)
    for a in archives:
        print(f"{a.name}: {unpack(a, dest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
