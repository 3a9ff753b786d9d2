// gparray kernel family "index": advanced indexing (planned in gparray/_engine/_index_plan.py,
// launched by gparray/_engine/_index.py).
//
// Elements are moved as raw storage of their size (S = uint8/16/32/64 or b16), so one
// instance serves every dtype of that size.
//
//   gp_index_gather   dense[i] = src[view(i) + sum_k wrap(idx_k[i]) * vstride_k]
//   gp_index_scatter  src[view(i) + sum_k wrap(idx_k[i]) * vstride_k] = dense[i]
//                     over the C-order positions i of the indexed shape. The operands'
//                     offsets come from one StridedParams<2 + K, ND>: operand 0 the source
//                     view (stride 0 on the index dims), 1 the dense side (the gather's
//                     C-contiguous output; the scatter's value, broadcast), 2.. the index
//                     arrays (broadcast over the index dims, stride 0 elsewhere).
//                     Negative indices wrap once; an index outside [0, ext) is never used to
//                     address memory: the gather writes 0 there, the scatter skips it, and
//                     the first such (axis, value, size) is recorded in err[0..3] (err[0] =
//                     1), which the host reads (after the launch, or at its next
//                     synchronization) and turns into an IndexError.
//                     Repeated scatter indices: one of the values wins (each element is one
//                     store of its full size).
//   gp_index_compact  x[mask] for a boolean mask of x's shape: per-tile counts of the mask
//                     come from gp_nonzero_count (family "search") and the scan engine
//                     (inclusive offsets `incl`); each warp ballots 32 consecutive mask
//                     elements per round, so a kept element's output position is a popcount.
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/compact.cuh"

#define GP_IX_BLOCK 256
#define GP_IX_ITEMS 4
#define GP_CP_ROUNDS 16
#define GP_CP_WSEG (GP_CP_ROUNDS * 32)
#define GP_CP_TILE ((GP_IX_BLOCK / 32) * GP_CP_WSEG)

namespace gp {
namespace ix {

struct alignas(16) b16 {
    unsigned long long lo, hi;
};

// Extents of the view axes the K index arrays index, those axes' strides (elements), and
// the axes of the indexed array they are (for the error record).
template <int K>
struct IndexGeom {
    long long ext[K];
    long long vstride[K];
    long long axis[K];
};

// The index arrays' addresses travel as eight plain pointer parameters (unused ones 0), so
// the launch packs them as plain values and binds the rest once per layout.
#define GP_IX_PTRS const IT *p0, const IT *p1, const IT *p2, const IT *p3, const IT *p4, const IT *p5, \
                   const IT *p6, const IT *p7

template <class IT>
__device__ __forceinline__ long long as_index(IT v, long long ext, bool& bad, long long& raw) {
    // unsigned index types never wrap; signed ones wrap once
    const bool is_unsigned = IT(-1) > IT(0);
    long long j;
    if (is_unsigned) {
        const unsigned long long u = static_cast<unsigned long long>(v);
        raw = static_cast<long long>(u);
        if (u >= static_cast<unsigned long long>(ext)) {
            bad = true;
            return 0;
        }
        return static_cast<long long>(u);
    }
    j = static_cast<long long>(v);
    raw = j;
    if (j < 0) j += ext;
    if (j < 0 || j >= ext) {
        bad = true;
        return 0;
    }
    return j;
}

// The first out-of-range index of any launch since the host last read the record:
// err[0] = 1, err[1] = axis, err[2] = the index value, err[3] = the axis' size.
__device__ __forceinline__ void record(unsigned long long* err, long long axis, long long raw, long long ext) {
    if (atomicCAS(err, 0ull, 1ull) == 0ull) {
        err[1] = static_cast<unsigned long long>(axis);
        err[2] = static_cast<unsigned long long>(raw);
        err[3] = static_cast<unsigned long long>(ext);
    }
}

// Source offsets (elements) of the positions base + it * GP_IX_BLOCK (it < GP_IX_ITEMS) of
// one thread, their dense offsets, and whether each is in range and has all its indices in
// range. Three phases, so the loads of every item are in flight together (a gather is
// latency-bound: index load, then the source load it addresses): the positions and every
// index value first, then the checks (and the error record), the caller's loads last.
template <class IT, int K, int ND, class IdxT>
__device__ __forceinline__ void locate_all(const StridedParams<2 + K, ND>& layout, const IT* const (&p)[8],
                                           const IndexGeom<K>& g, IdxT base, IdxT n,
                                           long long (&src_off)[GP_IX_ITEMS], IdxT (&dense_off)[GP_IX_ITEMS],
                                           bool (&ok)[GP_IX_ITEMS], unsigned long long* err) {
    IT raw[GP_IX_ITEMS][K];
#pragma unroll
    for (int it = 0; it < GP_IX_ITEMS; ++it) {
        const IdxT i = base + it * GP_IX_BLOCK;
        ok[it] = i < n;
        src_off[it] = 0;
        dense_off[it] = 0;
        if (ok[it]) {
            IdxT off[2 + K];
            strided_offsets<2 + K, ND, IdxT>(layout, i, off);
            src_off[it] = static_cast<long long>(off[0]);
            dense_off[it] = off[1];
#pragma unroll
            for (int k = 0; k < K; ++k) raw[it][k] = p[k][off[2 + k]];
        }
    }
#pragma unroll
    for (int it = 0; it < GP_IX_ITEMS; ++it) {
        if (!ok[it]) continue;
        long long so = src_off[it];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            bool bad = false;
            long long v = 0;
            const long long j = as_index<IT>(raw[it][k], g.ext[k], bad, v);
            if (bad) {
                record(err, g.axis[k], v, g.ext[k]);
                ok[it] = false;
            }
            so += j * g.vstride[k];
        }
        src_off[it] = so;
    }
}

}  // namespace ix
}  // namespace gp

template <class S, class IT, int K, int ND, class IdxT>
__global__ void __launch_bounds__(GP_IX_BLOCK)
gp_index_gather(S* __restrict__ dense, const S* __restrict__ src, GP_IX_PTRS, gp::ix::IndexGeom<K> g,
                gp::StridedParams<2 + K, ND> layout, IdxT n, unsigned long long* __restrict__ err) {
    const IT* const p[8] = {p0, p1, p2, p3, p4, p5, p6, p7};
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_IX_BLOCK * GP_IX_ITEMS) + threadIdx.x;
    long long so[GP_IX_ITEMS];
    IdxT dof[GP_IX_ITEMS];
    bool ok[GP_IX_ITEMS];
    gp::ix::locate_all<IT, K, ND, IdxT>(layout, p, g, base, n, so, dof, ok, err);
    S v[GP_IX_ITEMS];
#pragma unroll
    for (int it = 0; it < GP_IX_ITEMS; ++it) v[it] = ok[it] ? src[so[it]] : S();
#pragma unroll
    for (int it = 0; it < GP_IX_ITEMS; ++it)
        if (base + it * GP_IX_BLOCK < n) dense[dof[it]] = v[it];
}

template <class S, class IT, int K, int ND, class IdxT>
__global__ void __launch_bounds__(GP_IX_BLOCK)
gp_index_scatter(const S* __restrict__ dense, S* __restrict__ src, GP_IX_PTRS, gp::ix::IndexGeom<K> g,
                 gp::StridedParams<2 + K, ND> layout, IdxT n, unsigned long long* __restrict__ err) {
    const IT* const p[8] = {p0, p1, p2, p3, p4, p5, p6, p7};
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_IX_BLOCK * GP_IX_ITEMS) + threadIdx.x;
    long long so[GP_IX_ITEMS];
    IdxT dof[GP_IX_ITEMS];
    bool ok[GP_IX_ITEMS];
    gp::ix::locate_all<IT, K, ND, IdxT>(layout, p, g, base, n, so, dof, ok, err);
    S v[GP_IX_ITEMS];
#pragma unroll
    for (int it = 0; it < GP_IX_ITEMS; ++it)
        if (ok[it]) v[it] = dense[dof[it]];
#pragma unroll
    for (int it = 0; it < GP_IX_ITEMS; ++it)
        if (ok[it]) src[so[it]] = v[it];
}

template <class S, bool CONTIG, int ND, class IdxT>
__global__ void __launch_bounds__(GP_IX_BLOCK)
gp_index_compact(S* __restrict__ out, const long long* __restrict__ incl, const bool* __restrict__ mask,
                 const S* __restrict__ x, gp::StridedParams<2, ND> layout, IdxT n) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const IdxT base = static_cast<IdxT>(blockIdx.x) * GP_CP_TILE + w * GP_CP_WSEG;
    unsigned int masks[GP_CP_ROUNDS];
    const int c = gp::compact::ballot_rounds<GP_CP_ROUNDS>([&](int k) {
        const IdxT e = base + k * 32 + lane;
        if (e >= n) return false;
        if (CONTIG) return static_cast<bool>(mask[e]);
        IdxT off[2];
        gp::strided_offsets<2, ND, IdxT>(layout, e, off);
        return static_cast<bool>(mask[off[0]]);
    }, masks);
    long long pos = gp::compact::warp_start<GP_IX_BLOCK>(c, incl);
    const unsigned int below = (1u << lane) - 1u;
#pragma unroll
    for (int k = 0; k < GP_CP_ROUNDS; ++k) {
        const unsigned int m = masks[k];
        if ((m >> lane) & 1u) {
            const IdxT e = base + k * 32 + lane;
            IdxT xo;
            if (CONTIG) {
                xo = e;
            } else {
                IdxT off[2];
                gp::strided_offsets<2, ND, IdxT>(layout, e, off);
                xo = off[1];
            }
            out[pos + __popc(m & below)] = x[xo];
        }
        pos += __popc(m);
    }
}
