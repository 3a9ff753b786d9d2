// Compile-time switches of the sort family's onesweep pass (gparray/_kernels/sort.cu), each
// with its default; tools/tune.py --groups sort builds and times other values
// (TUNE_SORT="NAME=value,...;..."). What each measured is in the README ("Sorting and sets").
// With every switch at its default the sort cubins are the ones the GPU runs verified.
#pragma once
#include "sort_rank.cuh"

#ifndef GP_SORT_EARLY_PUBLISH
#define GP_SORT_EARLY_PUBLISH 0  // 1: a onesweep tile counts its buckets (shared counters) and publishes
                                 // them before ranking, as CUB's onesweep does (tools/tune.py --groups
                                 // sort, TUNE_SORT="EARLY_PUBLISH=0;EARLY_PUBLISH=1"); slower on an H200 (README)
#endif

#ifndef GP_SORT_PACK_RANKS
#define GP_SORT_PACK_RANKS 0  // 1: a onesweep tile keeps each item's rank in the high bits of its digit
                              // word (fewer live registers: ptxas spilled 20 bytes of the float32 pass
                              // at 64 registers); no faster on an H200 (README)
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

#ifndef GP_SORT_PACK_DIGITS
#define GP_SORT_PACK_DIGITS 0  // 1: a onesweep tile keeps its items' digits four to a register and their
                               // ranks and slots two to a register (sort_rank.cuh, digits8 / ranks16):
                               // the float32 pass at 384 x 18 keys spills 76 bytes at 56 registers with
                               // one register per digit, rank and slot; not measured yet
#endif

#ifndef GP_SORT_ROUTE_ONE_LOAD
#define GP_SORT_ROUTE_ONE_LOAD 0  // 1: a onesweep pass reads its route row in one round trip (tools/tune.py
                                  // --groups sort, TUNE_SORT="ROUTE_ONE_LOAD=1"); no faster on an H200 (README)
#endif

#ifndef GP_SORT_OFFS_EARLY
#define GP_SORT_OFFS_EARLY 0  // 1: a onesweep pass loads its buckets' global starts before the look-back
                              // (tools/tune.py --groups sort, TUNE_SORT="OFFS_EARLY=1"); no faster on an H200 (README)
#endif

#ifndef GP_SORT_LOOKBACK_BATCH
#define GP_SORT_LOOKBACK_BATCH 1  // status words a onesweep look-back loads at once (tools/tune.py --groups
                                  // sort, TUNE_SORT="LOOKBACK_BATCH=4"); 4 was slower on an H200 (README)
#endif
