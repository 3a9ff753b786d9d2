// gparray: warp-ballot compaction, shared by the kernels that write the kept elements of a
// tile in their order (family "search": nonzero; "index": x[mask]; "sets": unique). A tile
// is BLOCK / 32 warps x ROUNDS rounds of 32 consecutive elements; its output starts at
// incl[tile - 1], the inclusive scan of the per-tile counts (0 for the first tile).
#pragma once

namespace gp {
namespace compact {

// masks[k] = the warp's ballot of pred(k) (round k: elements base + 32 k + lane); returns
// the number of lanes set over all rounds. pred is called for k = 0, 1, ... in order.
template <int ROUNDS, class Pred>
__device__ __forceinline__ int ballot_rounds(Pred&& pred, unsigned int (&masks)[ROUNDS]) {
    int c = 0;
#pragma unroll
    for (int k = 0; k < ROUNDS; ++k) {
        masks[k] = __ballot_sync(0xffffffffu, pred(k));
        c += __popc(masks[k]);
    }
    return c;
}

// The output position of this warp's first kept element: the tile's start plus the counts c
// of the warps before this one. Every thread of the block calls it (two barriers).
template <int BLOCK>
__device__ __forceinline__ long long warp_start(int c, const long long* __restrict__ incl) {
    __shared__ int s_cnt[BLOCK / 32];
    __shared__ long long s_off[BLOCK / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) s_cnt[w] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long t = blockIdx.x > 0 ? incl[blockIdx.x - 1] : 0;
#pragma unroll
        for (int i = 0; i < BLOCK / 32; ++i) {
            s_off[i] = t;
            t += s_cnt[i];
        }
    }
    __syncthreads();
    return s_off[w];
}

// counts[blockIdx.x] = the sum over the block's warps of c (each warp's lane 0 holds its
// count): a tile's count for the scan. Every thread of the block calls it (one barrier).
template <int BLOCK>
__device__ __forceinline__ void tile_count(int c, long long* __restrict__ counts) {
    __shared__ int s_cnt[BLOCK / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) s_cnt[w] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long t = 0;
#pragma unroll
        for (int i = 0; i < BLOCK / 32; ++i) t += s_cnt[i];
        counts[blockIdx.x] = t;
    }
}

}  // namespace compact
}  // namespace gp
