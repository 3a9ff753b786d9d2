// gparray kernel family "search": nonzero (count + compaction) and searchsorted
// (planned in gparray/_searching.py).
//
// nonzero over the flattened C-order index space of n elements, in tiles of GP_NZ_TILE:
//   gp_nonzero_count  per-tile counts of nonzero elements;
//   (the scan engine turns the counts into inclusive offsets; the host reads the total)
//   gp_nonzero_write  each warp ballots 32 consecutive elements per round, so a nonzero's
//                     rank is a popcount; writes its coordinates (unravelled over `shape`)
//                     to out[d * total + position] for every dimension d.
// Element addressing: CONTIG (flat index = element offset) or the `layout` indexer.
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/compact.cuh"
#include "gp/complex_ops.cuh"

#define GP_NZ_BLOCK 256
#define GP_NZ_ROUNDS 16
#define GP_NZ_WSEG (GP_NZ_ROUNDS * 32)
#define GP_NZ_TILE ((GP_NZ_BLOCK / 32) * GP_NZ_WSEG)

namespace gp {
namespace search {

template <class TA, bool CONTIG, int ND, class IdxT>
__device__ __forceinline__ bool nonzero_at(const TA* a, const StridedParams<1, ND>& layout, IdxT e) {
    if (CONTIG) return cast<bool>(a[e]);
    IdxT off[1];
    strided_offsets<1, ND, IdxT>(layout, e, off);
    return cast<bool>(a[off[0]]);
}

// Ascending order with NaNs last (the order sort uses): a < b.
template <class T>
__device__ __forceinline__ bool sort_less(T a, T b) { return a < b; }
template <>
__device__ __forceinline__ bool sort_less<float>(float a, float b) { return a < b || (b != b && a == a); }
template <>
__device__ __forceinline__ bool sort_less<double>(double a, double b) { return a < b || (b != b && a == a); }

}  // namespace search
}  // namespace gp

template <class TA, bool CONTIG, int ND, class IdxT>
__global__ void __launch_bounds__(GP_NZ_BLOCK)
gp_nonzero_count(long long* __restrict__ counts, const TA* __restrict__ a, gp::StridedParams<1, ND> layout, IdxT n) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const IdxT base = static_cast<IdxT>(blockIdx.x) * GP_NZ_TILE + w * GP_NZ_WSEG + lane;
    int c = 0;
#pragma unroll 4
    for (int k = 0; k < GP_NZ_ROUNDS; ++k) {
        const IdxT e = base + k * 32;
        if (e < n && gp::search::nonzero_at<TA, CONTIG, ND, IdxT>(a, layout, e)) ++c;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    gp::compact::tile_count<GP_NZ_BLOCK>(c, counts);
}

template <class TA, bool CONTIG, int ND, int NDS, class IdxT>
__global__ void __launch_bounds__(GP_NZ_BLOCK)
gp_nonzero_write(long long* __restrict__ out, long long total, const long long* __restrict__ incl,
                 const TA* __restrict__ a, gp::StridedParams<1, ND> layout,
                 gp::StridedParams<1, NDS> shape, IdxT n) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const IdxT base = static_cast<IdxT>(blockIdx.x) * GP_NZ_TILE + w * GP_NZ_WSEG;
    unsigned int masks[GP_NZ_ROUNDS];
    const int c = gp::compact::ballot_rounds<GP_NZ_ROUNDS>([&](int k) {
        const IdxT e = base + k * 32 + lane;
        return e < n && gp::search::nonzero_at<TA, CONTIG, ND, IdxT>(a, layout, e);
    }, masks);
    long long pos = gp::compact::warp_start<GP_NZ_BLOCK>(c, incl);
    const unsigned int below = (1u << lane) - 1u;
    const long long* sv = shape.p.v;
    const int nd = static_cast<int>(sv[0]);
#pragma unroll
    for (int k = 0; k < GP_NZ_ROUNDS; ++k) {
        const unsigned int m = masks[k];
        if ((m >> lane) & 1u) {
            const long long p = pos + __popc(m & below);
            long long e = static_cast<long long>(base + k * 32 + lane);
            for (int d = nd - 1; d >= 0; --d) {
                const long long ext = sv[1 + d];
                const long long q = e / ext;
                out[d * total + p] = e - q * ext;
                e = q;
            }
        }
        pos += __popc(m);
    }
}

// out[i] = insertion index of x2[i] in x1 (ascending, NaNs last; through `sorter` when SORTER).
template <class T1, class T2, class CT, bool RIGHT, bool SORTER>
__global__ void __launch_bounds__(GP_NZ_BLOCK)
gp_searchsorted(long long* __restrict__ out, const T1* __restrict__ x1, long long s1, long long n1,
                const T2* __restrict__ x2, long long n2, const long long* __restrict__ sorter, long long ss) {
    const long long i = static_cast<long long>(blockIdx.x) * GP_NZ_BLOCK + threadIdx.x;
    if (i >= n2) return;
    const CT v = gp::cast<CT>(x2[i]);
    long long lo = 0, hi = n1;
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        const long long k = SORTER ? sorter[mid * ss] : mid;
        const CT e = gp::cast<CT>(x1[k * s1]);
        const bool right = RIGHT ? !gp::search::sort_less(v, e) : gp::search::sort_less(e, v);
        if (right)
            lo = mid + 1;
        else
            hi = mid;
    }
    out[i] = lo;
}
