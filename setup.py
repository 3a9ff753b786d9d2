"""Build script: everything is in pyproject.toml except the one optional C extension.

``gparray._native._claunch`` packs kernel parameters and calls cuLaunchKernel from C (see
the file's header). It needs only a C compiler and Python's headers, no CUDA toolkit; when
it cannot be built the install still succeeds and launches go through the Python path.
"""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension(
        "gparray._native._claunch",
        sources=["gparray/_native/_claunch.c", "gparray/_native/_claunch_ops.c",
                 "gparray/_native/_claunch_block.c", "gparray/_native/_claunch_join.c",
                 "gparray/_native/_claunch_prof.c", "gparray/_native/_claunch_table.c",
                 "gparray/_native/_claunch_user.c", "gparray/_native/_claunch_reduce.c",
                 "gparray/_native/_claunch_blas.c", "gparray/_native/_claunch_fft.c",
                 "gparray/_native/_claunch_stubs.c"],
        depends=["gparray/_native/_claunch.h"],
        libraries=["dl"],
        extra_compile_args=["-O2"],
        optional=True,
    ),
])
