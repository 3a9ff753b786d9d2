// gparray: device helpers of the "scan" family (gparray/_kernels/scan.cu): tile shape,
// the decoupled look-back (Merrill & Garland) and its tile descriptors.
//
// Tile shape (mirrored by gparray/_engine/_scan.py; a CPU test parses these constants):
// GP_SCAN_THREADS threads, each holding GP_SCAN_VECS vectors of V elements (16 bytes of the
// wider of input and output, at most 4 elements), loaded warp-striped: vector k of lane l of
// warp w starts at element w * WSEG + k * 32 * V + l * V of the tile (WSEG = VECS * 32 * V).
//
// Tile ids: tile = blockIdx.x. Blocks are dispatched in increasing blockIdx order (what
// CUB's single-pass scan relies on too), so when a block runs, every block of a smaller id
// is resident or finished and publishes its aggregate without waiting on later tiles.
//
// Look-back workspace: persistent, reused by launch after launch on one stream and zeroed
// only when it is allocated; nothing is cleared between launches. Each launch has a unique
// epoch E >= 1 (a kernel argument); a status word is (E << 2) | flag with flag 1 = aggregate
// of the tile, 2 = inclusive prefix through the tile. A reader takes a status word whose
// epoch is not its own E (zero from the allocation, or any other launch's, earlier or later)
// as "nothing yet"; epochs are never reused, so a stale word never matches. The test is
// equality, not order: host threads sharing a stream may enqueue their launches in another
// order than they took their epochs, so a launch can find words of a later epoch. Launches
// on one workspace never overlap in time (one stream: stream order), since two concurrent
// launches would overwrite each other's descriptors. Per tile t:
// * accumulators of at most 8 bytes: one 16-byte descriptor {status, value bits} at byte
//   16 t, written with one st.relaxed.gpu.v2.u64 and read with one ld.relaxed.gpu.v2.u64. A
//   reader sees either the old or the new descriptor, never a status without its value (the
//   property CUB's ScanTileState relies on), so no fence is needed anywhere.
// * 16-byte accumulators (complex128): a 48-byte record at byte 48 t: {status (8 bytes),
//   unused (8), aggregate (16), inclusive prefix (16)}; the value is stored first, then the
//   status with st.release.gpu.u64; readers poll the status with ld.relaxed.gpu.u64 and fence
//   once (acquire) before reading the value the status names (each written once per launch).
// A workspace only ever holds one of the two layouts (the host keeps one per stream and
// layout), so a status word is never read from bytes that held another launch's value.
#pragma once
#include "types.cuh"
#include "indexer.cuh"
#include "reduce.cuh"

#define GP_SCAN_THREADS 256   // threads per look-back block
#ifndef GP_SCAN_VECS
#define GP_SCAN_VECS 8        // 16-byte vectors per thread per tile (a power of two)
#endif

namespace gp {
namespace scan {

constexpr int WARPS = GP_SCAN_THREADS / 32;
static_assert((GP_SCAN_VECS & (GP_SCAN_VECS - 1)) == 0 && GP_SCAN_THREADS % 32 == 0, "scan tile shape");
constexpr unsigned SPIN_NS_FIRST = 64;   // first back-off while a predecessor is not ready
constexpr unsigned SPIN_NS_MAX = 512;    // back-off cap (doubling from SPIN_NS_FIRST)

// Elements per vector: 16 bytes of the wider of input and output, at most 4.
template <class TA, class TO>
struct vec {
    static constexpr int big = sizeof(TA) > sizeof(TO) ? sizeof(TA) : sizeof(TO);
    static constexpr int w = big >= 16 ? 1 : 16 / big;
    static constexpr int value = w > 4 ? 4 : w;
};

template <class R>
struct shape {
    typedef typename R::acc_t A;
    static constexpr int V = vec<typename R::in_t, typename R::out_t>::value;
    static constexpr int WSEG = GP_SCAN_VECS * 32 * V;  // elements per warp
    static constexpr int TILE = WARPS * WSEG;           // elements per block
    // shared slots of one warp's vector states: position p (round k, lane l: p = 32 k + l)
    // at p ^ (k mod 16), a permutation inside each row of 32, so neither access pattern
    // (p = 32 k + lane; p = lane * VECS + j) has bank conflicts for 8-byte states
    static constexpr int SLOTS = 32 * GP_SCAN_VECS;
    __device__ __forceinline__ static int slot(int p) { return p ^ ((p >> 5) & 15); }
    static constexpr bool packed = sizeof(A) <= 8;      // single-descriptor look-back
    static constexpr int min_blocks = packed ? 3 : 2;   // blocks per SM (register budget)
};

// ------------------------------------------------------------------ memory operations
__device__ __forceinline__ void st_relaxed_v2(unsigned long long* p, unsigned long long a, unsigned long long b) {
    asm volatile("st.relaxed.gpu.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
__device__ __forceinline__ void ld_relaxed_v2(const unsigned long long* p, unsigned long long& a,
                                              unsigned long long& b) {
    asm volatile("ld.relaxed.gpu.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
__device__ __forceinline__ void st_release(unsigned long long* p, unsigned long long v) {
    asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// L2 prefetch of [p, p + bytes) (p 16-byte aligned, bytes a multiple of 16; a hint only,
// sm_90 and newer; nothing before).
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned int bytes) {
#if __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(bytes)
                 : "memory");
#endif
}

// 8-byte word <-> accumulator of at most 8 bytes
template <class A>
__device__ __forceinline__ unsigned long long to_word(const A& v) {
    unsigned long long w = 0;
    memcpy(&w, &v, sizeof(A));
    return w;
}
template <class A>
__device__ __forceinline__ A from_word(unsigned long long w) {
    A v;
    memcpy(&v, &w, sizeof(A));
    return v;
}

// Two 8-byte words <-> accumulator of 9..16 bytes
template <class A>
__device__ __forceinline__ void to_words(const A& v, unsigned long long& a, unsigned long long& b) {
    unsigned long long w[2] = {0, 0};
    memcpy(w, &v, sizeof(A));
    a = w[0];
    b = w[1];
}
template <class A>
__device__ __forceinline__ A from_words(unsigned long long a, unsigned long long b) {
    unsigned long long w[2] = {a, b};
    A v;
    memcpy(&v, w, sizeof(A));
    return v;
}

// Offsets (out, in) of line i: gp::strided_offsets with the dimension loop unrolled, so the
// parameter block is read with constant offsets (a dynamic index would copy it to local
// memory in every thread at kernel entry).
template <int ND, class IdxT>
__device__ __forceinline__ void line_offsets(const StridedParams<2, ND>& prm, IdxT i, IdxT (&off)[2]) {
    const long long* v = prm.p.v;
    const int nd = static_cast<int>(v[0]);
    off[0] = 0;
    off[1] = 0;
#pragma unroll
    for (int d = ND - 1; d >= 0; --d) {
        if (d < nd) {
            const IdxT extent = static_cast<IdxT>(v[1 + d]);
            const IdxT q = i / extent;
            const IdxT idx = i - q * extent;
            i = q;
            off[0] += idx * static_cast<IdxT>(v[1 + ND + d]);
            off[1] += idx * static_cast<IdxT>(v[1 + 2 * ND + d]);
        }
    }
}

// An optimization barrier on v's bits (no instruction): the compiler must treat v as
// changed, so states computed from it before are recomputed rather than kept in registers
// (the raw elements are smaller than their accumulator states).
template <class T>
__device__ __forceinline__ void opaque(T& v) {
    if constexpr (sizeof(T) % 4 == 0) {
        unsigned int w[sizeof(T) / 4];
        memcpy(w, &v, sizeof(T));
#pragma unroll
        for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i) asm volatile("" : "+r"(w[i]));
        memcpy(&v, w, sizeof(T));
    } else if constexpr (sizeof(T) % 2 == 0) {
        unsigned short w[sizeof(T) / 2];
        memcpy(w, &v, sizeof(T));
#pragma unroll
        for (int i = 0; i < static_cast<int>(sizeof(T) / 2); ++i) asm volatile("" : "+h"(w[i]));
        memcpy(&v, w, sizeof(T));
    }
}

// ------------------------------------------------------------------ tile state
// The look-back slots of one launch in the workspace `ws` (layout in the header comment),
// seen with the launch's epoch: poll() returns 0 for a status word of another epoch.
template <class A, bool PACKED = (sizeof(A) <= 8)>
struct tile_state;

// status of word s for the tag E << 2: its flag when the epoch matches, else 0
__device__ __forceinline__ unsigned int status_of(unsigned long long s, unsigned long long tag) {
    return (s & ~3ull) == tag ? static_cast<unsigned int>(s & 3ull) : 0u;
}

template <class A>
struct tile_state<A, true> {
    static constexpr bool packed = true;
    unsigned long long* d;   // 2 words per tile
    unsigned long long tag;  // epoch << 2
    __device__ tile_state(unsigned char* ws, unsigned long long epoch)
        : d(reinterpret_cast<unsigned long long*>(ws)), tag(epoch << 2) {}
    __device__ __forceinline__ void publish(long long t, unsigned int status, const A& v) const {
        st_relaxed_v2(d + 2 * t, tag | status, to_word(v));
    }
    // status and value of tile t (every lane its own t)
    __device__ __forceinline__ unsigned int poll(long long t, A& v) const {
        unsigned long long s, w;
        ld_relaxed_v2(d + 2 * t, s, w);
        v = from_word<A>(w);
        return status_of(s, tag);
    }
    __device__ __forceinline__ void acquire() const {}
};

template <class A>
struct tile_state<A, false> {
    static constexpr bool packed = false;
    static constexpr int REC = 6;  // words per tile: status, unused, aggregate (2), inclusive (2)
    unsigned long long* rec;
    unsigned long long tag;        // epoch << 2
    __device__ tile_state(unsigned char* ws, unsigned long long epoch)
        : rec(reinterpret_cast<unsigned long long*>(ws)), tag(epoch << 2) {}
    __device__ __forceinline__ void publish(long long t, unsigned int status, const A& v) const {
        unsigned long long a, b;
        to_words(v, a, b);
        st_relaxed_v2(rec + REC * t + (status == 2u ? 4 : 2), a, b);
        st_release(rec + REC * t, tag | status);
    }
    // status only; the value is read after acquire() by value()
    __device__ __forceinline__ unsigned int poll(long long t, A&) const { return status_of(ld_relaxed(rec + REC * t), tag); }
    __device__ __forceinline__ void acquire() const { fence_acq_rel(); }
    __device__ __forceinline__ A value(long long t, unsigned int status) const {
        unsigned long long a, b;
        ld_relaxed_v2(rec + REC * t + (status == 2u ? 4 : 2), a, b);
        return from_words<A>(a, b);
    }
};

// The exclusive prefix of tile `t` (tile `tl` of its line) from its predecessors in the
// line. Called by the 32 lanes of one warp after the tile published its aggregate (tl > 0);
// returns the prefix in every lane. Lane j looks at tile top - j, 32 tiles at a time, and
// spins (with back-off) until every lane before the nearest inclusive prefix shows at least
// an aggregate. Predecessors have smaller blockIdx, so they are resident or done (in-order
// dispatch), and they publish their aggregates without waiting on this tile: no deadlock.
template <class R, class A, class S>
__device__ __forceinline__ A lookback(const R& r, const S& st, long long t, long long tl, int lane) {
    A prefix = r.identity();
    const long long first = t - tl;  // first tile of this line
    long long top = t - 1;
    while (true) {
        const long long i = top - lane;
        const bool in = i >= first;
        unsigned int s, inc;
        A v;
        unsigned int ns = SPIN_NS_FIRST;
        while (true) {
            if (in) {
                s = st.poll(i, v);
            } else {  // before the line: the identity, as good as an inclusive prefix
                s = 2u;
                v = r.identity();
            }
            inc = __ballot_sync(0xffffffffu, s == 2u);
            const unsigned int invalid = __ballot_sync(0xffffffffu, s == 0u);
            const unsigned int before = inc ? (inc & (0u - inc)) - 1u : 0xffffffffu;
            if (!(invalid & before)) break;
            __nanosleep(ns);
            ns = ns < SPIN_NS_MAX ? 2 * ns : SPIN_NS_MAX;
        }
        // lanes up to and including the nearest inclusive prefix (all 32 when there is none)
        const unsigned int use = inc ? ((inc & (0u - inc)) << 1) - 1u : 0xffffffffu;
        const bool mine = (use >> lane) & 1u;
        if constexpr (!S::packed) {
            st.acquire();
            if (mine && in) v = st.value(i, s);
        }
        if (!mine) v = r.identity();
        prefix = r.combine(gp::red::warp_reduce(r, v), prefix);  // valid in lane 0
        if (inc) break;
        top -= 32;
    }
    return gp::red::shfl_idx(prefix, 0);
}

}  // namespace scan
}  // namespace gp
