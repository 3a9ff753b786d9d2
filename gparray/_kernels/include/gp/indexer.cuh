// gparray: N-d strided indexing. Parameters travel by value as one int64 array:
//   v[0] = ndim, v[1 .. ND] = shape, then NARG blocks of ND element strides.
// Dimensions are merged on the host first (gparray/_engine/_shapes.py), so ndim is small.
#pragma once
#include "types.cuh"

namespace gp {

template <int N>
struct I64Array {
    long long v[N];
};

template <int NARG, int ND>
struct StridedParams {
    static constexpr int size = 1 + ND * (NARG + 1);
    I64Array<size> p;
};

// offsets[k] (in elements) of linear C-order position i for every operand k. For ND <= 16
// the loop is unrolled over ND with a guard, so every parameter index is a constant: the
// parameters stay in the constant bank (a runtime index would copy them to the stack).
template <int NARG, int ND, class IdxT>
__device__ __forceinline__ void strided_offsets(const StridedParams<NARG, ND>& prm, IdxT i,
                                                IdxT (&off)[NARG]) {
    const long long* v = prm.p.v;
    const int nd = static_cast<int>(v[0]);
#pragma unroll
    for (int k = 0; k < NARG; ++k) off[k] = 0;
    if constexpr (ND <= 16) {
#pragma unroll
        for (int d = ND - 1; d >= 0; --d) {
            if (d < nd) {
                const IdxT extent = static_cast<IdxT>(v[1 + d]);
                const IdxT q = i / extent;
                const IdxT idx = i - q * extent;
                i = q;
#pragma unroll
                for (int k = 0; k < NARG; ++k) off[k] += idx * static_cast<IdxT>(v[1 + ND * (k + 1) + d]);
            }
        }
    } else {
#pragma unroll 4
        for (int d = nd - 1; d >= 0; --d) {
            const IdxT extent = static_cast<IdxT>(v[1 + d]);
            const IdxT q = i / extent;
            const IdxT idx = i - q * extent;
            i = q;
#pragma unroll
            for (int k = 0; k < NARG; ++k) off[k] += idx * static_cast<IdxT>(v[1 + ND * (k + 1) + d]);
        }
    }
}

}  // namespace gp
