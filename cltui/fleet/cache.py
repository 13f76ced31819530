"""The content-addressed cache on a host: each file of a bundle stored once by its sha256.

On the host, under the work folder: ``objects/<sha256>`` (every file a bundle ever brought,
data and code alike), ``bundles/<id>/`` (a bundle's tree, hard links into ``objects``; ``id``
is the sha256 of the bundle's file list, content only: the manifest without its creation
time, not the README) and ``builds/<key>/`` (the C++ runner built once per
content of its sources).  :func:`sync` asks first whether the host holds the bundle whole,
then which of its files it lacks, and sends only those, as one gzip'd tar stream; the host
checks each file's sha256 before taking it, so a broken transfer leaves nothing behind.
Hosts may share the work folder (an NFS home, one machine listed twice): a bundle's tree
and a C++ build are made in a private temporary folder and published by one atomic rename
(:func:`publish`); a published tree is never removed or rewritten by a writer, so readers
never see half of one and writers of the same content agree.
After a new bundle is made whole there, the host keeps the :data:`KEEP_BUNDLES` most recently
used bundles (a run touches its bundle) and removes the contents no bundle links any more
(an hour after they arrived, so that a concurrent run's are left alone).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import shlex
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cltui.capture.safeopen import MAX_JSON, open_regular, read_text_limited
from cltui.errors import CltuiError
from cltui.export.bundle import safe_relpath, sha256_file
from cltui.fleet.scratch import mark
from cltui.fleet.transport import CommandResult, Transport
from cltui.progress import CancelToken

__all__ = [
    "BundleFiles", "CacheError", "SyncStats", "bundle_files", "publish", "shell_path", "sync",
]

CPP_SOURCES = ("CMakeLists.txt", "replay.cpp")
KEEP_BUNDLES = 20  # bundles kept on a host (the most recently used); their contents too


class CacheError(CltuiError):
    """A bundle that cannot be sent: damaged, or not a bundle."""


@dataclass(frozen=True)
class BundleFiles:
    """A bundle's files: ``(relative path, sha256, size)``, its id, its C++ build key."""

    root: Path
    files: tuple[tuple[str, str, int], ...]
    id: str
    cpp_key: str | None  # None: the bundle has no replay.cpp

    @property
    def total_bytes(self) -> int:
        return sum(size for _r, _h, size in self.files)


@dataclass
class SyncStats:
    """What one sync did: whether the host held the bundle, files and bytes sent."""

    had_bundle: bool = False
    files_sent: int = 0
    bytes_sent: int = 0  # of the gzip'd tar stream


def bundle_files(root: Path) -> BundleFiles:
    """The files of the bundle at ``root`` (those its ``SHA256SUMS`` lists, and itself), each
    hashed here and held to its listed sum."""
    sums = root / "SHA256SUMS"
    if not (root / "manifest.json").is_file() or not sums.is_file():
        raise CacheError(f"{root} is not a cltui bundle (no manifest.json or SHA256SUMS)")
    files: list[tuple[str, str, int]] = []
    try:
        listed = read_text_limited(sums, MAX_JSON)
    except (OSError, UnicodeDecodeError) as exc:
        raise CacheError(f"{sums}: cannot read it: {exc}") from None
    for n, line in enumerate(listed.splitlines(), 1):
        if not line.strip():
            continue
        digest, _, rel = line.partition("  ")
        try:
            rel = safe_relpath(rel)
        except ValueError as exc:
            raise CacheError(f"{sums}:{n}: {exc}") from None
        path = root / rel
        if path.is_symlink() or not path.is_file():
            raise CacheError(f"{sums}:{n}: {rel} is missing from the bundle")
        actual = sha256_file(path)
        if actual != digest.strip():
            raise CacheError(f"{path} does not match its sum in SHA256SUMS: the bundle is damaged")
        files.append((rel, actual, path.stat().st_size))
    # the id: the content that replays (the manifest without its creation time; not the
    # README, which says when it was made, nor the SHA256SUMS that follows from the rest),
    # so an export of the same range made again is the same bundle
    listing = "".join(f"{_timeless(root, r, h)} {r}\n" for r, h, _s in sorted(files)
                      if r != "README.md").encode()
    files.append(("SHA256SUMS", sha256_file(sums), sums.stat().st_size))
    files.sort()
    cpp = [(r, h) for r, h, _s in files if r in CPP_SOURCES or r.startswith("cpp/")]
    cpp_key = None
    if any(r == "replay.cpp" for r, _h in cpp):
        cpp_key = hashlib.sha256("".join(f"{h} {r}\n" for r, h in cpp).encode()).hexdigest()
    return BundleFiles(root, tuple(files), hashlib.sha256(listing).hexdigest(), cpp_key)


_CREATED = re.compile(rb'"created": *"[^"]*"')


def _timeless(root: Path, rel: str, digest: str) -> str:
    """``digest`` of a bundle file, the manifest's taken without its ``created`` time."""
    if rel != "manifest.json":
        return digest
    try:
        with open_regular(root / rel) as f:
            data = f.read(MAX_JSON + 1)
    except OSError:
        return digest
    return hashlib.sha256(_CREATED.sub(b'"created": ""', data)).hexdigest()


def shell_path(path: str) -> str:
    """A host path as a shell word: ``~`` and ``~/x`` become ``"$HOME"/x``; the rest quoted."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


_SUM = 'if command -v sha256sum >/dev/null 2>&1; then SUM=sha256sum; else SUM="shasum -a 256"; fi'


def _missing_script(workdir: str) -> str:
    return (
        f"W={shell_path(workdir)}; mkdir -p \"$W/objects\" || exit 3; "
        'while read -r h; do [ -f "$W/objects/$h" ] || echo "$h"; done'
    )


def _upload_script(workdir: str, bundle_id: str, owner: str = "") -> str:
    # a fixed number of processes per upload, not several per file (a bundle's ~60 files
    # made ~500 forks on the host each time, measured): one sha256 over every object, one
    # chmod and one mv of them all (``find -exec ... +``), the tree's folders and links made
    # with shell builtins and one ``ln`` per file
    return "\n".join([
        "set -u",
        f"W={shell_path(workdir)}; ID={bundle_id}",
        'mkdir -p "$W/objects" "$W/bundles" || exit 3',
        'T=$(mktemp -d "$W/incoming.XXXXXX") || exit 3',
        mark("T", owner),
        "trap 'rm -rf \"$T\"' EXIT",
        _SUM,
        'cd "$T" && tar -xzf - || { echo "cltui: the bundle arrived broken" >&2; exit 3; }',
        'mkdir -p o && (cd o && find . -type f -exec $SUM {} +) > sums || exit 3',
        'while read -r s f; do h=${f#\\*}; h=${h#./}',  # "*./x": a binary-mode sum
        '  [ "$s" = "$h" ] || { echo "cltui: $h arrived damaged" >&2; exit 3; }',
        'done < sums || exit 3',
        'find o -type f -exec chmod a-w {} + || exit 3',
        '(cd o && find . -type f -exec sh -c \'mv -f "$@" "$0"\' "$W/objects" {} +) || exit 3',
        'B="$W/bundles/$ID"; [ -f "$B/.complete" ] && exit 0',
        'S="$T/tree"; mkdir "$S"; made=.',
        'while read -r h p; do case $p in */*) d=${p%/*} ;; *) d=. ;; esac',
        '  [ "$d" = "$made" ] || mkdir -p "$S/$d" || exit 3; made=$d',
        '  ln "$W/objects/$h" "$S/$p" 2>/dev/null || cp "$W/objects/$h" "$S/$p" || exit 3',
        'done < index || exit 3',
        ': > "$S/.complete"',
        publish("S", "B"),
        '[ -f "$B/.complete" ] || exit 3',
        f'cd "$W/bundles" && ls -t | tail -n +{KEEP_BUNDLES + 1} | while read -r old; do '
        'rm -rf "./$old"; done',
        'find "$W/objects" -type f -links 1 -mmin +60 -exec rm -f {} + 2>/dev/null; true',
    ])  # fmt: skip


def publish(src: str, dest: str) -> str:
    """The shell line that publishes the finished tree ``$src`` as ``$dest`` by one atomic
    rename, unless ``$dest`` is there already (another run, maybe on another host of a
    shared home, published the same content first: it stays, and ``$src`` is left to its
    clean-up).  ``mv -T`` refuses to move into an existing folder; where it is missing
    (BSD, macOS) the plain ``mv`` is tried only when ``$dest`` is not there."""
    s, d = f'"${src}"', f'"${dest}"'
    return f"mv -T {s} {d} 2>/dev/null || {{ [ -e {d} ] || mv {s} {d}; }} 2>/dev/null"


def _tar_stream(bundle: BundleFiles, missing: set[str]) -> Iterator[bytes]:
    """A gzip'd tar of ``o/<sha256>`` for each missing content and ``index`` (the tree)."""
    index = "".join(f"{h} {r}\n" for r, h, _s in bundle.files).encode()
    with tempfile.TemporaryFile() as tmp:
        gz = gzip.GzipFile(fileobj=tmp, mode="wb", compresslevel=1, mtime=0)
        with tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            done: set[str] = set()
            for rel, digest, _size in bundle.files:
                if digest in missing and digest not in done:
                    done.add(digest)
                    info = tar.gettarinfo(str(bundle.root / rel), arcname=f"o/{digest}")
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mode = 0o644
                    info.mtime = int(time.time())  # its arrival: the host's clean-up reads it
                    with open_regular(bundle.root / rel) as f:  # as bundle_files held it
                        tar.addfile(info, f)
            info = tarfile.TarInfo("index")
            info.size = len(index)
            tar.addfile(info, io.BytesIO(index))
        gz.close()
        tmp.seek(0)
        while chunk := tmp.read(1 << 20):
            yield chunk


def sync(
    transport: Transport,
    bundle: BundleFiles,
    workdir: str,
    *,
    has_bundle: bool,
    timeout: float,
    cancel: CancelToken | None = None,
    owner: str = "",
) -> tuple[SyncStats, CommandResult | None]:
    """Make ``bundles/<id>`` whole on the host, sending only what it lacks; the stats, and
    the failed command (None when it worked).  ``owner``: the run's keeper on the host
    (:mod:`cltui.fleet.scratch`), written into the incoming folder."""
    stats = SyncStats(had_bundle=has_bundle)
    if has_bundle:
        return stats, None
    wanted = sorted({h for _r, h, _s in bundle.files})
    res = transport.run(_missing_script(workdir), ("\n".join(wanted) + "\n").encode(),
                        timeout=timeout, cancel=cancel)
    if res.rc != 0:
        return stats, res
    missing = {ln.strip() for ln in res.out.decode("ascii", "replace").splitlines()} & set(wanted)
    stats.files_sent = len(missing)
    before = transport.bytes_sent
    res = transport.run(_upload_script(workdir, bundle.id, owner), _tar_stream(bundle, missing),
                        timeout=timeout, cancel=cancel)
    stats.bytes_sent = transport.bytes_sent - before
    return stats, (None if res.rc == 0 else res)
