// gparray kernel family "fused": one kernel per tree of elementwise operations (see
// gp/fusion.cuh). Instances are named by name expressions built in
// gparray/_engine/_fusion.py, e.g.
//   gp_fused_contig<float, gp::fuse::Bin<op_add, float, float, gp::fuse::In<0, float>, gp::fuse::Sc<0, float>>, 1, 1>
#include "gp/fusion.cuh"
#include "gp/functors.cuh"
#include "gp/functors_int.cuh"
#include "gp/functors_math.cuh"
