/* arch/wse/wse_kernels.h — program generators for the wafer mesh: built directly as ts_program
 * streams (no assembly text), so a 750 x 994 wafer's program is made in seconds. Used by the
 * calibration tests and the benchmarks; docs/wse.md describes each mapping. */
#ifndef TS_ARCH_WSE_KERNELS_H
#define TS_ARCH_WSE_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/err.h"
#include "core/program.h"

/* Star stencil of the given radius (4 = the 25-point stencil of JAC, FP32) on a w x h mesh with
 * nz cells per PE, `steps` time steps. Halos move by nearest-neighbour shifts (radius rounds per
 * direction, 2 colours per direction); at radius 4 the op mix per cell per step is 17 FMUL,
 * 17 FADD, 9 FMA, 1 FSUB (JAC Table IV has 17/17/8/1). Coefficients c0..c4 are fixed (the
 * 8th-order Laplacian scaled by 0.1); a smaller radius uses c0..c_radius. With data, every PE's column starts as u(x, y, z) = ((x + 2y + 3z) mod 7) / 8 and the
 * previous step as 0; without, no data segment is emitted (for sim.timing_only runs). Memory
 * needs 80 nz + 64 bytes per PE. A PE's code depends only on its distances to the edges (up to
 * the radius) and the parities of x and y: the first PE of each such class carries it and the
 * others run it through `image`, with their own routes (at most (2 R + 2)^2 copies of code, so
 * a whole wafer's program is about 300 bytes per PE). */
ts_status ts_wse_stencil_program(ts_program **out, uint32_t w, uint32_t h, uint32_t nz, uint32_t radius,
                                 uint32_t steps, bool with_data, ts_err *err);
/* The same on the north-west w x h corner of a mesh mesh_w PEs wide (PE (x, y) is unit
 * y mesh_w + x); the PEs around the rectangle take no part. */
ts_status ts_wse_stencil_program_in(ts_program **out, uint32_t mesh_w, uint32_t w, uint32_t h, uint32_t nz,
                                    uint32_t radius, uint32_t steps, bool with_data, ts_err *err);
/* Byte address of the interior of u (cell z is at this + 4 z) in the stencil program. */
#define TS_WSE_STENCIL_U 16u

/* Random single-wavelet traffic to sink PEs on a w x h mesh (true uniform random traffic is
 * wse_traffic.h's): `sinks` colours (at most 24), colour c routed X-then-Y from every PE to sink
 * PE c (spread over the mesh); every other PE sends `per_pe` wavelets on uniformly random colours
 * with geometric gaps of mean 1 / rate cycles; sinks consume at one wavelet per cycle with
 * fabric-input moves. Deterministic for a seed. */
ts_status ts_wse_sinks_program(ts_program **out, uint32_t w, uint32_t h, uint32_t sinks, uint32_t per_pe,
                               double rate, uint64_t seed, ts_err *err);

#endif
