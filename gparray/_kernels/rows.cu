// gparray kernel family "rows": binary elementwise ops whose output is a C-contiguous
// (R, C) matrix with rows shorter than one chunk of gp_binary_rows (elementwise.cuh), the
// shape of `x - x.max(axis=1, keepdims=True)` or `x == m` over a (200000, 100) matrix.
// Instances are named by gparray/_engine/_elementwise.py (_binary_2d), e.g.
//   gp_binary_short_rows<op_equal, bool, float, float, float, int>
//
// gp_binary_rows gives each block a chunk of GP_ROWS_U * GP_BLOCK * V columns of a few
// rows: with 100 columns most of its threads have nothing to do. Here the output is walked
// as the flat array it is: each thread owns GP_SHORT_U runs of V consecutive outputs (one
// vector store where the run is aligned), finds the row and column of its run's first
// element with one division, and walks the operands from there through their (row, column)
// element strides (any sign, 0 for a broadcast), stepping to the next row when the column
// reaches C. Loads of a run are independent of each other and issued before the stores.
#include "gp/elementwise.cuh"
#include "gp/functors.cuh"
#include "gp/functors_int.cuh"
#include "gp/functors_math.cuh"

#ifndef GP_SHORT_U
#define GP_SHORT_U 2
#endif

namespace gp {
// outputs per thread run: 4 (16-byte and smaller stores for <= 4-byte types), 2 for 8-byte
// types, 1 for 16-byte ones (complex128)
template <class T>
struct short_run {
    static constexpr int value = sizeof(T) >= 16 ? 1 : (sizeof(T) == 8 ? 2 : 4);
};
}  // namespace gp

// out[i, j] = Op(a[i * sa0 + j * sa1], b[i * sb0 + j * sb1]) for the n = R * C outputs;
// IdxT (int or long long) holds every flat output position.
template <class Op, class TO, class CT, class TA, class TB, class IdxT>
__global__ void __launch_bounds__(GP_BLOCK)
    gp_binary_short_rows(TO* __restrict__ out, const TA* __restrict__ a, const TB* __restrict__ b, IdxT n, IdxT C,
                         long long sa0, long long sa1, long long sb0, long long sb1) {
    constexpr int V = gp::short_run<TO>::value;
    constexpr int U = GP_SHORT_U;
    Op op;
    // from one past a row's last column to the next row's first
    const long long wa = sa0 - static_cast<long long>(C) * sa1;
    const long long wb = sb0 - static_cast<long long>(C) * sb1;
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_BLOCK * V * U);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const IdxT f = base + (static_cast<IdxT>(u) * GP_BLOCK + static_cast<IdxT>(threadIdx.x)) * V;
        if (f < n) {
            const IdxT r = f / C;
            IdxT c = f - r * C;
            long long oa = static_cast<long long>(r) * sa0 + static_cast<long long>(c) * sa1;
            long long ob = static_cast<long long>(r) * sb0 + static_cast<long long>(c) * sb1;
            const int m = n - f < static_cast<IdxT>(V) ? static_cast<int>(n - f) : V;
            CT xa[V], xb[V];
#pragma unroll
            for (int j = 0; j < V; ++j) {
                if (j < m) {
                    xa[j] = gp::cast<CT>(a[oa]);
                    xb[j] = gp::cast<CT>(b[ob]);
                    oa += sa1;
                    ob += sb1;
                    if (++c == C) {
                        c = 0;
                        oa += wa;
                        ob += wb;
                    }
                }
            }
            if (m == V && gp::aligned_for<V>(out + f)) {
                gp::vec_t<TO, V> vo;
#pragma unroll
                for (int j = 0; j < V; ++j) vo.v[j] = gp::cast<TO>(op(xa[j], xb[j]));
                *reinterpret_cast<gp::vec_t<TO, V>*>(out + f) = vo;
            } else {
#pragma unroll
                for (int j = 0; j < V; ++j)
                    if (j < m) out[f + j] = gp::cast<TO>(op(xa[j], xb[j]));
            }
        }
    }
}
