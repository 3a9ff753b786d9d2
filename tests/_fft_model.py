"""A NumPy model of cuFFT's advanced data layout, shared by the FFT tests of the CPU tier:
``run_step`` executes one planned cuFFT call (gparray/_engine/_fft_plan.py's Step) on flat
NumPy buffers, reading and writing through cuFFT's addressing, with its host loops; a real
transform's host loop must keep the real-side pointers aligned as complex elements (cuFFT
refuses misaligned ones at execution)."""
import math

import numpy as np

from gparray._engine import _fft_plan as fp


class Mem:
    """A flat buffer and a strided view into it (element offset and strides)."""

    def __init__(self, flat, offset, shape, strides):
        self.flat, self.offset, self.shape, self.strides = flat, offset, tuple(shape), tuple(strides)

    def view(self, shape=None):
        shape = self.shape if shape is None else tuple(shape)
        isz = self.flat.itemsize
        return np.lib.stride_tricks.as_strided(self.flat[self.offset:], shape,
                                               tuple(s * isz for s in self.strides), writeable=True)


def _addresses(ext, embed, stride):
    idx = np.indices(ext).reshape(len(ext), -1)
    lin = idx[0]
    for j in range(1, len(ext)):
        lin = lin * embed[j] + idx[j]
    return stride * lin


def run_step(step, src, dst, forward):
    n = list(step.n)
    in_ext, out_ext = list(n), list(n)
    if step.kind == fp.R2C:
        out_ext[-1] = n[-1] // 2 + 1
    if step.kind == fp.C2R:
        in_ext[-1] = n[-1] // 2 + 1
    iemb = step.inembed or tuple(in_ext)
    oemb = step.onembed or tuple(out_ext)
    if step.inembed is None:
        assert step.onembed is None and step.istride == 1 and step.ostride == 1
        assert step.idist == math.prod(in_ext) and step.odist == math.prod(out_ext)
    ia = _addresses(in_ext, iemb, step.istride)
    oa = _addresses(out_ext, oemb, step.ostride)
    results = []
    offs = [(0, 0)]
    for count, si, so in step.loops:
        offs = [(i + k * si, o + k * so) for i, o in offs for k in range(count)]
    real_offsets = {fp.R2C: [li for li, _ in offs], fp.C2R: [lo for _, lo in offs]}.get(step.kind, [])
    assert all(o % 2 == 0 for o in real_offsets), \
        "cuFFT would get a real-side pointer not aligned as a complex element (CUFFT_INVALID_VALUE)"
    for li, lo in offs:
        for b in range(step.batch):
            addr = src.offset + li + b * step.idist + ia
            assert addr.min() >= 0 and addr.max() < src.flat.size, "cuFFT would read outside its buffer"
            sig = src.flat[addr].reshape(in_ext)
            if step.kind == fp.C2C:
                res = np.fft.fftn(sig) if forward else np.fft.ifftn(sig) * math.prod(n)
            elif step.kind == fp.R2C:
                assert not np.iscomplexobj(sig)
                res = np.fft.rfftn(sig)
            else:
                res = np.fft.irfftn(sig, s=n, axes=tuple(range(len(n)))) * math.prod(n)
            waddr = dst.offset + lo + b * step.odist + oa
            assert waddr.min() >= 0 and waddr.max() < dst.flat.size, "cuFFT would write outside its buffer"
            results.append((waddr, res.reshape(-1)))
    if step.kind == fp.C2R:   # cuFFT may overwrite a C2R input
        for li, _ in offs:
            for b in range(step.batch):
                src.flat[src.offset + li + b * step.idist + ia] = np.nan
    written = np.concatenate([w for w, _ in results]) if results else np.zeros(0, int)
    assert len(np.unique(written)) == len(written), "two signals write one element"
    for waddr, res in results:
        dst.flat[waddr] = res
