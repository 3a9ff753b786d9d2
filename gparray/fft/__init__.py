"""The ``fft`` extension of the standard on cuFFT: ``fft``, ``ifft``, ``fftn``, ``ifftn``,
``rfft``, ``irfft``, ``rfftn``, ``irfftn``, ``hfft``, ``ihfft``, ``fftfreq``, ``rfftfreq``,
``fftshift``, ``ifftshift``; and control of the cuFFT plan cache (``clear_plan_cache``,
``get_plan_cache_info``, ``get/set_plan_cache_max_size``, ``get/set_plan_cache_max_memory``).

Importing it touches no GPU and loads no cuFFT: the first transform does."""
from ._cache import (clear_plan_cache, get_plan_cache_info, get_plan_cache_max_memory, get_plan_cache_max_size,
                     set_plan_cache_max_memory, set_plan_cache_max_size)
from ._helpers import fftfreq, fftshift, ifftshift, rfftfreq
from ._transforms import fft, fftn, hfft, ifft, ifftn, ihfft, irfft, irfftn, rfft, rfftn

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift",
           "clear_plan_cache", "get_plan_cache_info", "get_plan_cache_max_size", "set_plan_cache_max_size",
           "get_plan_cache_max_memory", "set_plan_cache_max_memory"]
