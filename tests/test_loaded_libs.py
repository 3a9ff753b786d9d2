"""CPU tier: gparray/_engine/_loaded_libs.py, how the engines find the CUDA libraries CuPy
loaded (the candidates mapped into the process)."""
from gparray._engine import _loaded_libs


def test_mapped_lists_each_matching_path_once_sorted(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x/libcublas.so.13.1.0\n"
        "7f01-7f02 r--p 00001000 08:01 1 /usr/lib/x/libcublas.so.13.1.0\n"
        "7f02-7f03 r-xp 00000000 08:01 2 /opt/a/libcublasLt.so.13\n"
        "7f03-7f04 r-xp 00000000 08:01 3 /opt/b/libcublas.so.12\n"
        "7f04-7f05 rw-p 00000000 00:00 0 \n"
        "7f05-7f06 r-xp 00000000 08:01 4 /opt/libcusolver.so.12\n"
        "7ffd-7ffe rw-p 00000000 00:00 0 [stack]\n")
    assert _loaded_libs.mapped("libcublas.so", str(maps)) == ["/opt/b/libcublas.so.12",
                                                               "/usr/lib/x/libcublas.so.13.1.0"]
    assert _loaded_libs.mapped("libcufft.so", str(maps)) == []


def test_mapped_without_a_maps_file(tmp_path):
    assert _loaded_libs.mapped("libcublas.so", str(tmp_path / "missing")) == []
