// Compile-time switches of the sort family's onesweep pass (gparray/_kernels/sort.cu), each
// with its default; tools/tune.py --groups sort builds and times other values
// (TUNE_SORT="NAME=value,...;..."). What each measured is in docs/performance.md ("Sort tuning switches").
// With every switch at its default the sort cubins are the ones the GPU runs verified.
#pragma once
#include "sort_rank.cuh"

#ifndef GP_SORT_EARLY_PUBLISH
#define GP_SORT_EARLY_PUBLISH 0  // 1: a onesweep tile counts its buckets (shared counters) and publishes
                                 // them before ranking, as CUB's onesweep does (tools/tune.py --groups
                                 // sort, TUNE_SORT="EARLY_PUBLISH=0;EARLY_PUBLISH=1"); slower on an H200 (docs/performance.md)
#endif

#ifndef GP_SORT_PACK_RANKS
#define GP_SORT_PACK_RANKS 0  // 1: a onesweep tile keeps each item's rank in the high bits of its digit
                              // word (fewer live registers: ptxas spilled 20 bytes of the float32 pass
                              // at 64 registers); no faster on an H200 (docs/performance.md)
#endif

// Which onesweep tiles rank with GP_SORT_RANK_MODE 3's order (counts first, items ranked
// straight into seeded slots; sort_rank.cuh): the wide tile (4-byte keys) and the 256-thread
// one (8-byte keys, 64-bit values) separately (tools/tune.py --groups sort,
// TUNE_SORT="RANK3_NARROW=1"); both follow GP_SORT_RANK_MODE unless set.
#ifndef GP_SORT_RANK3_WIDE
#define GP_SORT_RANK3_WIDE (GP_SORT_RANK_MODE == 3)
#endif
#ifndef GP_SORT_RANK3_NARROW
#define GP_SORT_RANK3_NARROW (GP_SORT_RANK_MODE == 3)
#endif

// The lean forms of a onesweep tile. On an H200 (tools/tune.py --groups sort,
// 2^26 keys; docs/performance.md) the three together took the float32 sort from 2.33 to
// 2.18 ms and the int64 argsort from 8.02 to 7.71 ms, argsort float32 even (3.46), but the
// int64 keys-only sort from 4.36 to 4.59 ms, so its tile (384 x 11) keeps the plain forms
// unless GP_SORT_K8_LEAN.
#ifndef GP_SORT_PACK_DIGITS
#define GP_SORT_PACK_DIGITS 1  // 1: a tile keeps its items' digits four to a register and their ranks and
                               // slots two to a register (sort_rank.cuh, digits8 / ranks16); 0: one each
#endif

#ifndef GP_SORT_SPLIT_SLOTS
#define GP_SORT_SPLIT_SLOTS 1  // 1: a tile computes every item's slot (shared loads only) before storing
                               // the keys at their slots; 0: slot and stores item by item (each item's
                               // loads behind the previous item's stores)
#endif

#ifndef GP_SORT_FULL_SCATTER
#define GP_SORT_FULL_SCATTER 1  // 1: a whole tile writes its keys (and the values of the passes before the
                                // last) out with no bounds test per slot (scatter_slots<true>); 0: every
                                // tile tests each slot
#endif

#ifndef GP_SORT_K8_LEAN
#define GP_SORT_K8_LEAN 0  // 1: keys-only sorts of 8-byte keys take the three lean forms above too
#endif

#ifndef GP_SORT_ROUTE_ONE_LOAD
#define GP_SORT_ROUTE_ONE_LOAD 0  // 1: a onesweep pass reads its route row in one round trip (tools/tune.py
                                  // --groups sort, TUNE_SORT="ROUTE_ONE_LOAD=1"); no faster on an H200 (docs/performance.md)
#endif

#ifndef GP_SORT_OFFS_EARLY
#define GP_SORT_OFFS_EARLY 0  // 1: a onesweep pass loads its buckets' global starts before the look-back
                              // (tools/tune.py --groups sort, TUNE_SORT="OFFS_EARLY=1"); no faster on an H200 (docs/performance.md)
#endif

#ifndef GP_SORT_LOOKBACK_BATCH
#define GP_SORT_LOOKBACK_BATCH 1  // status words a onesweep look-back loads at once (tools/tune.py --groups
                                  // sort, TUNE_SORT="LOOKBACK_BATCH=4"); 4 was slower on an H200 (docs/performance.md)
#endif
