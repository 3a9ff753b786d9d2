// gparray kernel family "scan": cumulative sums and products along one axis
// (gparray/_engine/_scan.py plans it). Reducers come from gp/reduce.cuh (op_sum, op_prod).
//
// The input is a set of lines (every index of the other axes, addressed by the `lines`
// indexer: operand 0 = output, 1 = input) of L elements, element strides s_in / s_out.
// With `initial`, output lines hold L + 1 elements and start with the identity.
//
// gp_scan_lookback  single pass, decoupled look-back (Merrill & Garland): tile ids come from
//                   an atomic counter (so every tile's predecessors are running or done);
//                   each tile publishes its aggregate, then walks back over its predecessors
//                   32 at a time (a warp) until one has published an inclusive prefix.
//                   Inside a tile: warp-striped 16-byte vector loads (coalesced), a scan of
//                   each thread's vector, warp scans of the vector totals, a block scan of
//                   the warp totals.
// gp_scan_lines     one thread per line, sequential (many short or strided lines).
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/complex_ops.cuh"
#include "gp/elementwise.cuh"
#include "gp/reduce.cuh"

#define GP_SBLOCK 256
#define GP_SWARPS (GP_SBLOCK / 32)
#define GP_SK 4  // vectors per thread per tile

namespace gp {
namespace scan {

// Elements per vector: 16 bytes of the wider of input and output, at most 4.
template <class TA, class TO>
struct vec {
    static constexpr int w = gp::vec_width<TA, TO>::value;
    static constexpr int value = w > 4 ? 4 : w;
};

// Loads/stores of look-back values through L2 (never a stale L1 line), word by word.
template <class A>
__device__ __forceinline__ A load_cg(const A* p) {
    static_assert(sizeof(A) % 8 == 0, "look-back states are whole 8-byte words");
    unsigned long long w[sizeof(A) / 8];
    const unsigned long long* q = reinterpret_cast<const unsigned long long*>(p);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(A) / 8); ++i) w[i] = __ldcg(q + i);
    A r;
    memcpy(&r, w, sizeof(A));
    return r;
}
template <class A>
__device__ __forceinline__ void store_cg(A* p, const A& v) {
    unsigned long long w[sizeof(A) / 8];
    memcpy(w, &v, sizeof(A));
    unsigned long long* q = reinterpret_cast<unsigned long long*>(p);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(A) / 8); ++i) __stcg(q + i, w[i]);
}

// Flag values: 0 nothing yet, 1 aggregate published, 2 inclusive prefix published.
// Called by all 32 lanes of warp 0; returns the exclusive prefix of `tile` (every lane).
template <class R, class A>
__device__ __forceinline__ A lookback(const R& r, long long tile, long long tile_in_line, A agg,
                                      unsigned int* flags, A* aggs, A* incls, int lane) {
    volatile unsigned int* vflags = flags;
    A prefix = r.identity();
    if (tile_in_line > 0) {
        if (lane == 0) {
            store_cg(aggs + tile, agg);
            __threadfence();
            vflags[tile] = 1u;
        }
        const long long first = tile - tile_in_line;  // first tile of this line
        long long top = tile - 1;
        while (true) {
            const long long i = top - lane;
            const bool in = i >= first;
            unsigned int f;
            do {
                f = in ? vflags[i] : 2u;
            } while (__any_sync(0xffffffffu, f == 0u));
            __threadfence();
            const unsigned int done = __ballot_sync(0xffffffffu, f == 2u);
            const int stop = done ? __ffs(done) - 1 : 31;
            A v = r.identity();
            if (in && lane <= stop) v = (f == 2u) ? load_cg(incls + i) : load_cg(aggs + i);
            v = gp::red::shfl_idx(gp::red::warp_reduce(r, v), 0);
            prefix = r.combine(v, prefix);
            if (done) break;
            top -= 32;
        }
    }
    if (lane == 0) {
        store_cg(incls + tile, r.combine(prefix, agg));
        __threadfence();
        vflags[tile] = 2u;
    }
    return prefix;
}

}  // namespace scan
}  // namespace gp

template <class R, bool CONTIG, int ND, class IdxT>
__global__ void __launch_bounds__(GP_SBLOCK)
gp_scan_lookback(typename R::out_t* __restrict__ out, const typename R::in_t* __restrict__ a,
                 gp::StridedParams<2, ND> lines, IdxT L, IdxT s_in, IdxT s_out, int initial,
                 long long tiles_per_line, unsigned int* __restrict__ state,
                 typename R::acc_t* __restrict__ aggs, typename R::acc_t* __restrict__ incls) {
    typedef typename R::in_t TA;
    typedef typename R::out_t TO;
    typedef typename R::acc_t A;
    constexpr int V = gp::scan::vec<TA, TO>::value;
    constexpr int WSEG = GP_SK * 32 * V;        // elements per warp
    constexpr int TILE = GP_SWARPS * WSEG;      // elements per block
    __shared__ long long s_tile;
    __shared__ gp::red::smem_slots<A, GP_SWARPS> s_warp;
    __shared__ gp::red::smem_slots<A, GP_SWARPS> s_prefix;
    const R r(0.0);
    if (threadIdx.x == 0) s_tile = static_cast<long long>(atomicAdd(state, 1u));
    __syncthreads();
    const long long tile = s_tile;
    const long long line = tile / tiles_per_line;
    const long long tl = tile - line * tiles_per_line;
    IdxT loff[2];
    gp::strided_offsets<2, ND, IdxT>(lines, static_cast<IdxT>(line), loff);
    TO* o_line = out + loff[0] + (initial ? s_out : IdxT(0));
    const TA* i_line = a + loff[1];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const IdxT e0 = static_cast<IdxT>(tl) * TILE + w * WSEG + lane * V;
    const bool vin = CONTIG && gp::aligned_for<V>(i_line);
    const bool vout = CONTIG && gp::aligned_for<V>(o_line);

    A x[GP_SK][V];
#pragma unroll
    for (int k = 0; k < GP_SK; ++k) {
        const IdxT e = e0 + k * 32 * V;
        if (vin && e + V <= L) {
            const gp::vec_t<TA, V> v = *reinterpret_cast<const gp::vec_t<TA, V>*>(i_line + e);
#pragma unroll
            for (int q = 0; q < V; ++q) x[k][q] = r.map(v.v[q], 0);
        } else {
#pragma unroll
            for (int q = 0; q < V; ++q) x[k][q] = (e + q < L) ? r.map(i_line[(e + q) * s_in], 0) : r.identity();
        }
    }
    // scan of each thread's vectors, then of the vector totals across the warp
    A pre[GP_SK];
    A carry = r.identity();
#pragma unroll
    for (int k = 0; k < GP_SK; ++k) {
#pragma unroll
        for (int q = 1; q < V; ++q) x[k][q] = r.combine(x[k][q - 1], x[k][q]);
        const A inc = gp::red::warp_inclusive_scan(r, x[k][V - 1], lane);
        A exc = gp::red::shfl_up(inc, 1);
        if (lane == 0) exc = r.identity();
        pre[k] = r.combine(carry, exc);
        carry = r.combine(carry, gp::red::shfl_idx(inc, 31));
    }
    if (lane == 0) s_warp.ptr()[w] = carry;
    __syncthreads();
    if (w == 0) {
        const A wv = lane < GP_SWARPS ? s_warp.ptr()[lane] : r.identity();
        const A winc = gp::red::warp_inclusive_scan(r, wv, lane);
        A wexc = gp::red::shfl_up(winc, 1);
        if (lane == 0) wexc = r.identity();
        const A agg = gp::red::shfl_idx(winc, GP_SWARPS - 1);
        const A tile_prefix = gp::scan::lookback(r, tile, tl, agg, state + 1, aggs, incls, lane);
        if (lane < GP_SWARPS) s_prefix.ptr()[lane] = r.combine(tile_prefix, wexc);
    }
    __syncthreads();
    const A wp = s_prefix.ptr()[w];
#pragma unroll
    for (int k = 0; k < GP_SK; ++k) {
        const A p = r.combine(wp, pre[k]);
        const IdxT e = e0 + k * 32 * V;
        gp::vec_t<TO, V> y;
#pragma unroll
        for (int q = 0; q < V; ++q) y.v[q] = r.finalize(r.combine(p, x[k][q]), 0);
        if (vout && e + V <= L) {
            *reinterpret_cast<gp::vec_t<TO, V>*>(o_line + e) = y;
        } else {
#pragma unroll
            for (int q = 0; q < V; ++q)
                if (e + q < L) o_line[(e + q) * s_out] = y.v[q];
        }
    }
    if (initial && tl == 0 && threadIdx.x == 0) out[loff[0]] = r.finalize(r.identity(), 0);
}

template <class R, int ND, class IdxT>
__global__ void __launch_bounds__(GP_SBLOCK)
gp_scan_lines(typename R::out_t* __restrict__ out, const typename R::in_t* __restrict__ a,
              gp::StridedParams<2, ND> lines, IdxT n_lines, IdxT L, IdxT s_in, IdxT s_out, int initial) {
    typedef typename R::in_t TA;
    typedef typename R::acc_t A;
    constexpr int U = 4;
    const R r(0.0);
    const IdxT t = static_cast<IdxT>(blockIdx.x) * GP_SBLOCK + threadIdx.x;
    if (t >= n_lines) return;
    IdxT loff[2];
    gp::strided_offsets<2, ND, IdxT>(lines, t, loff);
    typename R::out_t* o = out + loff[0];
    const TA* p = a + loff[1];
    A acc = r.identity();
    if (initial) {
        o[0] = r.finalize(acc, 0);
        o += s_out;
    }
    IdxT i = 0;
    for (; i + U <= L; i += U) {
        TA v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = p[(i + u) * s_in];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            acc = r.combine(acc, r.map(v[u], 0));
            o[(i + u) * s_out] = r.finalize(acc, 0);
        }
    }
    for (; i < L; ++i) {
        acc = r.combine(acc, r.map(p[i * s_in], 0));
        o[i * s_out] = r.finalize(acc, 0);
    }
}
