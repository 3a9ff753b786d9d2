// gparray kernel family "sets": unique_* and isin (planned in gparray/_set_functions.py,
// launched by gparray/_engine/_sets.py).
//
// unique over a sorted sequence s of n elements (ascending, NaNs last, -0.0 == 0.0), in
// tiles of GP_SET_TILE; element e is a *head* when e == 0 or !(s[e] == s[e - 1]) (so every
// NaN is a head of its own), and its group id is (heads at positions <= e) - 1:
//   gp_unique_count   per-tile head counts. GATHER: s is built on the way, s[e] =
//                     src[perm[e]] (perm: a stable argsort of src), and written out, so the
//                     write pass reads it in order;
//   (the scan engine turns the counts into inclusive offsets; the host reads the total)
//   gp_unique_write   each warp ballots 32 consecutive heads per round, so a group id is a
//                     popcount; writes values[g] = s[e] at heads, and as asked: IDX
//                     indices[g] = perm[e] (the first occurrence: perm is stable), INV
//                     inverse[perm[e]] = g for every e, FIRST first[g] = e (and first[total] = n);
//   gp_unique_counts  counts[g] = first[g + 1] - first[g].
// isin: x1 (any layout) against a sorted table s2 of n2 elements:
//   gp_isin           each block stages every stride-th table element (nsamp <= the
//                     samples that fit GP_SET_SAMPLE_BYTES) in shared memory, finds a
//                     value's window there, then searches the window (< stride elements) in
//                     global memory. Equality is the compute type's == (a NaN is in nothing).
//                     Integer tables whose range hi - lo (hi, lo: the last and first table
//                     elements) is below the bitmap's capacity are looked up in a bitmap
//                     instead (bit v - lo set for every table value v; NumPy's isin has the
//                     same "table" method): one read per element. The kernels decide from
//                     the table itself, so the host never reads the range:
//   gp_isin_bits_clear  zeroes the bitmap words the range needs (nothing when it does not fit)
//   gp_isin_bits_set    sets the bit of every table element (when the range fits)
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/compact.cuh"
#include "gp/complex_ops.cuh"

#define GP_SET_BLOCK 256
#define GP_SET_ROUNDS 16
#define GP_SET_WSEG (GP_SET_ROUNDS * 32)
#define GP_SET_TILE ((GP_SET_BLOCK / 32) * GP_SET_WSEG)
#define GP_SET_SAMPLE_BYTES 16384

namespace gp {
namespace sets {

// Ascending order with NaNs last (the order sort uses): a < b.
template <class T>
__device__ __forceinline__ bool less(T a, T b) { return a < b; }
template <>
__device__ __forceinline__ bool less<float>(float a, float b) { return a < b || (b != b && a == a); }
template <>
__device__ __forceinline__ bool less<double>(double a, double b) { return a < b || (b != b && a == a); }

// v of lane - 1 (lane 0 gets its own v back), for any trivially copyable T (moved as words).
template <class T>
__device__ __forceinline__ T shfl_up1(const T& v) {
    constexpr int W = (sizeof(T) + 3) / 4;
    union U {
        T t;
        unsigned int w[W];
        __device__ U() : w{} {}
    } u;
    u.t = v;
#pragma unroll
    for (int i = 0; i < W; ++i) u.w[i] = __shfl_up_sync(0xffffffffu, u.w[i], 1);
    return u.t;
}

template <class T, bool GATHER>
__device__ __forceinline__ T sorted_at(const T* src, const long long* perm, long long e) {
    return GATHER ? src[perm[e]] : src[e];
}

// v of lane 31 to every lane.
template <class T>
__device__ __forceinline__ T shfl_31(const T& v) {
    constexpr int W = (sizeof(T) + 3) / 4;
    union U {
        T t;
        unsigned int w[W];
        __device__ U() : w{} {}
    } u;
    u.t = v;
#pragma unroll
    for (int i = 0; i < W; ++i) u.w[i] = __shfl_sync(0xffffffffu, u.w[i], 31);
    return u.t;
}

// A warp's R rounds of elements (round k: element base + 32 k + lane), every load issued
// before any is used, and head[k]: whether round k's element starts a group. The element
// before round k's lane 0 is round k - 1's lane 31 (a shuffle); before round 0, one load.
// Every lane of the warp must call it.
template <class T, bool GATHER, int R>
__device__ __forceinline__ void rounds_and_heads(const T* src, const long long* perm, long long base, long long n,
                                                 T (&v)[R], bool (&head)[R]) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 0; k < R; ++k) {
        const long long e = base + 32 * k + lane;
        v[k] = e < n ? sorted_at<T, GATHER>(src, perm, e) : T{};
    }
    T before{};
    if (base > 0 && base - 1 < n) before = sorted_at<T, GATHER>(src, perm, base - 1);
#pragma unroll
    for (int k = 0; k < R; ++k) {
        const T up = shfl_up1(v[k]);
        const T last = k > 0 ? shfl_31(v[k > 0 ? k - 1 : 0]) : before;
        const T prev = lane == 0 ? last : up;
        const long long e = base + 32 * k + lane;
        head[k] = e < n && (e == 0 || !(v[k] == prev));
    }
}

}  // namespace sets
}  // namespace gp

template <class T, bool GATHER>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_unique_count(long long* __restrict__ counts, T* __restrict__ sorted, const T* __restrict__ src,
                const long long* __restrict__ perm, long long n) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long base = static_cast<long long>(blockIdx.x) * GP_SET_TILE + w * GP_SET_WSEG;
    T v[GP_SET_ROUNDS];
    bool head[GP_SET_ROUNDS];
    gp::sets::rounds_and_heads<T, GATHER, GP_SET_ROUNDS>(src, perm, base, n, v, head);
    int c = 0;
#pragma unroll
    for (int k = 0; k < GP_SET_ROUNDS; ++k) {
        c += head[k] ? 1 : 0;
        const long long e = base + 32 * k + lane;
        if (GATHER && e < n) sorted[e] = v[k];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    gp::compact::tile_count<GP_SET_BLOCK>(c, counts);
}

template <class T, bool IDX, bool INV, bool FIRST>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_unique_write(T* __restrict__ values, long long* __restrict__ indices, long long* __restrict__ inverse,
                long long* __restrict__ first, const T* __restrict__ s, const long long* __restrict__ perm,
                const long long* __restrict__ incl, long long n, long long total) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long base = static_cast<long long>(blockIdx.x) * GP_SET_TILE + w * GP_SET_WSEG;
    unsigned int masks[GP_SET_ROUNDS];
    T v[GP_SET_ROUNDS];
    bool head[GP_SET_ROUNDS];
    gp::sets::rounds_and_heads<T, false, GP_SET_ROUNDS>(s, nullptr, base, n, v, head);
    const int c = gp::compact::ballot_rounds<GP_SET_ROUNDS>([&](int k) { return head[k]; }, masks);
    long long pos = gp::compact::warp_start<GP_SET_BLOCK>(c, incl);  // heads before this round
    const unsigned int upto = 0xffffffffu >> (31 - lane);  // lanes <= this one
#pragma unroll
    for (int k = 0; k < GP_SET_ROUNDS; ++k) {
        const unsigned int m = masks[k];
        const long long e = base + k * 32 + lane;
        if (e < n) {
            const long long g = pos + __popc(m & upto) - 1;
            if ((m >> lane) & 1u) {
                values[g] = v[k];
                if (IDX) indices[g] = perm[e];
                if (FIRST) first[g] = e;
            }
            if (INV) inverse[perm[e]] = g;
            if (FIRST && e == n - 1) first[total] = n;
        }
        pos += __popc(m);
    }
}

__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_unique_counts(long long* __restrict__ counts, const long long* __restrict__ first, long long total) {
    const long long g = static_cast<long long>(blockIdx.x) * GP_SET_BLOCK + threadIdx.x;
    if (g < total) counts[g] = first[g + 1] - first[g];
}

// out[e] = (x1[e] is in s2) != INVERT over the C-order positions e of x1 (CONTIG: e is the
// element offset; else the `layout` indexer); s2 ascending (NaNs last) of n2 >= 1 elements,
// compared as CT; nsamp = ceil(n2 / stride) samples s2[j * stride] fit the shared array.
namespace gp {
namespace sets {

// The bitmap's range of a sorted integer table: lo = s2[0] (as CT) and the bit count
// hi - lo + 1 (as unsigned 64-bit; 0 when it does not fit below cap_bits).
template <class TS, class CT>
__device__ __forceinline__ unsigned long long bits_range(const TS* s2, long long n2, long long cap_bits, CT& lo) {
    lo = gp::cast<CT>(s2[0]);
    const unsigned long long span = static_cast<unsigned long long>(gp::cast<CT>(s2[n2 - 1])) -
                                    static_cast<unsigned long long>(lo);
    return span < static_cast<unsigned long long>(cap_bits) ? span + 1 : 0ull;
}

}  // namespace sets
}  // namespace gp

template <class TS, class CT>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_isin_bits_clear(unsigned int* __restrict__ bits, const TS* __restrict__ s2, long long n2, long long cap_bits) {
    CT lo;
    const unsigned long long nb = gp::sets::bits_range<TS, CT>(s2, n2, cap_bits, lo);
    const long long words = static_cast<long long>((nb + 31) >> 5);
    const long long step = static_cast<long long>(gridDim.x) * GP_SET_BLOCK;
    for (long long i = static_cast<long long>(blockIdx.x) * GP_SET_BLOCK + threadIdx.x; i < words; i += step)
        bits[i] = 0u;
}

template <class TS, class CT>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_isin_bits_set(unsigned int* __restrict__ bits, const TS* __restrict__ s2, long long n2, long long cap_bits) {
    CT lo;
    if (gp::sets::bits_range<TS, CT>(s2, n2, cap_bits, lo) == 0) return;
    const long long step = static_cast<long long>(gridDim.x) * GP_SET_BLOCK;
    for (long long j = static_cast<long long>(blockIdx.x) * GP_SET_BLOCK + threadIdx.x; j < n2; j += step) {
        const unsigned long long d = static_cast<unsigned long long>(gp::cast<CT>(s2[j])) -
                                     static_cast<unsigned long long>(lo);
        atomicOr(bits + (d >> 5), 1u << (d & 31u));
    }
}

// bits: nullptr (search only), or the bitmap of gp_isin_bits_set (used when the table's
// range fits cap_bits; integer CT only).
template <class T1, class TS, class CT, bool INVERT, bool CONTIG, int ND, class IdxT>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_isin(bool* __restrict__ out, const T1* __restrict__ x1, gp::StridedParams<1, ND> layout, IdxT n1,
        const TS* __restrict__ s2, long long n2, long long stride, int nsamp, const unsigned int* __restrict__ bits,
        long long cap_bits) {
    __shared__ CT smp[GP_SET_SAMPLE_BYTES / sizeof(CT)];
    const long long step = static_cast<long long>(gridDim.x) * GP_SET_BLOCK;  // e + step may pass 2^31
    CT blo{};
    unsigned long long nb = 0;
    if (bits != nullptr) nb = gp::sets::bits_range<TS, CT>(s2, n2, cap_bits, blo);
    if (nb) {  // bitmap lookup
        for (long long e = static_cast<long long>(blockIdx.x) * GP_SET_BLOCK + threadIdx.x; e < n1; e += step) {
            CT v;
            if (CONTIG) {
                v = gp::cast<CT>(x1[e]);
            } else {
                IdxT off[1];
                gp::strided_offsets<1, ND, IdxT>(layout, static_cast<IdxT>(e), off);
                v = gp::cast<CT>(x1[off[0]]);
            }
            const unsigned long long d = static_cast<unsigned long long>(v) - static_cast<unsigned long long>(blo);
            const bool found = d < nb && ((__ldg(bits + (d >> 5)) >> (d & 31u)) & 1u);
            out[e] = found != INVERT;
        }
        return;
    }
    for (int j = threadIdx.x; j < nsamp; j += GP_SET_BLOCK) smp[j] = gp::cast<CT>(s2[j * stride]);
    __syncthreads();
    for (long long e = static_cast<long long>(blockIdx.x) * GP_SET_BLOCK + threadIdx.x; e < n1; e += step) {
        CT v;
        if (CONTIG) {
            v = gp::cast<CT>(x1[e]);
        } else {
            IdxT off[1];
            gp::strided_offsets<1, ND, IdxT>(layout, static_cast<IdxT>(e), off);
            v = gp::cast<CT>(x1[off[0]]);
        }
        int lo = 0, hi = nsamp;  // the first sample that is not below v
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (gp::sets::less(smp[mid], v))
                lo = mid + 1;
            else
                hi = mid;
        }
        bool found = lo < nsamp && smp[lo] == v;
        if (!found && lo > 0 && stride > 1) {
            // v lies strictly between samples lo - 1 and lo: table positions (a0, b0)
            long long a = (lo - 1) * stride + 1;
            const long long b0 = min(static_cast<long long>(lo) * stride, n2);
            long long b = b0;
            while (a < b) {
                const long long mid = a + ((b - a) >> 1);
                if (gp::sets::less(gp::cast<CT>(s2[mid]), v))
                    a = mid + 1;
                else
                    b = mid;
            }
            found = a < b0 && gp::cast<CT>(s2[a]) == v;
        }
        out[e] = found != INVERT;
    }
}

// ---------------------------------------------------------------------------- dense unique
// unique_values / unique_inverse of integer (and bool) input whose range fits a bitmap of
// cap_bits bits (gparray/_engine/_sets.py ``dense_bits``): no sort. Values map to ordered
// 64-bit keys (signed: sign bit flipped), rng = {max key, ~min key} (atomicMax from zero):
//   gp_dense_range     rng of the n elements (host zeroes rng first)
//   gp_dense_clear     zeroes the bitmap words the range needs (none when it does not fit)
//   gp_dense_mark      sets bit key - lo of every element (skipped when already set: a read
//                      through L2 first, so repeated values cost no atomic)
//   gp_dense_count     per-tile popcounts over tiles of GP_SET_TILE bits; when the range does
//                      not fit, tile 0 counts DENSE_NO_FIT (a negative total tells the host
//                      to sort instead)
//   (the scan engine and the host read back the total, as for the sorted pipeline)
//   gp_dense_write     values[g] = the g-th set bit's value (ascending: bit order), and with
//                      WPRE the exclusive prefix of set bits before each word
//   gp_dense_inverse   inverse[e] = wpre[w] + set bits of word w below element e's bit
#define GP_DENSE_NO_FIT (-(1ll << 62))
#define GP_DENSE_UNROLL 8  // elements per thread per round of the passes over x: all loaded before any is used

namespace gp {
namespace sets {

template <class T>
struct dense_key {
    static constexpr bool SIGNED = T(-1) < T(0);
    static constexpr unsigned long long FLIP = SIGNED ? (1ull << 63) : 0ull;
    __device__ __forceinline__ static unsigned long long of(T v) {
        return SIGNED ? static_cast<unsigned long long>(static_cast<long long>(v)) ^ FLIP
                      : static_cast<unsigned long long>(v);
    }
    __device__ __forceinline__ static T value(unsigned long long k) {
        return SIGNED ? static_cast<T>(static_cast<long long>(k ^ FLIP)) : static_cast<T>(k);
    }
};

// lo (the minimum key) and the number of bits the range needs; 0 when it exceeds cap_bits.
__device__ __forceinline__ unsigned long long dense_range(const unsigned long long* rng, long long cap_bits,
                                                          unsigned long long& lo) {
    lo = ~rng[1];
    const unsigned long long span = rng[0] - lo;
    return rng[0] >= lo && span < static_cast<unsigned long long>(cap_bits) ? span + 1 : 0ull;
}

// Round r of a pass over the n elements: this thread's GP_DENSE_UNROLL elements e0 + j *
// GP_SET_BLOCK (block-striped: each load of a warp reads consecutive elements), loaded
// together; ok[j]: the element exists.
template <class T>
__device__ __forceinline__ void dense_round(const T* __restrict__ x, long long n, long long e0,
                                            T (&v)[GP_DENSE_UNROLL], bool (&ok)[GP_DENSE_UNROLL]) {
#pragma unroll
    for (int j = 0; j < GP_DENSE_UNROLL; ++j) {
        const long long e = e0 + static_cast<long long>(j) * GP_SET_BLOCK;
        ok[j] = e < n;
        v[j] = ok[j] ? x[e] : T();
    }
}

}  // namespace sets
}  // namespace gp

// The first element of this thread's rounds and the step between them.
#define GP_DENSE_ROUNDS(e0, step)                                                                    \
    const long long step = static_cast<long long>(gridDim.x) * GP_SET_BLOCK * GP_DENSE_UNROLL;      \
    for (long long e0 = static_cast<long long>(blockIdx.x) * GP_SET_BLOCK * GP_DENSE_UNROLL + threadIdx.x; e0 < n; \
         e0 += step)

template <class T>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_dense_range(unsigned long long* __restrict__ rng, const T* __restrict__ x, long long n) {
    using K = gp::sets::dense_key<T>;
    unsigned long long hi = 0ull, nlo = 0ull;
    GP_DENSE_ROUNDS(e0, step) {
        T v[GP_DENSE_UNROLL];
        bool ok[GP_DENSE_UNROLL];
        gp::sets::dense_round<T>(x, n, e0, v, ok);
#pragma unroll
        for (int j = 0; j < GP_DENSE_UNROLL; ++j) {
            if (ok[j]) {
                const unsigned long long k = K::of(v[j]);
                hi = k > hi ? k : hi;
                nlo = ~k > nlo ? ~k : nlo;
            }
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long h2 = __shfl_down_sync(0xffffffffu, hi, o);
        const unsigned long long l2 = __shfl_down_sync(0xffffffffu, nlo, o);
        hi = h2 > hi ? h2 : hi;
        nlo = l2 > nlo ? l2 : nlo;
    }
    __shared__ unsigned long long s_hi[GP_SET_BLOCK / 32], s_lo[GP_SET_BLOCK / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) {
        s_hi[w] = hi;
        s_lo[w] = nlo;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
#pragma unroll
        for (int i = 1; i < GP_SET_BLOCK / 32; ++i) {
            hi = s_hi[i] > hi ? s_hi[i] : hi;
            nlo = s_lo[i] > nlo ? s_lo[i] : nlo;
        }
        atomicMax(rng, hi);
        atomicMax(rng + 1, nlo);
    }
}

__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_dense_clear(unsigned int* __restrict__ bits, const unsigned long long* __restrict__ rng, long long cap_bits) {
    unsigned long long lo;
    const long long words = static_cast<long long>((gp::sets::dense_range(rng, cap_bits, lo) + 31) >> 5);
    const long long step = static_cast<long long>(gridDim.x) * GP_SET_BLOCK;
    for (long long i = static_cast<long long>(blockIdx.x) * GP_SET_BLOCK + threadIdx.x; i < words; i += step)
        bits[i] = 0u;
}

template <class T>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_dense_mark(unsigned int* __restrict__ bits, const T* __restrict__ x, long long n,
              const unsigned long long* __restrict__ rng, long long cap_bits) {
    using K = gp::sets::dense_key<T>;
    unsigned long long lo;
    if (gp::sets::dense_range(rng, cap_bits, lo) == 0) return;
    GP_DENSE_ROUNDS(e0, step) {
        T v[GP_DENSE_UNROLL];
        bool ok[GP_DENSE_UNROLL];
        gp::sets::dense_round<T>(x, n, e0, v, ok);
        unsigned int held[GP_DENSE_UNROLL];
#pragma unroll
        for (int j = 0; j < GP_DENSE_UNROLL; ++j)
            held[j] = ok[j] ? __ldcg(bits + ((K::of(v[j]) - lo) >> 5)) : ~0u;
#pragma unroll
        for (int j = 0; j < GP_DENSE_UNROLL; ++j) {
            const unsigned long long d = K::of(v[j]) - lo;
            const unsigned int bit = 1u << (d & 31u);
            if (ok[j] && !(held[j] & bit)) atomicOr(bits + (d >> 5), bit);
        }
    }
}

// The GP_SET_ROUNDS words of this warp in tile blockIdx.x (word w * ROUNDS + k of the
// tile; 0 past the words the range needs), and their popcount.
__device__ __forceinline__ int dense_words(const unsigned int* __restrict__ bits, long long words,
                                           unsigned int (&m)[GP_SET_ROUNDS]) {
    const int w = threadIdx.x >> 5;
    const long long base = static_cast<long long>(blockIdx.x) * (GP_SET_TILE / 32) + w * GP_SET_ROUNDS;
    int c = 0;
#pragma unroll
    for (int k = 0; k < GP_SET_ROUNDS; ++k) {
        m[k] = base + k < words ? bits[base + k] : 0u;
        c += __popc(m[k]);
    }
    return c;
}

__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_dense_count(long long* __restrict__ counts, const unsigned int* __restrict__ bits,
               const unsigned long long* __restrict__ rng, long long cap_bits) {
    unsigned long long lo;
    const unsigned long long nb = gp::sets::dense_range(rng, cap_bits, lo);
    if (nb == 0) {
        if (threadIdx.x == 0) counts[blockIdx.x] = blockIdx.x == 0 ? GP_DENSE_NO_FIT : 0ll;
        return;
    }
    // every lane reads the warp's words (the same addresses: one transaction each)
    unsigned int m[GP_SET_ROUNDS];
    gp::compact::tile_count<GP_SET_BLOCK>(dense_words(bits, static_cast<long long>((nb + 31) >> 5), m), counts);
}

template <class T, bool WPRE>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_dense_write(T* __restrict__ values, int* __restrict__ wpre, const unsigned int* __restrict__ bits,
               const unsigned long long* __restrict__ rng, const long long* __restrict__ incl, long long cap_bits) {
    using K = gp::sets::dense_key<T>;
    unsigned long long lo;
    const unsigned long long nb = gp::sets::dense_range(rng, cap_bits, lo);
    const long long words = static_cast<long long>((nb + 31) >> 5);
    unsigned int m[GP_SET_ROUNDS];
    const int c = dense_words(bits, words, m);
    long long pos = gp::compact::warp_start<GP_SET_BLOCK>(c, incl);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long wbase = static_cast<long long>(blockIdx.x) * (GP_SET_TILE / 32) + w * GP_SET_ROUNDS;
    const unsigned int below = (1u << lane) - 1u;
#pragma unroll
    for (int k = 0; k < GP_SET_ROUNDS; ++k) {
        if (WPRE && lane == 0 && wbase + k < words) wpre[wbase + k] = static_cast<int>(pos);
        if ((m[k] >> lane) & 1u)
            values[pos + __popc(m[k] & below)] =
                K::value(lo + static_cast<unsigned long long>((wbase + k) * 32 + lane));
        pos += __popc(m[k]);
    }
}

template <class T>
__global__ void __launch_bounds__(GP_SET_BLOCK)
gp_dense_inverse(long long* __restrict__ inverse, const T* __restrict__ x, long long n,
                 const unsigned int* __restrict__ bits, const int* __restrict__ wpre,
                 const unsigned long long* __restrict__ rng, long long cap_bits) {
    using K = gp::sets::dense_key<T>;
    unsigned long long lo;
    gp::sets::dense_range(rng, cap_bits, lo);
    GP_DENSE_ROUNDS(e0, step) {
        T v[GP_DENSE_UNROLL];
        bool ok[GP_DENSE_UNROLL];
        gp::sets::dense_round<T>(x, n, e0, v, ok);
        unsigned int word[GP_DENSE_UNROLL];
        int pre[GP_DENSE_UNROLL];
#pragma unroll
        for (int j = 0; j < GP_DENSE_UNROLL; ++j) {
            const long long wi = ok[j] ? static_cast<long long>((K::of(v[j]) - lo) >> 5) : 0;
            word[j] = bits[wi];
            pre[j] = wpre[wi];
        }
#pragma unroll
        for (int j = 0; j < GP_DENSE_UNROLL; ++j) {
            const unsigned long long d = K::of(v[j]) - lo;
            if (ok[j])
                inverse[e0 + static_cast<long long>(j) * GP_SET_BLOCK] =
                    static_cast<long long>(pre[j]) + __popc(word[j] & ((1u << (d & 31u)) - 1u));
        }
    }
}
