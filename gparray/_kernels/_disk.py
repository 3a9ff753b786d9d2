"""Where the kernel cache lives on disk, and the one way files are written into it
(a temporary file in the same folder, then an atomic rename: a reader never sees half a
file, and two processes compiling the same kernel both leave a whole one)."""
from __future__ import annotations

import os
import pathlib


def cache_dir() -> pathlib.Path:
    """The kernel cache folder (``GPARRAY_CACHE_DIR`` or ``~/.cache/gparray/kernels``)."""
    env = os.environ.get("GPARRAY_CACHE_DIR")
    if env:
        return pathlib.Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = pathlib.Path(xdg).expanduser() if xdg else pathlib.Path.home() / ".cache"
    return root / "gparray" / "kernels"


def _atomic_write(path: pathlib.Path, data: bytes) -> None:
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
