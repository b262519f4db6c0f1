/* workloads/ipu/lower_ipu_int.h — what the IPU lowering's planners share (internal to workloads/).
 *
 * Planner (a), load-compute-store (lower_ipu.c), owns the lowering state, the memory allocator,
 * the gather over the exchange and the AMP matrix-product kernel; planner (b), compute-shift
 * (lower_ipu_t10.c), lowers MatMul/Gemm with them. The ts_lwi_ functions are lower_ipu.c's own
 * helpers under names the linker sees; lower_ipu.c documents each.
 */
#ifndef TS_WORKLOADS_LOWER_IPU_INT_H
#define TS_WORKLOADS_LOWER_IPU_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/program.h"
#include "workloads/ipu/lower_ipu.h"
#include "workloads/ipu/plan_t10.h"

/* Opcode numbers: the IPU's one table. */
enum lw_op {
#define IPU_OP(id, mn, ops, cls, unit, ctx, lat, ev, ec, doc) LW_##id,
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
    LW_COUNT
};

#define RM(n) (n)        /* $m register number */
#define RA(n) (16 + (n)) /* $a register number */

typedef struct lw_code { ts_insn *v; size_t n, cap; } lw_code;
typedef struct lw_tile { lw_code sup, wrk; } lw_tile;
typedef struct lw_mark { uint32_t tile, pc, id; } lw_mark;
/* Where a tensor lives. Flat (inner = 0): element e on tile e / chunk at element e % chunk.
 * Blocked (inner > 0, a Conv output split by rows too): e = c * inner + p is on tile
 * (c / cb) * nrb + p / pb at element (c % cb) * pb + p % pb; chunk = cb * pb. */
typedef struct lw_place {
    uint32_t ntiles;
    uint64_t chunk, addr;
    uint32_t es;              /* bytes per element */
    uint64_t inner, cb, pb;   /* blocked layout; inner 0 = flat */
    uint32_t nrb;
} lw_place;
typedef struct lw_blk { uint64_t a, n; } lw_blk; /* a live block of the dynamic region */
typedef struct lw_tab { uint64_t hash, bytes, addr; uint32_t tiles; } lw_tab; /* static data the same on every tile */

typedef struct lw {
    const ts_graph *g;
    const ts_lower_ipu_params *p;
    ts_program *prog;
    ts_err *err;
    uint32_t T;           /* tiles the plan may use */
    uint32_t used;        /* tiles that got work: streams are emitted for 0..used-1 */
    uint32_t optiles;     /* tiles the current operator uses */
    uint32_t units;       /* AMP f32 units: outputs per AMP pass */
    uint32_t units16;     /* AMP f16 units (4 inputs each) */
    uint32_t workers;     /* worker contexts per tile */
    lw_tile *tiles;       /* T, owned */
    lw_place *pl;         /* per tensor, owned; ntiles 0 = not placed */
    /* Memory, the same addresses on every tile. Initial data (weights, biases, address tables)
     * lives for the whole run in the static region, from the top of tile memory down; tensors and
     * buffers in the dynamic region from the bottom up, first fit, freed after their last use. */
    /* Initial data is loaded before the run, so the memory of an operator's weights must not be
     * written before the operator runs; after it, the memory is free. Top down: the tables shared
     * by content (kept for the whole run), then each operator's weights, the last operator's
     * highest: while operator k runs, the weights of operators k.. lie above wbase(k) and the
     * dynamic region stays below it. A first pass (measure) finds each operator's weight bytes. */
    bool measure;         /* first pass: sizes only, no segments */
    uint64_t *wsz;        /* per node: weight bytes (filled by the first pass), owned */
    uint64_t perm;        /* table bytes (first pass total) */
    uint64_t ptop;        /* next table goes below this */
    uint64_t wabove;      /* weight bytes of the nodes after the current one */
    uint64_t wnext;       /* next weight byte of the current node */
    int cur;              /* node being lowered */
    uint64_t into;        /* when set, the next gather lands there (the caller's buffer) */
    lw_blk *blk; size_t nblk, capblk;  /* live dynamic blocks by address, owned */
    uint64_t hw;          /* highest dynamic byte in use since the current operator began */
    uint64_t *tmp; size_t ntmp, captmp; /* the current operator's buffers, freed at its end */
    lw_tab *tabs; size_t ntabs, captabs; /* owned */
    int *root;            /* per tensor: the tensor whose memory it is (Reshape, Flatten alias) */
    int *last;            /* per root tensor: its last consumer node; -1 = kept (graph output) */
    uint32_t step;        /* supersteps so far */
    lw_mark *marks; size_t nmarks, capmarks;
    ts_lower_layer *layers; size_t nlayers, caplayers;
    bool oom;
    bool overfull;        /* an operator did not fit tile memory (the t10 planner retries) */
    uint32_t mmshare;     /* planner (a): a MatMul/Gemm's weights take at most 1/mmshare of the tile memory */
    bool coalesce;        /* gather: one send for pieces that follow on in the sender's memory, one copy loop
                           * for staged pieces of equal length equally far apart (Transpose, MatMul of
                           * activations, and the plans of models whose weights do not fit at 1/4) */
    bool stagger;         /* gather: receiver t takes its senders from its (t mod n)-th on (planner (b)'s Convs) */
    const ts_t10_plan *plans; /* per node: the compute-shift plan (tiles 0 = load-compute-store); NULL = lcs */
} lw;

/* out[row r, output o] = sum_k a[r][k] w[k][o] (+ bias[o]), rows of 2*kp f32 at a + r*a_stride;
 * coefficient blocks [q][kp][unit][2] at w (U*8 bytes each); output o = q*U + u stored at
 * out + r*out_row + q*out_q + u*out_u; bias (0 = none) U floats per q. */
typedef struct mm_args {
    uint32_t rows, nq, kp;
    uint64_t nq_real;          /* outputs to store: nq*U, less in a partial last group */
    uint32_t units;            /* AMP units: outputs per group */
    bool half;                 /* f16 inputs and coefficients (f16v4amp, 4 inputs per unit) */
    bool out16;                /* outputs rounded to f16 and stored as halves (else f32) */
    uint64_t a, a_stride, w, bias, out;
    int64_t out_row, out_q, out_u;
    uint32_t taps;             /* > 0: the input is read in `taps` runs of $m11 pairs, $m4 advanced by
                                * tap_skip bytes between them (a kernel row of a channel-last image) */
    int32_t tap_skip;
    uint64_t acc;              /* != 0: add the f32 partial sums at acc (rows acc_row bytes apart, outputs
                                * of a row contiguous) instead of bias */
    int64_t acc_row;
    bool tab;                  /* a, w, out, acc, bias and kp from the six words at $m0 (one routine for
                                * every step; acc and bias then only say whether there are any) */
} mm_args;

/* Scratch per tile: lo, hi, nr, where. */
typedef struct lw_scr { uint64_t *lo, *hi, *where; uint32_t *nr; } lw_scr;


/* emission */
size_t ts_lwi_emit(lw *L, lw_code *c, int op, int32_t a0, int32_t a1, int32_t a2);
void ts_lwi_sync_all(lw *L);
void ts_lwi_emit_mm(lw *L, uint32_t t, const mm_args *m);
void ts_lwi_run_all(lw *L, uint32_t t, size_t entry);
void ts_lwi_run_all_m0(lw *L, uint32_t t, size_t entry, uint64_t v); /* the workers' $m0 := v */
void ts_lwi_use_tiles(lw *L, uint32_t n);
/* $m1 := this worker's first row of `rows` in blocks of rw (emit_start_row in lower_ipu.c). */
void ts_lwi_emit_start_row(lw *L, uint32_t t, uint32_t rows, uint32_t rw);
/* memory: dynamic blocks avoiding the element-aligned spans av[0..nav) ([lo, hi) pairs), freed with
 * the operator (talloc) or by address (release); the operator's weights (salloc); initial data */
uint64_t ts_lwi_talloc_apart(lw *L, uint64_t bytes, const uint64_t (*av)[2], size_t nav);
uint64_t ts_lwi_alloc(lw *L, uint64_t bytes);
uint64_t ts_lwi_salloc(lw *L, uint64_t bytes);
ts_status ts_lwi_seg(lw *L, uint32_t t, uint64_t addr, const void *bytes, uint64_t len);
float ts_lwi_value(const ts_graph_tensor *t, int id, uint64_t i);
/* the gather over the exchange */
ts_status ts_lwi_gather(lw *L, int x, uint32_t tn, const uint64_t *lo, const uint64_t *hi, const uint32_t *nr,
                        uint64_t sst, uint64_t dstr, bool force, uint64_t *where);
ts_status ts_lwi_unsupported(lw *L, const ts_graph_node *n, const char *why);

/* Planner (b) (lower_ipu_t10.c). ts_lwi_t10_plans chooses, before the lowering, a plan for every
 * MatMul/Gemm it can generate code for (plans[node].tiles = 0 for the others), from each one's
 * Pareto set over weight bytes, trading memory across them within `budget` bytes per tile
 * (ts_t10_reconcile). ts_lwi_t10_matmul lowers node n with its plan. */
ts_status ts_lwi_t10_plans(const ts_graph *g, const ts_lower_ipu_params *p, uint64_t budget, ts_t10_plan *plans,
                           ts_err *err);
ts_status ts_lwi_t10_matmul(lw *L, const ts_graph_node *n, lw_scr *sc, const ts_t10_plan *plan);

#endif
