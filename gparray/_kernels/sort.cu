// gparray kernel family "sort": LSD radix sorts of keys and (key, int64 index) pairs
// (gparray/_engine/_sort.py plans and launches them; indices travel between device-wide
// passes as 32-bit values when they fit). Keys, digits and routing: gp/sort.cuh.
//
// Device-wide (long rows; rows folded into the key as more significant digits taken from
// the carried element index):
//   gp_sort_histogram  every digit's histogram in one read of the keys (per-block shared
//                      counters, one global atomic per bucket per block); also zeroes the
//                      look-back region of pass 0
//   gp_sort_prepare    one block: per pass the exclusive bucket offsets and whether the
//                      digit is constant (then the pass is skipped), and the route table
//                      (which buffers each active pass reads and writes)
//   gp_sort_onesweep   one launch per digit (Adinets & Merrill's onesweep): a block ranks
//                      its tile (onesweep_shape) of keys in shared memory (warp-level multisplit:
//                      8 ballots give the lanes holding the same digit, per-warp bucket
//                      counters give the rank), publishes its bucket counts, gets each
//                      bucket's global start by a decoupled look-back over the tiles before
//                      it (one thread per bucket; status words {flag, count} in one 32- or
//                      64-bit word, zeroed by the previous pass), then writes the tile out
//                      bucket by bucket through shared memory (runs of one bucket are
//                      contiguous in the output). Tile id = blockIdx.x: blocks start in
//                      blockIdx order, so a tile's predecessors are running or done.
// Segmented (many rows, each sorted by one block or a few lanes; rows read and written
// through their strides):
//   gp_sort_block      one row of up to THREADS * ITEMS keys per block: the same tile
//                      ranking, one pass per digit in shared memory (constant digits
//                      skipped), then the row written out
//   gp_sort_warp       rows of up to 32 keys: P lanes (a power of two >= the row length)
//                      per row, a bitonic network over (radix key, index) in registers
//                      (the index tie-break makes it stable)
#include "gp/types.cuh"
#include "gp/indexer.cuh"
#include "gp/sort.cuh"
#include "gp/sort_rank.cuh"
#include "gp/sort_switches.cuh"

// ---------------------------------------------------------------------------- device-wide
// hist: key_passes + row_passes rows of RADIX uint64 counters (zeroed by the host); zero /
// zero_words: the look-back region of pass 0, zeroed here.
//
// A block takes tiles of GP_SORT_THREADS * GP_SORT_HIST_ITEMS keys (block-striped: every
// load instruction of a warp reads 32 consecutive keys), grid-stride. Key digits are
// counted in shared memory with one atomicAdd per key and pass, the pass loop unrolled
// (sizeof(U) digits); bucket d of key pass p has SPREAD counters
// s_h[(p * RADIX + d) * SPREAD + lane % SPREAD] (more than one spreads the lanes of a warp
// holding the same digit over several words; on an H100 one counter measured fastest).
// Row-id digits (mostly one row per warp) are counted warp-uniformly (count_digit).
#ifndef GP_SORT_HIST_SPREAD
#define GP_SORT_HIST_SPREAD 1  // counters per bucket: 1 was the fastest on an H100 (2, 4, 8: tools/tune.py --groups sort)
#endif

namespace gp {
namespace sort {

template <class U>
struct hist_shape {
    static constexpr int KP = sizeof(U);  // key digits
    static constexpr int SPREAD = GP_SORT_HIST_SPREAD;
    static constexpr int KEY_WORDS = KP * RADIX * SPREAD;
    static constexpr int ROW_WORDS = (GP_SORT_MAX_PASSES - KP) * RADIX;
};

// Count the keys of one tile (FULL: all GP_SORT_THREADS * GP_SORT_HIST_ITEMS of them exist).
template <class U, bool FULL>
__device__ __forceinline__ void hist_tile(const U* __restrict__ keys, long long t0, long long n, unsigned int* s_h,
                                          int row_passes, long long seg, int kind, U flip, bool small) {
    using S = hist_shape<U>;
    constexpr int T = GP_SORT_THREADS, H = GP_SORT_HIST_ITEMS;
    const int sl = (threadIdx.x & 31) % S::SPREAD;
    const U* src = keys + t0 + threadIdx.x;
    U r[H];
    bool ok[H];
#pragma unroll
    for (int j = 0; j < H; ++j) {
        ok[j] = FULL || t0 + threadIdx.x + j * T < n;
        r[j] = ok[j] ? static_cast<U>(radix<U>(src[j * T], kind) ^ flip) : U(0);
    }
#pragma unroll
    for (int p = 0; p < S::KP; ++p) {
#pragma unroll
        for (int j = 0; j < H; ++j) {
            const unsigned int d = static_cast<unsigned int>(r[j] >> (GP_SORT_BITS * p)) & (RADIX - 1u);
            if (FULL || ok[j]) atomicAdd(s_h + (p * RADIX + d) * S::SPREAD + sl, 1u);
        }
    }
    if (row_passes) {
#pragma unroll
        for (int j = 0; j < H; ++j) {
            const long long i = t0 + threadIdx.x + j * T;
            const unsigned long long row = !ok[j] ? 0ull
                : small ? static_cast<unsigned long long>(static_cast<unsigned int>(i) / static_cast<unsigned int>(seg))
                        : static_cast<unsigned long long>(i / seg);
            for (int p = 0; p < row_passes; ++p)
                count_digit(s_h + S::KEY_WORDS + p * RADIX,
                            static_cast<unsigned int>(row >> (GP_SORT_BITS * p)) & (RADIX - 1u), ok[j]);
        }
    }
}

}  // namespace sort
}  // namespace gp

template <class U>
__global__ void __launch_bounds__(GP_SORT_THREADS)
gp_sort_histogram(const U* __restrict__ keys, long long n, unsigned long long* __restrict__ hist, int key_passes,
                  int row_passes, long long seg, int kind, unsigned long long flip64, unsigned int* __restrict__ zero,
                  long long zero_words) {
    using namespace gp::sort;
    using S = hist_shape<U>;
    constexpr long long TH = static_cast<long long>(GP_SORT_THREADS) * GP_SORT_HIST_ITEMS;
    __shared__ unsigned int s_h[S::KEY_WORDS + S::ROW_WORDS];
    for (int i = threadIdx.x; i < S::KEY_WORDS + S::ROW_WORDS; i += GP_SORT_THREADS) s_h[i] = 0;
    const long long zstride = static_cast<long long>(gridDim.x) * GP_SORT_THREADS;
    for (long long i = static_cast<long long>(blockIdx.x) * GP_SORT_THREADS + threadIdx.x; i < zero_words; i += zstride)
        zero[i] = 0u;
    __syncthreads();
    const U flip = static_cast<U>(flip64);
    const bool small = n <= 0xffffffffll;
    for (long long t0 = blockIdx.x * TH; t0 < n; t0 += static_cast<long long>(gridDim.x) * TH) {
        if (n - t0 >= TH)
            hist_tile<U, true>(keys, t0, n, s_h, row_passes, seg, kind, flip, small);
        else
            hist_tile<U, false>(keys, t0, n, s_h, row_passes, seg, kind, flip, small);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < (key_passes + row_passes) * RADIX; i += GP_SORT_THREADS) {
        unsigned int c = 0;
        if (i < key_passes * RADIX) {
#pragma unroll
            for (int k = 0; k < S::SPREAD; ++k) c += s_h[i * S::SPREAD + k];
        } else {
            c = s_h[S::KEY_WORDS + (i - key_passes * RADIX)];
        }
        if (c) atomicAdd(&hist[i], static_cast<unsigned long long>(c));
    }
}

// One block of GP_SORT_THREADS: offs[p][b] = exclusive bucket starts of pass p; the route
// table (gp::sort::route_build) of the P passes.
__global__ void __launch_bounds__(GP_SORT_THREADS)
gp_sort_prepare(const unsigned long long* __restrict__ hist, long long n, int P, int keys_mode, int vals_mode,
                long long* __restrict__ offs, int* __restrict__ route) {
    using namespace gp::sort;
    __shared__ int s_const[GP_SORT_MAX_PASSES];
    __shared__ unsigned long long s_w[GP_SORT_THREADS / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (threadIdx.x < GP_SORT_MAX_PASSES) s_const[threadIdx.x] = 0;
    __syncthreads();
    for (int p = 0; p < P; ++p) {
        const unsigned long long c = hist[p * RADIX + threadIdx.x];
        if (static_cast<long long>(c) == n) s_const[p] = 1;
        unsigned long long inc = c;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned long long u = __shfl_up_sync(FULL, inc, o);
            if (lane >= o) inc += u;
        }
        if (lane == 31) s_w[w] = inc;
        __syncthreads();
        unsigned long long run = inc - c;
        for (int i = 0; i < w; ++i) run += s_w[i];
        offs[p * RADIX + threadIdx.x] = static_cast<long long>(run);
        __syncthreads();
    }
    if (threadIdx.x == 0) route_build(s_const, P, keys_mode, vals_mode, route);
}

// Pass `pass` of a device-wide sort: digit `shift` of the keys (row_pass == 0) or of the row
// id v / seg of the carried index v (row_pass == 1). Buffers by route id (gp/sort.cuh):
// keys {kin, kout, kt0, kt1}, values {generated index, vout, vt0, vt1}; seg > 0: the last
// active pass writes v % seg (the index inside the row). look: two regions of tiles * RADIX
// status words; this pass uses region pass % 2 and zeroes region (pass + 1) % 2 for the next.
// Blocks per SM the register budget is fitted to (occupancy is what hides the loads' and
// the look-back's latency): 4 for keys of up to 4 bytes, 3 for 8-byte keys or pairs of
// small keys, 2 for pairs of 8-byte keys (more would spill).
__host__ __device__ constexpr int occupancy_scaled(int at256, int threads) {
    return threads == 256 ? at256 : ((at256 * 256 + threads / 2) / threads > 0 ? (at256 * 256 + threads / 2) / threads : 1);
}

// Threads and keys per thread of a onesweep tile (mirrored by _sort.onesweep_shape): the wide
// tile for 4-byte keys alone or (GP_SORT_WIDE_PAIRS) with 32-bit values, whose tile slots are
// 4 bytes; 8-byte keys alone GP_SORT_K8_THREADS x GP_SORT_K8_ITEMS; 256 x 16 for the others.
__host__ __device__ constexpr bool k8_tile(int key_bytes, bool pairs) { return key_bytes == 8 && !pairs; }

template <class U, bool PAIRS, class V>
struct onesweep_shape {
    static constexpr bool wide = sizeof(U) == 4 && (!PAIRS || (GP_SORT_WIDE_PAIRS && sizeof(V) == 4));
    static constexpr int threads = wide ? GP_SORT_WIDE_THREADS : k8_tile(sizeof(U), PAIRS) ? GP_SORT_K8_THREADS : GP_SORT_OS_THREADS;
    static constexpr int items = wide ? GP_SORT_WIDE_ITEMS : k8_tile(sizeof(U), PAIRS) ? GP_SORT_K8_ITEMS : GP_SORT_ITEMS;
};

template <class U, bool PAIRS, class V>
struct onesweep_occupancy {
#ifdef GP_SORT_MIN_BLOCKS  // tools/tune.py --groups sort
    static constexpr int value = GP_SORT_MIN_BLOCKS;
#else
    // by bytes per item (key and value): up to 4: 4 blocks of 256 threads, up to 12: 3, more:
    // 2; other block sizes than 256: about the same threads per SM (384 threads: 3, 2, 1)
    static constexpr int bytes = sizeof(U) + (PAIRS ? sizeof(V) : 0);
    // (8-byte keys alone: GP_SORT_K8_MIN_BLOCKS)
    static constexpr int value = k8_tile(sizeof(U), PAIRS) ? GP_SORT_K8_MIN_BLOCKS
                                 : occupancy_scaled(bytes <= 4 ? 4 : bytes <= 12 ? 3 : 2,
                                                    onesweep_shape<U, PAIRS, V>::threads);
#endif
};

// A onesweep tile's items from shared memory (bucket order: slot i of bucket d goes to
// s_base[d] + i) to global memory; thread t takes slots t, t + T, ... FULL (a whole tile): no
// bounds test, so the shared loads of several slots can be issued before the first store (with
// a guarded store per slot ptxas serialized each slot's two dependent shared loads and its store).
template <bool FULL, int T, int K, class X>
__device__ __forceinline__ void scatter_slots(X* __restrict__ out, const X* src, const unsigned char* s_dig,
                                              const long long* s_base, int tile_n) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int i = k * T + threadIdx.x;
        if (FULL || i < tile_n) out[s_base[s_dig[i]] + i] = src[i];
    }
}

// V: how values travel between passes (unsigned int when every index is below 2^32: half the
// bytes of long long); the last active pass writes them out as long long.
template <class U, bool PAIRS, class W, class V>
__global__ void __launch_bounds__((onesweep_shape<U, PAIRS, V>::threads), (onesweep_occupancy<U, PAIRS, V>::value))
gp_sort_onesweep(const U* kin, U* kout, U* kt0, U* kt1, long long* vout, long long* vt0, long long* vt1,
                 const int* __restrict__ route, const long long* __restrict__ offs, W* look, long long n,
                 long long tiles, int pass, int kind, unsigned long long flip64, int shift, int row_pass,
                 long long seg) {
    using namespace gp::sort;
    constexpr int T = onesweep_shape<U, PAIRS, V>::threads, K = onesweep_shape<U, PAIRS, V>::items, TILE = T * K,
                  WSEG = 32 * K;
    static_assert(T >= RADIX && T % 32 == 0, "a onesweep block has a thread per bucket");
    constexpr bool R3 = onesweep_shape<U, PAIRS, V>::wide ? (GP_SORT_RANK3_WIDE) : (GP_SORT_RANK3_NARROW);
    static_assert(!R3 || (!GP_SORT_EARLY_PUBLISH && !GP_SORT_PACK_RANKS), "RANK_MODE 3 counts first by itself");
    // threads of a bucket (all of them when T == RADIX: the conditions fold away)
    const bool bucket = T == RADIX || threadIdx.x < RADIX;
    constexpr int VB = PAIRS ? static_cast<int>(sizeof(V)) : 1;
    constexpr int SB0 = sizeof(U) > VB ? sizeof(U) : VB;
    constexpr int SB = SB0 > 2 ? SB0 : 2;  // bytes per tile slot; at least 2: the match words fit
    __shared__ rank_smem<T> s;
    __shared__ alignas(16) unsigned char s_buf[TILE * SB];  // keys, then values, in tile order
    __shared__ unsigned char s_dig[TILE];
    __shared__ long long s_base[RADIX];  // global position of tile slot 0 of each bucket
    typedef word<W> WD;

    const long long tile = blockIdx.x;
    W* cur = look + (pass & 1) * tiles * RADIX;
    W* next = look + ((pass + 1) & 1) * tiles * RADIX;
    if (bucket) next[tile * RADIX + threadIdx.x] = W(0);
    const int* rt = route + GP_SORT_ROUTE * pass;
#if GP_SORT_ROUTE_ONE_LOAD
    // all five words in two loads issued together (an int4 of {active, key src, key dst,
    // value src}: a pass's row is 32-byte aligned), so that the key loads wait for one
    // round trip to global memory, not two (the early return after rt[0] kept the compiler
    // from issuing the others before it came back)
    static_assert(GP_SORT_ROUTE % 4 == 0, "route rows hold whole int4s");
    const int4 r0 = *reinterpret_cast<const int4*>(rt);
    const int vdst = rt[4];
    if (!r0.x) return;
    const int ksrc = r0.y, kdst = r0.z, vsrc = r0.w;
#else
    if (!rt[0]) return;
    const int ksrc = rt[1], kdst = rt[2], vsrc = rt[3], vdst = rt[4];
#endif
    const U* ks = ksrc == BUF_IN ? kin : pick<U>(ksrc, nullptr, kout, kt0, kt1);
    U* kd = pick<U>(kdst, nullptr, kout, kt0, kt1);
    const V* vs = reinterpret_cast<const V*>(pick<long long>(vsrc, nullptr, vout, vt0, vt1));
    long long* vd = pick<long long>(vdst, nullptr, vout, vt0, vt1);
    const U flip = static_cast<U>(flip64);
    const bool small = n <= 0xffffffffll;

    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long base = tile * TILE;
    const int tile_n = n - base < TILE ? static_cast<int>(n - base) : TILE;
    U key[K];
    V val[PAIRS ? K : 1];
    // the lean forms (packed digits and ranks, the slot loop split from its stores, the
    // unguarded scatter of whole tiles) on every tile but the 8-byte keys-only one, which
    // measured slower with them (GP_SORT_K8_LEAN)
    constexpr bool LEAN = !k8_tile(sizeof(U), PAIRS) || GP_SORT_K8_LEAN;
    constexpr bool PACK = GP_SORT_PACK_DIGITS && LEAN, SPLIT = GP_SORT_SPLIT_SLOTS && LEAN,
                   FULL = GP_SORT_FULL_SCATTER && LEAN;
    static_assert(!(GP_SORT_PACK_DIGITS && GP_SORT_PACK_RANKS), "PACK_DIGITS packs the ranks itself");
    typedef typename pick_type<PACK, digits8<K>, unsigned int[K]>::type DigT;
    typedef typename pick_type<PACK, ranks16<K>, unsigned short[K]>::type RankT;
    DigT dig;
    // every load of the tile first, then the digits: the loads are issued together, none
    // behind another key's digit (a float's radix key is computed from the loaded word)
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int e = w * WSEG + 32 * k + lane;
        const bool ok = e < tile_n;
        key[k] = ok ? ks[base + e] : U(0);
        if constexpr (PAIRS) val[k] = ok ? (vsrc == BUF_IN ? static_cast<V>(base + e) : vs[base + e]) : V(0);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const bool ok = w * WSEG + 32 * k + lane < tile_n;
        unsigned int d = ok && !row_pass ? digit<U>(key[k], kind, flip, shift) : RADIX - 1;
        if constexpr (PAIRS) {
            if (ok && row_pass) {
                const long long v = val[k];
                const unsigned long long row = small ? static_cast<unsigned long long>(static_cast<unsigned int>(v) /
                                                                                      static_cast<unsigned int>(seg))
                                                     : static_cast<unsigned long long>(v / seg);
                d = static_cast<unsigned int>(row >> shift) & (RADIX - 1u);
            }
        }
        dset(dig, k, d);   // (in order of k: a packed word's first digit sets the whole word)
    }

#if GP_SORT_EARLY_PUBLISH
    // the tile's bucket counts first (one shared counter per bucket), published before the
    // ranking, so that the look-backs of the tiles after this one find them sooner
    {
        __shared__ unsigned int s_early[RADIX];
        if (bucket) s_early[threadIdx.x] = 0u;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < K; ++k) count_digit(s_early, dget(dig, k), w * WSEG + 32 * k + lane < tile_n);
        __syncthreads();
        if (bucket)
            st_relaxed(cur + tile * RADIX + threadIdx.x, (tile == 0 ? WD::INC : WD::AGG) | static_cast<W>(s_early[threadIdx.x]));
    }
#endif
    RankT rank;
    static_assert(TILE * SB >= (T / 32) * RADIX * 4, "the tile buffer holds the match words");
    if constexpr (R3)
        warp_histogram<T, K>(dig, s);
    else
        rank_in_warps<T, K, GP_SORT_PACK_RANKS != 0>(dig, rank, s, reinterpret_cast<unsigned int*>(s_buf));
    __syncthreads();
    unsigned int cnt[1];
    bucket_counts<T>(s, cnt);
    const int b = threadIdx.x;
    if (b == RADIX - 1) cnt[0] -= TILE - tile_n;  // the padding items ranked last in bucket 255
    W* mine = cur + tile * RADIX + b;
#if !GP_SORT_EARLY_PUBLISH
    if (bucket) st_relaxed(mine, (tile == 0 ? WD::INC : WD::AGG) | static_cast<W>(cnt[0]));
#endif
    bucket_starts<T>(s, cnt);  // (synchronizes)
    if constexpr (R3) {
        seed_slots<T>(s);  // (synchronizes)
        rank_seeded<T, K>(dig, rank, s, reinterpret_cast<unsigned int*>(s_buf));  // rank[k]: the item's slot
        __syncthreads();   // every warp's match words (in s_buf) read before the keys go there
    }
#if GP_SORT_OFFS_EARLY
    // the bucket's global start loaded before the look-back (whose volatile loads would
    // otherwise keep it behind the loop: one more round trip per tile), as CUB does
    const long long gofs = bucket ? offs[pass * RADIX + b] : 0;
#endif
    long long prefix = 0;
    if (bucket && tile > 0) {  // decoupled look-back over the tiles before this one, for bucket b
        long long j = tile - 1;
        unsigned int spins = 0;
#if GP_SORT_LOOKBACK_BATCH > 1
        // the status words of B tiles (j, j - 1, ...) loaded together, then read in order: a
        // walk back over tiles that have only their own counts published waits for one round
        // trip per B tiles, not per tile. Tile 0 is always inclusive, so the walk stops there.
        constexpr int B = GP_SORT_LOOKBACK_BATCH;
        while (true) {
            W st[B];
#pragma unroll
            for (int i = 0; i < B; ++i) st[i] = j - i >= 0 ? ld_relaxed(cur + (j - i) * RADIX + b) : WD::INC;
            int used = B;   // words taken in order; < B: stopped (inclusive word, or not yet published)
            bool found = false;
#pragma unroll
            for (int i = 0; i < B; ++i) {
                if (used == B) {
                    const W flag = st[i] & ~WD::COUNT;
                    if (flag == W(0)) {
                        used = i;
                    } else {
                        prefix += static_cast<long long>(st[i] & WD::COUNT);
                        if (flag == WD::INC) {
                            used = i;
                            found = true;
                        }
                    }
                }
            }
            if (found) break;
            j -= used;
            if (used < B && ++spins > 8) __nanosleep(64);
        }
#else
        while (true) {
            const W st = ld_relaxed(cur + j * RADIX + b);
            const W flag = st & ~WD::COUNT;
            if (flag == W(0)) {
                if (++spins > 8) __nanosleep(64);
                continue;
            }
            prefix += static_cast<long long>(st & WD::COUNT);
            if (flag == WD::INC) break;
            --j;
        }
#endif
        st_relaxed(mine, WD::INC | static_cast<W>(prefix + cnt[0]));
    }
    if (bucket) {
#if GP_SORT_OFFS_EARLY
        s_base[b] = gofs + prefix - static_cast<long long>(s.start[b]);
#else
        s_base[b] = offs[pass * RADIX + b] + prefix - static_cast<long long>(s.start[b]);
#endif
    }

    // keys (and their digits) into shared memory in bucket order
    U* sk = reinterpret_cast<U*>(s_buf);
#if GP_SORT_PACK_RANKS
    RankT slot;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        slot[k] = static_cast<unsigned short>(s.start[dig[k] & 0xFFu] + s.whist[w][dig[k] & 0xFFu] + (dig[k] >> 16));
        if (slot[k] < tile_n) {
            sk[slot[k]] = key[k];
            s_dig[slot[k]] = static_cast<unsigned char>(dig[k] & 0xFFu);
        }
    }
#else
    RankT slot_own;
    RankT& slot = SPLIT ? rank : slot_own;
    if constexpr (SPLIT) {
        // each item's tile slot (RANK_MODE 3 ranked straight into slots) first, in place of its
        // rank: only shared loads in this loop, so that ptxas issues them together (with the
        // stores in the same loop each item's two loads waited for the previous item's stores)
        if constexpr (!R3) {
#pragma unroll
            for (int k = 0; k < K; ++k) rput(slot, k, s.start[dget(dig, k)] + s.whist[w][dget(dig, k)] + rget(rank, k));
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (rget(slot, k) < tile_n) {  // (padding items of the last tile are ranked past tile_n)
                sk[rget(slot, k)] = key[k];
                s_dig[rget(slot, k)] = static_cast<unsigned char>(dget(dig, k));
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            // (written inline, not through const locals: that shape alone took ptxas from 20 to
            // 100 bytes of spills in the float32 pass)
            if constexpr (R3)
                rset(slot, k, rget(rank, k));
            else
                rset(slot, k, s.start[dget(dig, k)] + s.whist[w][dget(dig, k)] + rget(rank, k));
            if (rget(slot, k) < tile_n) {
                sk[rget(slot, k)] = key[k];
                s_dig[rget(slot, k)] = static_cast<unsigned char>(dget(dig, k));
            }
        }
    }
#endif
    __syncthreads();
    if (kd != nullptr) {
        if (FULL && tile_n == TILE)
            scatter_slots<true, T, K>(kd, sk, s_dig, s_base, tile_n);
        else
            scatter_slots<false, T, K>(kd, sk, s_dig, s_base, tile_n);
    }
    if constexpr (PAIRS) {
        if (vd != nullptr) {
            __syncthreads();
            V* sv = reinterpret_cast<V*>(s_buf);
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (rget(slot, k) < tile_n) sv[rget(slot, k)] = val[k];
            __syncthreads();
            const bool last = rt[5] == rt[6] - 1;  // the last active pass: values out as long long
            const bool mod = seg > 0 && last;      // and as the index inside the row
            if (FULL && tile_n == TILE && !last)   // (the passes before the last: values as they travel)
                scatter_slots<true, T, K>(reinterpret_cast<V*>(vd), sv, s_dig, s_base, tile_n);
            else {
                V* vdn = reinterpret_cast<V*>(vd);
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    const int i = k * T + threadIdx.x;
                    if (i < tile_n) {
                        long long v = static_cast<long long>(sv[i]);
                        if (mod) v = small ? static_cast<long long>(static_cast<unsigned int>(v) % static_cast<unsigned int>(seg))
                                           : v % seg;
                        if (sizeof(V) == 8 || last)
                            vd[s_base[s_dig[i]] + i] = v;
                        else
                            vdn[s_base[s_dig[i]] + i] = static_cast<V>(v);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------- segmented
// One row of L <= THREADS * ITEMS keys per block. Row r's element j is read at
// kin[in_off(r) + j * s_in] and written at kout / iout[out_off(r) + j * s_out] (sort: the
// keys; ARG: the int64 indices); lines: the other axes (operand 0 out, 1 in). passes:
// digits of the key (sizeof(U)).
template <class U, bool ARG, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS)
gp_sort_block(U* __restrict__ kout, long long* __restrict__ iout, const U* __restrict__ kin,
              gp::StridedParams<2, 4> lines, long long L, long long s_in, long long s_out, int kind,
              unsigned long long flip64) {
    using namespace gp::sort;
    constexpr int TILE = THREADS * ITEMS, WSEG = 32 * ITEMS;
    __shared__ rank_smem<THREADS> s;
    __shared__ alignas(16) U s_key[TILE];
    __shared__ unsigned short s_idx[ARG ? TILE : 1];
    __shared__ int s_skip[sizeof(U)];
    // the ranking's match words: in s_key when it is large enough (free while ranking)
    constexpr bool MATCH_IN_KEYS = ITEMS * sizeof(U) >= 32;
    __shared__ unsigned int s_match_own[MATCH_IN_KEYS ? 1 : (THREADS / 32) * RADIX];
    long long off[2];
    gp::strided_offsets<2, 4, long long>(lines, static_cast<long long>(blockIdx.x), off);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int n = static_cast<int>(L);
    const U flip = static_cast<U>(flip64);
    if (threadIdx.x < static_cast<int>(sizeof(U))) s_skip[threadIdx.x] = 0;  // (read after a barrier)
    U key[ITEMS];
    unsigned short idx[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int e = w * WSEG + 32 * k + lane;
        key[k] = e < n ? kin[off[1] + e * s_in] : U(0);
        idx[k] = static_cast<unsigned short>(e);
    }
    for (int pass = 0; pass < static_cast<int>(sizeof(U)); ++pass) {
        const int shift = GP_SORT_BITS * pass;
        unsigned int dig[ITEMS];
        unsigned short rank[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int e = w * WSEG + 32 * k + lane;  // items past the row: last bucket, stay last
            dig[k] = e < n ? digit<U>(key[k], kind, flip, shift) : RADIX - 1;
        }
        rank_in_warps<THREADS, ITEMS>(dig, rank, s, MATCH_IN_KEYS ? reinterpret_cast<unsigned int*>(s_key) : s_match_own);
        __syncthreads();
        unsigned int cnt[RADIX / THREADS];
        bucket_counts<THREADS>(s, cnt);
#pragma unroll
        for (int j = 0; j < RADIX / THREADS; ++j) {
            const int b = (RADIX / THREADS) * threadIdx.x + j;
            if (cnt[j] - (b == RADIX - 1 ? TILE - n : 0) == static_cast<unsigned int>(n)) s_skip[pass] = 1;
        }
        bucket_starts<THREADS>(s, cnt);  // (synchronizes: s_skip is visible)
        if (s_skip[pass]) continue;           // one bucket holds the whole row: nothing moves
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int sl = s.start[dig[k]] + s.whist[w][dig[k]] + rank[k];
            s_key[sl] = key[k];
            if constexpr (ARG) s_idx[sl] = idx[k];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int e = w * WSEG + 32 * k + lane;
            key[k] = s_key[e];
            if constexpr (ARG) idx[k] = s_idx[e];
        }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int e = w * WSEG + 32 * k + lane;
        if (e < n) {
            if constexpr (ARG)
                iout[off[0] + e * s_out] = static_cast<long long>(idx[k]);
            else
                kout[off[0] + e * s_out] = key[k];
        }
    }
}

// Rows of L <= P keys, P lanes per row (P a power of two <= 32): a bitonic network on
// (radix key, index); lanes past the row hold the largest key and their own index, so they
// end last. rows: the number of rows (lines).
template <class U, bool ARG>
__global__ void __launch_bounds__(256)
gp_sort_warp(U* __restrict__ kout, long long* __restrict__ iout, const U* __restrict__ kin,
             gp::StridedParams<2, 4> lines, long long rows, long long L, long long s_in, long long s_out, int P,
             int kind, unsigned long long flip64) {
    using namespace gp::sort;
    const long long t = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
    const long long row = t / P;
    const int j = static_cast<int>(t - row * P);
    const bool ok = row < rows && j < L;
    long long off[2] = {0, 0};
    if (row < rows) gp::strided_offsets<2, 4, long long>(lines, row, off);
    U key = ok ? kin[off[1] + j * s_in] : U(0);
    U rk = ok ? static_cast<U>(radix<U>(key, kind) ^ static_cast<U>(flip64)) : static_cast<U>(~U(0));
    int idx = j;
    for (int k = 2; k <= P; k <<= 1) {
        for (int m = k >> 1; m > 0; m >>= 1) {
            const U ork = shfl_xor<U>(rk, m);
            const U okey = shfl_xor<U>(key, m);
            const int oidx = __shfl_xor_sync(FULL, idx, m);
            const bool less = ork < rk || (ork == rk && oidx < idx);  // the partner's pair is smaller
            const bool up = (j & k) == 0, lower = (j & m) == 0;
            if ((lower == up) ? less : !less) {
                rk = ork;
                key = okey;
                idx = oidx;
            }
        }
    }
    if (ok) {
        if constexpr (ARG)
            iout[off[0] + j * s_out] = static_cast<long long>(idx);
        else
            kout[off[0] + j * s_out] = key;
    }
}
