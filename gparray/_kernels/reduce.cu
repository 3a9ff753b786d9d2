// gparray kernel family "reduce": a general block-per-output reduction (any kept/reduced
// axis split, through two N-d indexers). The reduction engine of the statistics issue adds
// specialised strategies next to it.
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/complex_ops.cuh"

#define GP_RBLOCK 256

struct op_all {
    __device__ __forceinline__ static bool identity() { return true; }
    __device__ __forceinline__ bool operator()(bool a, bool b) const { return a && b; }
};
struct op_any {
    __device__ __forceinline__ static bool identity() { return false; }
    __device__ __forceinline__ bool operator()(bool a, bool b) const { return a || b; }
};

// out[o] = reduce over the inner index space of a[outer_offset(o) + inner_offset(i)].
template <class Op, class TO, class CT, class TA, int ND, class IdxT>
__global__ void __launch_bounds__(GP_RBLOCK) gp_reduce_simple(TO* __restrict__ out, const TA* __restrict__ a,
                                                            gp::StridedParams<1, ND> outer,
                                                            gp::StridedParams<1, ND> inner, IdxT n_inner) {
    __shared__ CT smem[GP_RBLOCK];
    Op op;
    IdxT ooff[1];
    gp::strided_offsets<1, ND, IdxT>(outer, static_cast<IdxT>(blockIdx.x), ooff);
    const TA* base = a + ooff[0];
    CT acc = Op::identity();
    for (IdxT i = threadIdx.x; i < n_inner; i += GP_RBLOCK) {
        IdxT ioff[1];
        gp::strided_offsets<1, ND, IdxT>(inner, i, ioff);
        acc = op(acc, gp::cast<CT>(base[ioff[0]]));
    }
    smem[threadIdx.x] = acc;
    __syncthreads();
    for (int s = GP_RBLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) smem[threadIdx.x] = op(smem[threadIdx.x], smem[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = gp::cast<TO>(smem[0]);
}
