// Tile ranking and look-back primitives of the sort family (gparray/_kernels/sort.cu): the
// look-back status words and their relaxed loads/stores, the warp-level multisplit that ranks
// a tile's digits (rank_in_warps), the per-bucket counts and starts across a block's warps,
// the histogram's digit counter, and the route's buffer pick.
#pragma once
#include "types.cuh"
#include "sort.cuh"

namespace gp {
namespace sort {

constexpr int RADIX = GP_SORT_RADIX;
constexpr unsigned FULL = 0xffffffffu;

template <class W>
struct word {
    static constexpr int SHIFT = 8 * sizeof(W) - 2;
    static constexpr W AGG = W(1) << SHIFT;
    static constexpr W INC = W(2) << SHIFT;
    static constexpr W COUNT = (W(1) << SHIFT) - 1;
};

__device__ __forceinline__ void st_relaxed(unsigned int* p, unsigned int v) {
    asm volatile("st.relaxed.gpu.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned int ld_relaxed(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// An item's digit and rank through one interface, whether they live in plain arrays (one
// register per item) or packed (GP_SORT_PACK_DIGITS in sort.cu: four 8-bit digits, two 16-bit
// ranks per register, fewer live registers in the onesweep pass). Every index is a
// compile-time constant after unrolling, so a packed get or set is one bit-field instruction.
template <int N>
struct digits8 {
    unsigned int w[(N + 3) / 4];
};
// A if B, else C (the type a compile-time switch picks; no <type_traits> under NVRTC here)
template <bool B, class A, class C>
struct pick_type {
    typedef A type;
};
template <class A, class C>
struct pick_type<false, A, C> {
    typedef C type;
};
template <int N>
struct ranks16 {
    unsigned int w[(N + 1) / 2];
};
template <int N>
__device__ __forceinline__ unsigned int dget(const unsigned int (&d)[N], int k) { return d[k]; }
template <int N>
__device__ __forceinline__ void dset(unsigned int (&d)[N], int k, unsigned int v) { d[k] = v; }
template <int N>
__device__ __forceinline__ unsigned int dget(const digits8<N>& d, int k) { return (d.w[k >> 2] >> (8 * (k & 3))) & 0xFFu; }
template <int N>
__device__ __forceinline__ void dset(digits8<N>& d, int k, unsigned int v) {
    const int sh = 8 * (k & 3);
    d.w[k >> 2] = (k & 3) == 0 ? v : (d.w[k >> 2] & ~(0xFFu << sh)) | (v << sh);   // (set in order of k)
}
template <int N>
__device__ __forceinline__ unsigned short rget(const unsigned short (&r)[N], int k) { return r[k]; }
template <int N>
__device__ __forceinline__ void rset(unsigned short (&r)[N], int k, unsigned int v) { r[k] = static_cast<unsigned short>(v); }
template <int N>
__device__ __forceinline__ unsigned int rget(const ranks16<N>& r, int k) { return (r.w[k >> 1] >> (16 * (k & 1))) & 0xFFFFu; }
template <int N>
__device__ __forceinline__ void rset(ranks16<N>& r, int k, unsigned int v) {
    r.w[k >> 1] = (k & 1) == 0 ? v : (r.w[k >> 1] & 0xFFFFu) | (v << 16);   // (set in order of k)
}
// rank k replaced, the others kept (rset's even k clears its odd neighbour: made for filling in order)
template <int N>
__device__ __forceinline__ void rput(unsigned short (&r)[N], int k, unsigned int v) { r[k] = static_cast<unsigned short>(v); }
template <int N>
__device__ __forceinline__ void rput(ranks16<N>& r, int k, unsigned int v) {
    const int sh = 16 * (k & 1);
    r.w[k >> 1] = (r.w[k >> 1] & ~(0xFFFFu << sh)) | (v << sh);
}

template <class U>
__device__ __forceinline__ U shfl_xor(U v, int m) {
    if constexpr (sizeof(U) < 4) {
        return static_cast<U>(__shfl_xor_sync(FULL, static_cast<unsigned int>(v), m));
    } else {
        return __shfl_xor_sync(FULL, v, m);
    }
}

// Shared memory of the tile ranking: per-warp bucket counters (then their exclusive prefix
// across warps), bucket counts and starts, the warp sums of the block scan. The per-warp
// match words (bit l of match[w * RADIX + d]: lane l holds digit d) are the caller's
// WARPS * RADIX words of shared memory, free while the ranking runs (the onesweep pass lends
// its tile buffer).
template <int THREADS>
struct rank_smem {
    static constexpr int WARPS = THREADS / 32;
    unsigned short whist[WARPS][RADIX];
    unsigned int start[RADIX];
    unsigned int wsum[WARPS];
};

#ifndef GP_SORT_RANK_MODE
#define GP_SORT_RANK_MODE 0  // how lanes holding one digit find each other: 0 shared atomicOr on
                             // match words, 1 __match_any_sync, 2 one ballot per digit bit
                             // (tools/tune.py --groups sort); 3: the onesweep pass counts first
                             // and ranks into seeded slots (warp_histogram, below), the segmented
                             // sorts as 0; per tile: GP_SORT_RANK3_WIDE / _NARROW (sort.cu). H200:
                             // 1 and 2 slower everywhere, 3 slower on the wide tile, within 1-2%
                             // on the others (docs/performance.md, "Sort tuning switches")
#endif

// Step 1: the stable rank of every item among the items of its warp with the same digit,
// and the warp's bucket counts (in s.whist). Items are warp-striped: item k of lane l of
// warp w is tile element w * 32 * ITEMS + 32 k + l; every item counts (the caller gives the
// items past the end of its data digit RADIX - 1: they are last in the tile and stay last).
// The lanes sharing a digit find each other with one shared atomicOr each (every lane sets
// its bit in its digit's match word and reads the word back), far fewer instructions than
// one ballot per digit bit; the highest such lane (the leader) advances the warp's counter
// and clears the word.
// PACK: the rank goes into bits 16.. of dig[k] (whose digit stays in bits 0..7) instead of
// rank[k], so digits and ranks share registers (the onesweep pass, GP_SORT_PACK_RANKS).
template <int THREADS, int ITEMS, bool PACK = false, class D, class R>
__device__ __forceinline__ void rank_in_warps(D& dig, R& rank, rank_smem<THREADS>& s, unsigned int* match) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned short* h = s.whist[w];
    unsigned int* mt = match + w * RADIX;
#pragma unroll
    for (int i = lane; i < RADIX; i += 32) {
        h[i] = 0;
        mt[i] = 0u;
    }
    __syncwarp();
    const unsigned int me = 1u << lane, below = me - 1u;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned int d = dget(dig, k);   // (PACK: no rank in it yet)
#if GP_SORT_RANK_MODE == 1
        const unsigned int peers = __match_any_sync(FULL, d);
#elif GP_SORT_RANK_MODE == 2
        unsigned int peers = FULL;
#pragma unroll
        for (int bit = 0; bit < GP_SORT_BITS; ++bit) {
            const unsigned int on = __ballot_sync(FULL, (d >> bit) & 1u);
            peers &= ((d >> bit) & 1u) ? on : ~on;
        }
#else
        atomicOr(mt + d, me);
        __syncwarp();
        const unsigned int peers = mt[d];
#endif
        const int leader = 31 - __clz(peers);
        __syncwarp();  // every lane has its word before the leader clears it
        unsigned int old = 0;
        if (lane == leader) {
            if (GP_SORT_RANK_MODE == 0 || GP_SORT_RANK_MODE == 3) mt[d] = 0u;  // (the atomicOr words)
            old = h[d];
            h[d] = static_cast<unsigned short>(old + __popc(peers));
        }
        old = __shfl_sync(FULL, old, leader);
        if constexpr (PACK) {
            dig[k] = d | ((old + __popc(peers & below)) << 16);
        } else {
            rset(rank, k, old + __popc(peers & below));
        }
        __syncwarp();
    }
}

// Step 2 (after a __syncthreads): for the DPT = RADIX / THREADS buckets b = DPT * t + j of
// this thread, the tile's count (returned) and, in s.whist[w][b], the count of the warps
// before w (exclusive prefix across warps).
// Blocks of more than RADIX threads: thread t < RADIX owns bucket t, the others none (count 0).
__host__ __device__ constexpr int per_thread(int threads) { return threads > RADIX ? 1 : RADIX / threads; }

template <int THREADS>
__device__ __forceinline__ void bucket_counts(rank_smem<THREADS>& s, unsigned int (&cnt)[per_thread(THREADS)]) {
    constexpr int DPT = per_thread(THREADS);
    if constexpr (THREADS > RADIX) {
        if (threadIdx.x >= RADIX) {
            cnt[0] = 0u;
            return;
        }
    }
#pragma unroll
    for (int j = 0; j < DPT; ++j) {
        const int b = DPT * threadIdx.x + j;
        unsigned int run = 0;
#pragma unroll
        for (int w = 0; w < rank_smem<THREADS>::WARPS; ++w) {
            const unsigned int c = s.whist[w][b];
            s.whist[w][b] = static_cast<unsigned short>(run);
            run += c;
        }
        cnt[j] = run;
    }
}

// Step 3: exclusive starts of the buckets in the tile, into s.start (every thread calls it;
// ends with a __syncthreads).
template <int THREADS>
__device__ __forceinline__ void bucket_starts(rank_smem<THREADS>& s,
                                              const unsigned int (&cnt)[per_thread(THREADS)]) {
    constexpr int DPT = per_thread(THREADS);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned int tot = 0;
#pragma unroll
    for (int j = 0; j < DPT; ++j) tot += cnt[j];
    unsigned int inc = tot;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned int u = __shfl_up_sync(FULL, inc, o);
        if (lane >= o) inc += u;
    }
    if (lane == 31) s.wsum[w] = inc;
    __syncthreads();
    unsigned int run = inc - tot;
    for (int i = 0; i < w; ++i) run += s.wsum[i];
    if (THREADS <= RADIX || threadIdx.x < RADIX) {
#pragma unroll
        for (int j = 0; j < DPT; ++j) {
            s.start[DPT * threadIdx.x + j] = run;
            run += cnt[j];
        }
    }
    __syncthreads();
}

// GP_SORT_RANK_MODE 3 (the onesweep pass; the order of CUB's "early counts" ranking): the
// warp histograms first, one shared atomicAdd per item on two 16-bit counters per word (a
// warp counts at most 32 * ITEMS < 2^16 items of a digit), so that bucket_counts and
// bucket_starts run, and the tile's counts are published, before the ranking; seed_slots then
// turns s.whist[w][b] into the first tile slot of warp w's items of bucket b, and rank_seeded
// gives every item its slot in the tile (no per-item lookups of s.start / s.whist after it).
template <int THREADS, int ITEMS, class D>
__device__ __forceinline__ void warp_histogram(const D& dig, rank_smem<THREADS>& s) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned int* h = reinterpret_cast<unsigned int*>(s.whist[w]);  // s.whist[w][2i + 1]: high half of h[i]
#pragma unroll
    for (int i = lane; i < RADIX / 2; i += 32) h[i] = 0u;
    __syncwarp();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) atomicAdd(h + (dget(dig, k) >> 1), (dget(dig, k) & 1u) ? 0x10000u : 1u);
}

// After bucket_counts and bucket_starts: s.whist[w][b] += s.start[b]; ends with a __syncthreads.
template <int THREADS>
__device__ __forceinline__ void seed_slots(rank_smem<THREADS>& s) {
    constexpr int DPT = per_thread(THREADS);
    if (THREADS <= RADIX || threadIdx.x < RADIX) {
#pragma unroll
        for (int j = 0; j < DPT; ++j) {
            const int b = DPT * threadIdx.x + j;
            const unsigned int st = s.start[b];
#pragma unroll
            for (int w = 0; w < rank_smem<THREADS>::WARPS; ++w)
                s.whist[w][b] = static_cast<unsigned short>(s.whist[w][b] + st);
        }
    }
    __syncthreads();
}

// The slot in the tile of every item (after seed_slots): lanes sharing a digit found as in
// rank_in_warps (shared atomicOr on match words); the leader advances the warp's seeded slot.
template <int THREADS, int ITEMS, class D, class R>
__device__ __forceinline__ void rank_seeded(const D& dig, R& slot, rank_smem<THREADS>& s, unsigned int* match) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned short* h = s.whist[w];
    unsigned int* mt = match + w * RADIX;
#pragma unroll
    for (int i = lane; i < RADIX; i += 32) mt[i] = 0u;
    __syncwarp();
    const unsigned int me = 1u << lane, below = me - 1u;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned int d = dget(dig, k);
        atomicOr(mt + d, me);
        __syncwarp();
        const unsigned int peers = mt[d];
        const int leader = 31 - __clz(peers);
        __syncwarp();  // every lane has its word before the leader clears it
        unsigned int first = 0;
        if (lane == leader) {
            mt[d] = 0u;
            first = h[d];
            h[d] = static_cast<unsigned short>(first + __popc(peers));
        }
        first = __shfl_sync(FULL, first, leader);
        rset(slot, k, first + __popc(peers & below));
        __syncwarp();
    }
}

// Count digit d (when ok) into the shared histogram h; the whole warp calls it. A warp whose
// 32 lanes all hold the same digit (constant high digits, row ids, sorted runs) adds 32 with
// one atomic; otherwise one shared atomic per lane (random digits rarely collide).
__device__ __forceinline__ void count_digit(unsigned int* h, unsigned int d, bool ok) {
    const unsigned int d0 = __shfl_sync(FULL, d, 0);
    if (__all_sync(FULL, ok && d == d0)) {
        if ((threadIdx.x & 31) == 0) atomicAdd(h + d0, 32u);
    } else if (ok) {
        atomicAdd(h + d, 1u);
    }
}

template <class T>
__device__ __forceinline__ T* pick(int id, T* in, T* out, T* t0, T* t1) {
    return id == BUF_IN ? in : id == BUF_OUT ? out : id == BUF_T0 ? t0 : id == BUF_T1 ? t1 : nullptr;
}

}  // namespace sort
}  // namespace gp
