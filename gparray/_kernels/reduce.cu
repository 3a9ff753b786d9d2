// gparray kernel family "reduce": the reduction engine (gparray/_engine/_reduce.py plans it).
//
// The planner splits the input's dimensions into kept ones (one output each, addressed by
// the `kept` indexer, outputs in C order) and reduced ones; the reduced index space is
// `nr` = r0 * (outer reduced count) elements: the innermost reduced dimension (extent r0,
// element stride rs0) inside the outer reduced dimensions (the `red` indexer).
//
// gp_reduce_inner   a group (warp or block) of threads per output, threads along the reduced
//                   space: rows, and the whole array. CONTIG: the reduced space is one run of
//                   stride 1 (16-byte vector loads, U in flight per thread). With
//                   splits > 1 a row is cut into segments whose states go to `ws`.
// gp_reduce_outer   threads along the kept dimensions (VO adjacent outputs per thread, vector
//                   loads when VO > 1), TY threads of a block and `splits` blocks along the
//                   reduced space; combined in shared memory, then through `ws` when split
//                   (output-major: ws[o * splits + s]).
// gp_reduce_finish  second pass: combines the `splits` states of every output.
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/complex_ops.cuh"
#include "gp/elementwise.cuh"
#include "gp/reduce.cuh"

#define GP_RBLOCK 256

// Programmatic dependent launch (sm_90 and later; no-ops elsewhere and for kernels launched
// without the attribute). A first pass lets the second pass be scheduled as soon as all of
// its blocks have started (launch_dependents); the second pass, launched with programmatic
// stream serialization (gparray/_engine/_reduce.py binds it so), waits for the whole first
// pass and its memory (wait) before it reads anything: its launch and block scheduling
// overlap the first pass instead of following it.
__device__ __forceinline__ void gp_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void gp_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

namespace gp {
namespace red {

// Walks the reduced index space: j -> (q, i) = (j / r0, j % r0), offset = red(q) + i * rs0.
template <int ND, class IdxT>
struct cursor {
    const StridedParams<1, ND>& red;
    const IdxT r0, rs0;
    IdxT q, i, qoff;
    __device__ __forceinline__ cursor(const StridedParams<1, ND>& red_, IdxT r0_, IdxT rs0_)
        : red(red_), r0(r0_), rs0(rs0_) {}
    __device__ __forceinline__ void locate() {
        IdxT o[1];
        strided_offsets<1, ND, IdxT>(red, q, o);
        qoff = o[0];
    }
    __device__ __forceinline__ void seek(IdxT j) {
        q = j / r0;
        i = j - q * r0;
        locate();
    }
    __device__ __forceinline__ IdxT offset() const { return qoff + i * rs0; }
    __device__ __forceinline__ void advance(IdxT step) {
        i += step;
        if (i >= r0) {
            const IdxT dq = i / r0;
            q += dq;
            i -= dq * r0;
            locate();
        }
    }
};

}  // namespace red
}  // namespace gp

// ------------------------------------------------------------------ group per output
template <class R, int GROUP, bool CONTIG, int U, int ND, class IdxT>
__global__ void __launch_bounds__(GP_RBLOCK)
gp_reduce_inner(typename R::out_t* __restrict__ out, typename R::acc_t* __restrict__ ws,
                const typename R::in_t* __restrict__ a, gp::StridedParams<1, ND> kept,
                gp::StridedParams<1, ND> red, IdxT r0, IdxT rs0, IdxT nr, IdxT seg, int splits,
                int ileave, IdxT n_tasks, double param) {
    typedef typename R::in_t TA;
    typedef typename R::acc_t A;
    constexpr int GPB = GP_RBLOCK / GROUP;
    static_assert(GROUP == 32 || GROUP == GP_RBLOCK, "GROUP is a warp or the block");
    __shared__ gp::red::smem_slots<A, GP_RBLOCK / 32> slots;
    gp_pdl_trigger();
    const R r(param);
    const int lane = threadIdx.x % GROUP;
    const IdxT task = static_cast<IdxT>(blockIdx.x) * GPB + threadIdx.x / GROUP;
    if (GROUP < GP_RBLOCK && task >= n_tasks) return;  // whole warps leave together
    const IdxT o = task / splits;
    const IdxT s = task - o * splits;
    IdxT koff[1];
    gp::strided_offsets<1, ND, IdxT>(kept, o, koff);
    const TA* base = a + koff[0];
    typename R::thread_t t = r.tstart();
    if (CONTIG) {
        // ileave: the splits of a row take its GROUP * U-vector tiles in turn (all blocks
        // sweep the row together); else split s owns the run [s * seg, (s + 1) * seg).
        const IdxT j0 = ileave ? IdxT(0) : s * seg;
        const IdxT j1 = ileave ? nr : (nr - j0 < seg ? nr : j0 + seg);
        const bool owner = !ileave || s == 0;  // takes the unaligned head and the tails
        constexpr int V = gp::vec_width<TA>::value;
        typedef gp::vec_t<TA, V> VT;
        const TA* p = base + j0;
        IdxT n = j1 - j0;
        IdxT head = static_cast<IdxT>((V - (reinterpret_cast<unsigned long long>(p) / sizeof(TA)) % V) % V);
        if (head > n) head = n;
        if (owner && lane < head) t = r.tfold(t, p[lane], static_cast<long long>(j0 + lane));
        p += head;
        const IdxT jb = j0 + head;
        n -= head;
        const IdxT nv = n / V;
        const VT* pv = reinterpret_cast<const VT*>(p);
        const IdxT step = static_cast<IdxT>(GROUP) * U * (ileave ? splits : 1);
        const IdxT full = nv - nv % (static_cast<IdxT>(GROUP) * U);  // vectors in whole tiles
        IdxT k = lane + (ileave ? s * GROUP * U : IdxT(0));
        for (; k < full; k += step) {  // U vectors in flight per thread
            VT v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) v[u] = pv[k + u * GROUP];
            TA all[U * V];
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int e = 0; e < V; ++e) all[u * V + e] = v[u].v[e];
            t = r.template tchunk_uv<U, V>(t, all, static_cast<long long>(jb + k * V), static_cast<long long>(GROUP) * V);
        }
        if (owner) {
            for (k = full + lane; k < nv; k += GROUP) {
                const VT v = pv[k];
                t = r.template tchunk<V>(t, v.v, static_cast<long long>(jb + k * V), 1);
            }
            for (IdxT q = nv * V + lane; q < n; q += GROUP) t = r.tfold(t, p[q], static_cast<long long>(jb + q));
        }
    } else {
        const IdxT j0 = s * seg;
        const IdxT j1 = nr - j0 < seg ? nr : j0 + seg;
        gp::red::cursor<ND, IdxT> c(red, r0, rs0);
        IdxT j = j0 + lane;
        if (j < j1) c.seek(j);
        for (; j < j1; j += GROUP * U) {
            TA v[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (j + u * GROUP < j1) {
                    v[u] = base[c.offset()];
                    c.advance(GROUP);
                }
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (j + u * GROUP < j1) t = r.tfold(t, v[u], static_cast<long long>(j + u * GROUP));
        }
    }
    A acc = r.tfinish(t);
    if (GROUP == 32) {
        acc = gp::red::warp_reduce(r, acc);
    } else {
        acc = gp::red::block_reduce<GP_RBLOCK>(r, acc, slots.ptr());
    }
    if (lane == 0) {
        if (splits == 1)
            out[o] = r.finalize(acc, static_cast<long long>(nr));
        else
            ws[static_cast<long long>(o) * splits + s] = acc;
    }
}

// ------------------------------------------------------------------ threads along kept dims
// Block = TX x TY threads (TX * TY = 256, runtime): thread (tx, ty) of block (b, s) owns the
// VO outputs starting at (b * TX + tx) * VO and reduced indices j0 + ty, j0 + ty + TY, ...
// of split s ([s * seg, (s + 1) * seg)); the 1-D grid is splits * bx blocks.
template <class R, int VO, int U, int ND, class IdxT>
__global__ void __launch_bounds__(GP_RBLOCK)
gp_reduce_outer(typename R::out_t* __restrict__ out, typename R::acc_t* __restrict__ ws,
                const typename R::in_t* __restrict__ a, gp::StridedParams<1, ND> kept,
                gp::StridedParams<1, ND> red, IdxT r0, IdxT rs0, IdxT nr, IdxT seg, IdxT n_out,
                int tx_log2, int bx, double param) {
    typedef typename R::in_t TA;
    typedef typename R::acc_t A;
    typedef gp::vec_t<TA, VO> VT;
    __shared__ gp::red::smem_slots<A, GP_RBLOCK * VO> slots;
    gp_pdl_trigger();
    const R r(param);
    const int TX = 1 << tx_log2;
    const int TY = GP_RBLOCK >> tx_log2;
    const int tx = threadIdx.x & (TX - 1);
    const int ty = threadIdx.x >> tx_log2;
    const IdxT s = static_cast<IdxT>(blockIdx.x / bx);
    const IdxT b = static_cast<IdxT>(blockIdx.x % bx);
    const IdxT o = (b * TX + tx) * VO;
    const bool active = o < n_out;
    typename R::thread_t t[VO];
#pragma unroll
    for (int c = 0; c < VO; ++c) t[c] = r.tstart();
    if (active) {
        IdxT koff[1];
        gp::strided_offsets<1, ND, IdxT>(kept, o, koff);
        const TA* base = a + koff[0];
        const IdxT j0 = s * seg;
        const IdxT j1 = nr - j0 < seg ? nr : j0 + seg;
        gp::red::cursor<ND, IdxT> cur(red, r0, rs0);
        IdxT j = j0 + ty;
        if (j < j1) cur.seek(j);
        for (; j + (U - 1) * TY < j1; j += U * TY) {
            VT v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                v[u] = *reinterpret_cast<const VT*>(base + cur.offset());
                cur.advance(TY);
            }
#pragma unroll
            for (int c = 0; c < VO; ++c) {
                TA col[U];
#pragma unroll
                for (int u = 0; u < U; ++u) col[u] = v[u].v[c];
                t[c] = r.template tchunk<U>(t[c], col, static_cast<long long>(j), TY);
            }
        }
        for (; j < j1; j += TY) {
            const VT v = *reinterpret_cast<const VT*>(base + cur.offset());
            cur.advance(TY);
#pragma unroll
            for (int c = 0; c < VO; ++c) t[c] = r.tfold(t[c], v.v[c], static_cast<long long>(j));
        }
    }
    A acc[VO];
#pragma unroll
    for (int c = 0; c < VO; ++c) acc[c] = r.tfinish(t[c]);
    if (TY > 1) {  // combine the TY partial states of each output column: a tree in shared
        A* sm = slots.ptr();  // memory, log2(TY) steps (a serial loop in row 0 took TY - 1)
#pragma unroll
        for (int c = 0; c < VO; ++c) sm[(ty * TX + tx) * VO + c] = acc[c];
        __syncthreads();
        for (int h = TY >> 1; h > 0; h >>= 1) {
            if (ty < h) {
#pragma unroll
                for (int c = 0; c < VO; ++c) {
                    acc[c] = r.combine(acc[c], sm[((ty + h) * TX + tx) * VO + c]);
                    sm[(ty * TX + tx) * VO + c] = acc[c];
                }
            }
            __syncthreads();
        }
    }
    if (ty == 0 && active) {
        if (gridDim.x == static_cast<unsigned>(bx)) {
#pragma unroll
            for (int c = 0; c < VO; ++c) out[o + c] = r.finalize(acc[c], static_cast<long long>(nr));
        } else {  // output-major: the second pass's warp reads an output's states in one run
            const long long splits = gridDim.x / bx;
#pragma unroll
            for (int c = 0; c < VO; ++c) ws[(o + c) * splits + s] = acc[c];
        }
    }
}

// ------------------------------------------------------------------ second pass
// out[o] = finalize(combine over s of ws[o * so + s * ss]); GROUP = 1 (thread per output)
// or 32 (warp per output). Each thread combines the states s = lane, lane + GROUP, ... in
// that order; the loads of FK of them are issued before their combines (the states were
// just written: L2 hits, but one dependent load per state made a 264-split finish a chain
// of L2 round trips, ~3 us on an H200).
#define GP_FINISH_K 8
template <class R, int GROUP>
__global__ void __launch_bounds__(GP_RBLOCK)
gp_reduce_finish(typename R::out_t* __restrict__ out, const typename R::acc_t* __restrict__ ws,
                 long long n_out, int splits, long long so, long long ss, long long nr, double param) {
    typedef typename R::acc_t A;
    constexpr int GPB = GP_RBLOCK / GROUP;
    constexpr int FK = GP_FINISH_K;
    gp_pdl_wait();  // the first pass's states (launched as its programmatic dependent)
    const R r(param);
    const long long o = static_cast<long long>(blockIdx.x) * GPB + threadIdx.x / GROUP;
    const int lane = threadIdx.x % GROUP;
    if (o >= n_out) return;  // GROUP == 32: the whole warp shares o
    A acc = r.identity();
    const A* __restrict__ w = ws + o * so;
    for (int s0 = lane; s0 < splits; s0 += GROUP * FK) {
        A v[FK];
#pragma unroll
        for (int k = 0; k < FK; ++k) {
            const int s = s0 + k * GROUP;
            v[k] = s < splits ? w[s * ss] : r.identity();
        }
#pragma unroll
        for (int k = 0; k < FK; ++k)
            if (s0 + k * GROUP < splits) acc = r.combine(acc, v[k]);
    }
    if (GROUP == 32) acc = gp::red::warp_reduce(r, acc);
    if (lane == 0) out[o] = r.finalize(acc, nr);
}
