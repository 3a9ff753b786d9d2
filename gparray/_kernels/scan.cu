// gparray kernel family "scan": cumulative sums and products along one axis
// (gparray/_engine/_scan.py plans it). Reducers come from gp/reduce.cuh (op_sum, op_prod);
// the tile shape and the look-back from gp/scan.cuh.
//
// The input is a set of lines (every index of the other axes, addressed by the `lines`
// indexer: operand 0 = output, 1 = input) of L elements, element strides s_in / s_out.
// With `initial`, output lines hold L + 1 elements and start with the identity.
//
// gp_scan_lookback  single pass, decoupled look-back (Merrill & Garland). Tile id = blockIdx.x
//                   (blocks start in blockIdx order, so every tile's predecessors are
//                   running or done); a line has tiles_per_line tiles, a tile never straddles
//                   two lines; the look-back descriptors carry the launch's epoch (see
//                   gp/scan.cuh), so the workspace needs no clearing. A block:
//                   1. every thread derives the tile, its line and the line's offsets from
//                      blockIdx.x (no shared memory, no barrier before the loads);
//                   2. issues all its 16-byte vector loads (warp-striped, coalesced), keeps
//                      the raw elements in registers;
//                   3. vector totals -> (shared memory, one warp scan) each vector's
//                      exclusive prefix inside its warp, and the warp totals;
//                   4. warp 0: block scan of the warp totals -> the tile's aggregate,
//                      published at once (an inclusive prefix directly for the first tile
//                      of a line); the look-back (gp::scan::lookback); the inclusive prefix,
//                      published as soon as the exclusive one is known;
//                   5. the elements are mapped again from the raw values (the raw values
//                      take half the registers of double states), scanned with the
//                      prefixes, and stored as 16-byte vectors.
//                   Whole tiles of aligned contiguous lines take unguarded vector loads;
//                   the last tile of a line, unaligned or strided lines, guarded ones.
// gp_scan_lines     one thread per line, sequential (many short or strided lines).
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/complex_ops.cuh"
#include "gp/elementwise.cuh"
#include "gp/reduce.cuh"
#include "gp/scan.cuh"

#define GP_SBLOCK 256  // threads per block of gp_scan_lines

// ws: the persistent look-back workspace of this stream (gp::scan::tile_state, at least
// gridDim.x tiles); epoch: this launch's unique epoch (>= 1); prefetch: see step 1b.
template <class R, bool CONTIG, int ND, class IdxT>
__global__ void __launch_bounds__(GP_SCAN_THREADS, gp::scan::shape<R>::min_blocks)
gp_scan_lookback(typename R::out_t* __restrict__ out, const typename R::in_t* __restrict__ a,
                 gp::StridedParams<2, ND> lines, IdxT L, IdxT s_in, IdxT s_out, int initial,
                 long long tiles_per_line, int prefetch, unsigned char* __restrict__ ws,
                 unsigned long long epoch) {
    typedef typename R::in_t TA;
    typedef typename R::out_t TO;
    typedef typename R::acc_t A;
    typedef gp::scan::shape<R> SH;
    constexpr int V = SH::V;
    constexpr int K = GP_SCAN_VECS;
    constexpr int W = gp::scan::WARPS;
    __shared__ gp::red::smem_slots<A, W> s_warp;
    __shared__ gp::red::smem_slots<A, W> s_prefix;
    __shared__ gp::red::smem_slots<A, W * SH::SLOTS> s_vec;  // per warp: vector totals, prefixes
    const R r(0.0);
    const gp::scan::tile_state<A> st(ws, epoch);

    // 1. tile, line and line offsets, in every thread (tiles_per_line <= gridDim.x < 2^31;
    //    line 0 has offsets 0, so one-line scans divide nothing)
    const unsigned int tpl = static_cast<unsigned int>(tiles_per_line);
    const unsigned int line = blockIdx.x / tpl;
    const long long tile = blockIdx.x;
    const long long tl = static_cast<long long>(blockIdx.x - line * tpl);
    IdxT loff[2] = {IdxT(0), IdxT(0)};
    if (line != 0u) gp::scan::line_offsets<ND, IdxT>(lines, static_cast<IdxT>(line), loff);
    const IdxT off_out = loff[0];
    TO* o_line = out + off_out + (initial ? s_out : IdxT(0));
    const TA* i_line = a + loff[1];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const IdxT e0 = static_cast<IdxT>(tl) * SH::TILE + w * SH::WSEG + lane * V;
    const bool vin = CONTIG && gp::aligned_for<V>(i_line);
    const bool vout = CONTIG && gp::aligned_for<V>(o_line);
    const IdxT si = CONTIG ? IdxT(1) : s_in, so = CONTIG ? IdxT(1) : s_out;

    // 1b. one-line contiguous scans: thread 0 asks L2 for the tile `prefetch - 1` tiles
    //     ahead of its own (0: none), one bulk request for the whole tile
    if (CONTIG && prefetch > 0 && threadIdx.x == 0 && tiles_per_line >= static_cast<long long>(gridDim.x)) {
        const long long pt = tile + prefetch - 1;
        if (pt < tiles_per_line) {
            const IdxT e = static_cast<IdxT>(pt) * SH::TILE;
            const IdxT n = L - e < SH::TILE ? L - e : static_cast<IdxT>(SH::TILE);
            const unsigned long long p0 = reinterpret_cast<unsigned long long>(i_line + e);
            const unsigned long long lo = p0 & ~15ull;
            const unsigned long long hi = (p0 + static_cast<unsigned long long>(n) * sizeof(TA) + 15ull) & ~15ull;
            gp::scan::prefetch_l2(reinterpret_cast<const void*>(lo), static_cast<unsigned int>(hi - lo));
        }
    }

    // 2. every load first (vector k of this lane: elements e0 + k * 32 * V + [0, V))
    //    (a whole tile of an aligned contiguous line: vectors, no guards; else guarded)
    const bool whole = static_cast<IdxT>(tl + 1) * SH::TILE <= L;
    gp::vec_t<TA, V> x[K];
    if (vin && whole) {
#pragma unroll
        for (int k = 0; k < K; ++k) x[k] = reinterpret_cast<const gp::vec_t<TA, V>*>(i_line + e0)[k * 32];
    } else {
        const IdxT lim = L - e0;
        const TA* p = i_line + e0 * si;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (vin && k * 32 * V + V <= lim) {
                x[k] = reinterpret_cast<const gp::vec_t<TA, V>*>(i_line + e0)[k * 32];
            } else {
#pragma unroll
                for (int q = 0; q < V; ++q) x[k].v[q] = (k * 32 * V + q < lim) ? p[(k * 32 * V + q) * si] : TA();
            }
        }
    }

    // 3. vector totals -> their exclusive prefixes inside the warp, in sequence order (round
    //    k, then lane): through shared memory, lane j scans the K totals of positions
    //    j * K ... j * K + K - 1 (one warp scan of the 32 lane totals); the warp totals
    const IdxT lim = L - e0;  // this lane's elements inside the line: offsets < lim
    A* sv = s_vec.ptr() + w * SH::SLOTS;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        A c;
        if constexpr (R::f32) {  // float32 sums: a vector adds in float32, one conversion
            float f = 0.0f;
#pragma unroll
            for (int q = 0; q < V; ++q)
                if (k * 32 * V + q < lim) f += x[k].v[q];
            c = static_cast<A>(f);
        } else {
            c = (k * 32 * V < lim) ? r.map(x[k].v[0], 0) : r.identity();
#pragma unroll
            for (int q = 1; q < V; ++q)
                if (k * 32 * V + q < lim) c = r.combine(c, r.map(x[k].v[q], 0));
        }
        sv[SH::slot(k * 32 + lane)] = c;
    }
    __syncwarp();
    {
        A v[K];
#pragma unroll
        for (int j = 0; j < K; ++j) v[j] = sv[SH::slot(lane * K + j)];
        A run = v[0];
        v[0] = r.identity();
#pragma unroll
        for (int j = 1; j < K; ++j) {
            const A n = r.combine(run, v[j]);
            v[j] = run;
            run = n;
        }
        const A inc = gp::red::warp_inclusive_scan(r, run, lane);
        A exc = gp::red::shfl_up(inc, 1);
        if (lane == 0) exc = r.identity();
#pragma unroll
        for (int j = 0; j < K; ++j) sv[SH::slot(lane * K + j)] = r.combine(exc, v[j]);
        if (lane == 31) s_warp.ptr()[w] = inc;
    }
    __syncthreads();

    // 4. warp 0: the tile's aggregate (published at once), the look-back, the inclusive prefix
    if (w == 0) {
        const A wv = lane < W ? s_warp.ptr()[lane] : r.identity();
        const A winc = gp::red::warp_inclusive_scan(r, wv, lane);
        A wexc = gp::red::shfl_up(winc, 1);
        if (lane == 0) wexc = r.identity();
        const A agg = gp::red::shfl_idx(winc, W - 1);
        if (lane == 0) st.publish(tile, tl > 0 ? 1u : 2u, agg);
        A prefix = r.identity();
        if (tl > 0) {
            prefix = gp::scan::lookback<R, A>(r, st, tile, tl, lane);
            if (lane == 0) st.publish(tile, 2u, r.combine(prefix, agg));
        }
        if (lane < W) s_prefix.ptr()[lane] = r.combine(prefix, wexc);
    }
    __syncthreads();

    // 5. outputs
    const A wp = s_prefix.ptr()[w];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const IdxT e = e0 + k * 32 * V;
        gp::scan::opaque(x[k]);  // map() again here, no states kept alive across the look-back
        A acc = r.combine(wp, sv[SH::slot(k * 32 + lane)]);
        gp::vec_t<TO, V> y;
        if constexpr (R::f32) {  // the vector's prefix rounded once, its elements in float32
            const float pf = static_cast<float>(acc);
            float run = 0.0f;
#pragma unroll
            for (int q = 0; q < V; ++q) {
                run += x[k].v[q];
                y.v[q] = pf + run;
            }
        } else {
#pragma unroll
            for (int q = 0; q < V; ++q) {
                acc = r.combine(acc, r.map(x[k].v[q], 0));
                y.v[q] = r.finalize(acc, 0);
            }
        }
        if (vout && e + V <= L) {
            *reinterpret_cast<gp::vec_t<TO, V>*>(o_line + e) = y;
        } else {
#pragma unroll
            for (int q = 0; q < V; ++q)
                if (e + q < L) o_line[(e + q) * so] = y.v[q];
        }
    }
    if (initial && tl == 0 && threadIdx.x == 0) out[off_out] = r.finalize(r.identity(), 0);
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
