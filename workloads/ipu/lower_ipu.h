/* workloads/ipu/lower_ipu.h — the IPU lowering: a finalized graph to IPU instruction streams.
 *
 * Planner (a), load-compute-store (docs/lowering-ipu.md). Every tensor lives in tile memory at the
 * same address on every tile that holds part of it, flat (equal contiguous chunks over tiles
 * 0..n-1) or blocked (a Conv output: channel groups x row blocks). Each operator is planned on its
 * own: it partitions its output over tiles, gathers the input ranges each tile needs from where
 * they lie (exchange supersteps, one sender per receiver per superstep), computes on the tiles'
 * workers (the AMP for MatMul, Gemm and Conv; the vector unit for the rest), and ends with a
 * chip-wide sync; its output stays where it was computed. Conv splits output channels, output
 * rows (halo rows exchanged) and input channels (partial sums added in a tree), chosen by an
 * estimate of cycles under memory limits. Memory is reused after a tensor's last consumer. Graph
 * inputs (in equal chunks over the tiles) and weights are placed by the lowering as initial data:
 * their values when the graph carries them, otherwise deterministic pseudo-random values in
 * [-1, 1) (ts_fill_f32).
 *
 * With planner (b) (params.planner = TS_LOWER_PLANNER_T10) MatMul, Gemm and 1x1 Convs are lowered
 * as T10's compute-shift plans instead (workloads/ipu/lower_ipu_t10_plans.c, lower_ipu_t10.c,
 * plan_t10.h), every other operator as above. The default, auto (TS_LOWER_PLANNER_AUTO, what
 * ts_lower_ipu_params_from_config sets), takes per MatMul/Gemm the cheaper by the cost model of
 * load-compute-store's plan and (b)'s plans (those that rotate and those that split without
 * rotating), the memory traded across operators. workloads/ipu/lower_ipu_int.h lists the files.
 *
 * The lowering only knows the IPU's opcode table (arch/ipu/ipu_isa.def) and its machine facts
 * (arch/ipu/ipu_target.h), which come in a ts_lower_ipu_params filled from the chip config.
 */
#ifndef TS_WORKLOADS_LOWER_IPU_H
#define TS_WORKLOADS_LOWER_IPU_H

#include <stddef.h>
#include <stdint.h>
#include "arch/ipu/ipu_target.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/err.h"
#include "core/program.h"
#include "core/results.h"
#include "core/stats.h"
#include "workloads/graph.h"
#include "workloads/ipu/plan_t10.h"
#include "workloads/lower/lower.h"

/* What the lowering needs to know: the chip, and the lowering's own settings. */
typedef struct ts_lower_ipu_params {
    ts_ipu_target target;      /* the chip (ts_ipu_target_from_config); workers 0 = 6 */
    uint32_t max_tiles;        /* use at most this many tiles; 0 = all */
    int planner;               /* TS_LOWER_PLANNER_*: which planner lowers MatMul/Gemm (0, a zeroed struct:
                                * load-compute-store; ts_lower_ipu_params_from_config: auto) */
    const ts_t10_plan *t10_plan; /* planner (b) only: this plan's choice (fm, fn, fk, ft, rp, rot) for
                                  * every MatMul/Gemm it takes instead of the cost model's (tests,
                                  * experiments); NULL = the cost model chooses */
} ts_lower_ipu_params;

/* The planners (docs/lowering-ipu.md): (a) load-compute-store; (b) T10's compute-shift plans with
 * rotating operands for MatMul/Gemm (f32, more than one row), every other operator (and a
 * MatMul/Gemm it cannot plan) lowered as by (a); split: (b)'s plans with nothing rotating (the
 * operands split over tiles in two or three dimensions and loaded once, as a Roller-style
 * load-compute-store compiler tiles them), the baseline against which rotation itself is measured;
 * auto, the default: per MatMul/Gemm/1x1 Conv the plan of (a), split or (b) the cost model prices
 * cheapest among those that fit (a 1x1 Conv: split or (b), whose plans beat (a)'s Conv on every
 * Conv measured; (a)'s Conv plan has no price in the model). */
enum { TS_LOWER_PLANNER_LCS = 0, TS_LOWER_PLANNER_T10 = 1, TS_LOWER_PLANNER_SPLIT = 2, TS_LOWER_PLANNER_AUTO = 3 };

/* The kind of plan an operator was lowered with (the layers table's `plan` column): planner (a)'s,
 * one of (b)'s space in which nothing rotates, or one with a rotating operand. */
enum { TS_LOWER_PLAN_LCS = 0, TS_LOWER_PLAN_SPLIT = 1, TS_LOWER_PLAN_SHIFT = 2 };

/* The planner named `name` ("auto", "lcs", "t10" or "split") into *out; TS_EINPUT naming the choices
 * otherwise. */
ts_status ts_lower_ipu_planner(const char *name, int *out, ts_err *err);

/* Fill params from a chip config whose arch is "ipu": its target (ts_ipu_target_from_config), the
 * settings at their defaults. */
ts_status ts_lower_ipu_params_from_config(const ts_config *cfg, ts_lower_ipu_params *out, ts_err *err);

/* Where one tensor lives: flat (inner = 0), element e is on tile e / chunk at byte address
 * addr + (e % chunk) * element size (4 for f32, 2 for f16); blocked (a Conv output split by rows
 * too), element e = c * inner + p is on tile (c / cb) * nrb + p / pb at element (c % cb) * pb +
 * p % pb. Memory is reused once a tensor's last consumer has run, so after the run only the graph
 * outputs are still there (ts_lower_ipu_locate). */
typedef struct ts_lower_place {
    int tensor;        /* graph tensor id */
    uint32_t ntiles;   /* tiles t0..t0 + ntiles - 1 hold it */
    uint64_t chunk;    /* elements per tile (the last tile may hold fewer) */
    uint64_t addr;     /* byte address on every tile */
    uint64_t inner;    /* blocked: pixels per channel (0 = flat) */
    uint64_t cb, pb;   /* blocked: channels per tile, pixels per channel per tile */
    uint32_t nrb;      /* blocked: row blocks */
    uint32_t es;       /* bytes per element: 2 for f16 halves, 4 for f32 words (f16 values included) */
    uint32_t t0;       /* first tile */
} ts_lower_place;

/* One operator as planned. */
typedef struct ts_lower_layer {
    int node;                /* graph node id */
    uint32_t tiles;          /* tiles that compute it */
    uint32_t first_step;     /* its first superstep (counted from 0 by chip-wide syncs) */
    uint32_t steps;          /* supersteps: exchange rounds + 1 compute */
    uint64_t mem_bytes;      /* tile memory it needs: the static data (weights, tables) placed so
                              * far plus the highest byte of tensors and buffers in use while it runs */
    int op;                  /* its ts_graph_op */
    uint64_t macs;           /* its multiply-accumulates (ts_graph_node_macs) */
    /* its plan: planner (b)'s code lowered it (t10), the kind (TS_LOWER_PLAN_*), spatial factors,
     * temporal factor, rotating pace, rotating operand (TS_T10_ROT_*) and the cost model's cycles;
     * an operator of planner (a) the model prices (a MatMul/Gemm under auto) has its row groups and
     * column blocks as fm and fn, every other operator of (a) zeros */
    bool t10;
    uint32_t plan;
    uint32_t fm, fn, fk, ft, rp, rot;
    uint64_t model_cycles;
} ts_lower_layer;

/* What the lowering did. Owned arrays; free with ts_lower_report_free. */
typedef struct ts_lower_report {
    ts_lower_place *places; size_t nplaces;
    ts_lower_layer *layers; size_t nlayers;
    uint32_t tiles_used;     /* streams emitted */
    uint32_t supersteps;     /* chip-wide syncs */
    uint64_t mem_bytes;      /* highest data byte used on any tile */
    int planner;             /* TS_LOWER_PLANNER_* it was lowered with */
} ts_lower_report;

void ts_lower_report_free(ts_lower_report *rep);

/* Lower a finalized graph. ipu_params is a const ts_lower_ipu_params *. On success *out is a new
 * program for arch "ipu" and rep (may be NULL) is filled. Unsupported operators and operators that
 * do not fit tile memory fail with an error naming the operator and by how much it is over:
 *   "MatMul 'mm' needs 289 KiB per tile, the tile has 256 KiB (33 KiB over: ...)". */
ts_status ts_lower_ipu(const ts_graph *g, const void *ipu_params, ts_program **out, ts_lower_report *rep,
                       ts_err *err);

/* Tile and byte address of element elem of tensor `tensor` after the run; -1 if not placed. */
int ts_lower_ipu_locate(const ts_lower_report *rep, const ts_graph *g, int tensor, uint64_t elem, uint32_t *tile,
                        uint64_t *addr);

/* Graph output `tensor` read back after the run through mem, as f32 (lower_ipu_values.c). */
ts_status ts_lower_ipu_read_output(const ts_lower_report *rep, const ts_graph *g, int tensor, const ts_lower_mem *mem,
                                   float *dst, ts_err *err);

/* Add the table `layers` to res->stats, one row per operator of rep that has supersteps: its node
 * id, op, tiles, supersteps, and the cycles, compute / exchange / sync shares and exchange bytes
 * of its supersteps (summed from the run's `supersteps` table, which the stats must hold), its
 * tile memory and MACs, its exchange rate over its cycles (bandwidth, GB/s), and its dynamic energy
 * (uJ: its supersteps' rows of the run's `superstep_events` priced with energy; -1 without that
 * table or an energy table); and, whatever the planner, each operator's plan (t10 1 where (b)'s code
 * lowered it, fm, fn, fk, ft, rp, rot, the cost model's cycles for it, and the plan's kind,
 * TS_LOWER_PLAN_*, as `plan`; zeros for the operators the model does not price).
 * TS_EINPUT if there is no `supersteps` table or it has fewer rows than rep's supersteps. */
ts_status ts_lower_ipu_layer_stats(const ts_lower_report *rep, ts_results *res, const ts_energy_table *energy,
                                   ts_err *err);

/* The IPU lowering in the registry (workloads/lower/lower.h). */
extern const ts_lowering ts_ipu_lowering;

#endif
