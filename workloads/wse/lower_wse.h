/* workloads/wse/lower_wse.h — the wafer-mesh lowering: a finalized graph to per-PE WSE programs.
 *
 * Layer pipelining (docs/lowering-wse.md). The graph must be a chain with at most one skip path
 * open at a time (a residual block): one data input, each operator reading the previous one's
 * output, except a skip path that forks from the main stream and joins it again in a Concat, Add, Sub or
 * Mul. Every operator becomes a stage that owns a rectangle of PEs along the top band of the
 * mesh, west to east: the graph input's source PEs, then the stages, then the sink PEs that keep
 * the graph output; skip paths run in the rows below, with FIFO PEs that hold back what the main
 * path has not yet given out. Weights stay in the SRAM of the
 * PEs that use them; activations stream between consecutive stages as wavelets, one element per
 * wavelet, leaving a stage's north-east PE eastwards and entering the next stage's north-west PE.
 * MatMul, Gemm and Conv (an im2col line buffer in front of a matrix-product rectangle) size their
 * rectangle by compute (the fewest PEs that keep up with the balanced pipeline) and by weights
 * (every PE's slice must fit pe.sram). Values stream as f32; an f16 graph's matrix products
 * keep binary16 weights and accumulate in binary16 (fmach), the other stages compute in f32.
 *
 * The lowering knows the WSE only through its opcode table (arch/wse/wse_isa.def) and its machine
 * facts (ts_wse_target, arch/wse/wse_target.h: ts_wse_target_from_config fills them from a chip
 * config; tests may fill them by hand).
 */
#ifndef TS_WORKLOADS_LOWER_WSE_H
#define TS_WORKLOADS_LOWER_WSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/wse/wse_target.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/err.h"
#include "core/program.h"
#include "core/results.h"
#include "core/sim.h"
#include "core/stats.h"
#include "workloads/graph.h"
#include "workloads/lower/lower.h"

/* One stage as placed: a rectangle of PEs [x, x + w) x [y, y + h). */
typedef struct ts_lower_wse_stage {
    int node;           /* graph node id; -1 for the input source and the output sink */
    const char *what;   /* "source", "sink", "matmul", "im2col", "relu", "softmax", "maxpool",
                         * "avgpool", "add", "fifo" (a skip path's delay PE, node: the fork's
                         * first reader), "join" (static strings) */
    bool skip;          /* on a skip path (the rows below the main band) */
    uint32_t x, y, w, h;
    uint32_t kr, kc;    /* matmul: rows of PEs splitting K, columns splitting N; attention: its K and V parts */
    uint64_t macs;      /* multiply-accumulates of the stage */
    uint64_t mem_bytes; /* most SRAM one of its PEs uses */
    uint64_t in_elems, out_elems; /* wavelets in and out */
    uint32_t colour_in, colour_out;
} ts_lower_wse_stage;

/* What the lowering did. Owned array; free with ts_lower_wse_report_free. */
typedef struct ts_lower_wse_report {
    ts_lower_wse_stage *stages; size_t nstages;
    uint32_t pes_used;     /* PEs with a program */
    uint32_t width_used;   /* columns from x = 0 */
    uint32_t height_used;  /* rows from y = 0 */
    uint32_t colours_used; /* highest colour used + 1 */
    /* the graph output, as the sink keeps it */
    int out_tensor;
    bool out_nhwc;         /* stored in N, H, W, C order (a 4-d output of a Conv) */
    int64_t out_dims[4];   /* N, C, H, W when out_nhwc */
    int64_t *out_rows;     /* the place of each row (last axis, out_row_len values) of the output in
                            * the sink, when the stream carries its rows in another order (a
                            * Transpose of the rows before); NULL: row-major (owned) */
    uint64_t out_row_len;
    uint32_t sink_x;       /* sink PEs (sink_x + j, 0) ... */
    uint64_t sink_chunk;   /* elements per sink PE, from address 0 */
    int64_t batch;         /* images streamed through the pipeline (the input's N; 0 for other inputs) */
} ts_lower_wse_report;

void ts_lower_wse_report_free(ts_lower_wse_report *rep);

/* Lower a finalized graph for the chip t (the lowering needs 8 colours, 16 with skip paths, a mesh
 * and PEs of at least 64 bytes). On success *out is a new program for arch "wse" and rep (may be
 * NULL) is filled. Unsupported operators and operators that do not fit fail with an error naming
 * the operator and by how much it misses, e.g.
 *   "MatMul 'fc': needs 45 columns of PEs for its weights (65536.0 KiB over columns of 32 PEs of
 *    48.0 KiB); 30 are left of the 32-wide mesh: 15 columns short". */
ts_status ts_lower_wse(const ts_graph *g, const ts_wse_target *t, ts_program **out, ts_lower_wse_report *rep,
                       ts_err *err);

/* The stages' rectangles as regions for the run options (ts_run_opts.regions), so the run sums
 * each stage's energy events (table region_events). Caller frees *out (ts_free). */
ts_status ts_lower_wse_regions(const ts_lower_wse_report *rep, ts_region **out, size_t *n, ts_err *err);

/* After a run: add to res->stats the table "layers", one row per stage: its rectangle, MACs,
 * wavelets in and out (4 bytes each) and their rate over the run ("bandwidth"), and, from the run's
 * table region_stats (the run given the stages as regions, ts_lower_wse_regions), the busy and
 * stall PE-cycles of its PEs, the busiest PE's busy cycles ("busiest", the stage's cycles: a stage
 * works while the pipeline runs, so its time is its busiest PE's) and the wavelets its routers
 * sent over links; -1 without that table. With the run's table region_events and an energy table,
 * its dynamic energy ("energy", uJ; -1 without them). With a batch of more than one image, also
 * "images_per_s": the pipeline's steady-state throughput, one image per (busiest stage's busy
 * cycles / batch) at the run's clock. */
ts_status ts_lower_wse_stage_stats(const ts_lower_wse_report *rep, ts_results *res,
                                   const ts_energy_table *energy, ts_err *err);

/* PE and byte address of element elem (graph order) of the graph output after the run; -1 if
 * tensor is not the output. */
int ts_lower_wse_locate(const ts_lower_wse_report *rep, int tensor, uint64_t elem, uint32_t *x, uint32_t *y,
                        uint64_t *addr);

/* Graph output `tensor` read back after the run through mem, as f32 (lower_wse_values.c). */
ts_status ts_lower_wse_read_output(const ts_lower_wse_report *rep, uint32_t mesh_width, const ts_graph *g, int tensor,
                                   const ts_lower_mem *mem, float *dst, ts_err *err);

/* The WSE lowering in the registry (workloads/lower/lower.h). */
extern const ts_lowering ts_wse_lowering;

#endif
