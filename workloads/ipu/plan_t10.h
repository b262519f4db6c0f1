/* workloads/ipu/plan_t10.h — planner (b) for the IPU: compute-shift plans with rotating operands.
 *
 * The plan space and cost model of the compute-shift planner (T10, SOSP 2024; research/
 * graphcore_ipu.md §4.5, §5). A MatMul C[m][n] = A[m][k] B[k][n] is split spatially over a grid of
 * fm x fn x fk tiles (output rows, output columns, the shared dimension k; fk > 1 adds partial sums
 * in a tree). An operand that load-compute-store would replicate over the tiles of a row (A, over
 * the fn tiles that share its rows) or of a column (B, over the fm tiles) may instead rotate: the
 * tile's k-range is cut into ft sub-tensors (the temporal factor, ft dividing the ring length),
 * each tile of a ring of ft tiles holds one, and they are shifted round the ring. The rotating
 * pace rp is how finely a held sub-tensor is shifted: it goes out in rp slices, one per step, so
 * the operator runs in ft * rp steps of compute + shift + sync, and a tile needs memory for its
 * sub-tensor and one slice in flight (rp = 1: double buffering). Both operands may rotate at once
 * (Cannon's skew) with the same ft and rp. The definition of rp is the project's: the T10 paper's
 * body was not read (research/graphcore_ipu.md §5.1).
 *
 * Costs are tile cycles of the busiest tile, from the figures the lowering's kernels have
 * (docs/lowering-ipu.md, "Kernels and their cost"): the AMP MatMul kernel at (U + 2) issues per
 * 2U MACs per input pair plus a per-output-group overhead, rows split over the workers; the
 * exchange at the config's bytes per cycle per tile; a chip-wide sync per superstep.
 */
#ifndef TS_WORKLOADS_PLAN_T10_H
#define TS_WORKLOADS_PLAN_T10_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

/* What the cost model needs to know about the chip. */
typedef struct ts_t10_hw {
    uint32_t tiles;          /* tiles the plan may use */
    uint64_t sram_bytes;     /* memory per tile a plan may take */
    uint32_t units;          /* AMP outputs per pass (amp.macs_per_cycle_f32 / 2; 4 on MK1) */
    uint32_t workers;        /* worker contexts per tile (6) */
    uint32_t xbytes;         /* exchange bytes per cycle per tile (exchange.bytes_per_cycle, 4) */
    uint32_t sync_cycles;    /* one chip-wide sync (sync.internal_cycles, 90 on MK1) */
    uint32_t round_cycles;   /* fixed cost of an exchange superstep beyond the sync (arm, rxwait) */
    bool shared_amp;         /* the tile takes the shared-coefficient AMP kernel (lower_ipu_ampk.c):
                              * loads ready within a barrel turn, 16 bytes a cycle */
} ts_t10_hw;

/* A MatMul m x k x n with es-byte elements. */
typedef struct ts_t10_mm {
    uint64_t m, k, n;
    uint32_t es;
    bool built; /* A's rows built on the tile (a Conv's pixel rows): one step's k may be padded to whole
                 * bodies too, the padding zeroed there */
} ts_t10_mm;

enum { TS_T10_ROT_NONE = 0, TS_T10_ROT_A = 1, TS_T10_ROT_B = 2, TS_T10_ROT_AB = 3 };

/* One plan: the choice (fm .. rot) and what the model derives from it. */
typedef struct ts_t10_plan {
    uint32_t fm, fn, fk;     /* spatial factors: tiles along m, n, k */
    uint32_t ft, rp;         /* temporal factor and rotating pace (1, 1 when nothing rotates) */
    uint32_t rot;            /* TS_T10_ROT_*: which operands rotate */
    bool lcs;                /* load-compute-store's plan (ts_t10_mm_lcs): planner (a) lowers the operator */
    uint32_t share;          /* lcs: its weights within 1/share of the tile (L->mmshare's role); 0 otherwise */
    bool bodies;             /* k per step rounded up to whole bodies of the shared-coefficient AMP kernel
                              * (lower_ipu_ampk.c) where the tile takes it and the steps stay (both
                              * forms are offered: the rounding costs memory) */
    /* derived */
    uint32_t tiles;          /* fm * fn * fk */
    uint32_t steps;          /* compute steps: ft * rp */
    uint32_t syncs;          /* chip-wide syncs: steps + partial-sum levels */
    uint64_t rows, cols, kt; /* per tile: output rows, output columns, its k-range */
    uint64_t kp;             /* k per step (even: the AMP takes input pairs) */
    uint64_t mem_bytes;      /* tile memory: operands held, slices in flight, output, partial sums */
    uint64_t w_bytes;        /* of which B (the weights): held, plus its slice in flight */
    uint64_t shift_bytes;    /* bytes a tile sends (and receives) per shift */
    uint64_t in_cycles;      /* exchange cycles gathering A into the plan's layout (included below) */
    uint64_t compute_cycles, exchange_cycles, sync_cycles, cycles;
} ts_t10_plan;

/* AMP MatMul kernel cycles of one tile for a rows x k x cols block (k even). */
uint64_t ts_t10_amp_cycles(const ts_t10_hw *hw, uint64_t rows, uint64_t k, uint64_t cols);

/* The body of the shared-coefficient AMP kernel (lower_ipu_ampk.c) for W workers and U units: the
 * sets it takes (input steps; a group's steps must be a multiple), the issues of a worker in it,
 * and the coefficient pointers a worker steps; false when the kernel has no schedule for them. U of
 * 10 to 16 (MK2's 16 f16 units) is the kernel whose coefficient blocks lie worker by worker, loaded
 * by one post-incremented pointer (ld128putcsstep): *ptrs 1, stepped once a group, not a body. */
bool ts_t10_amp_body(uint32_t W, uint32_t U, uint32_t *sets, uint32_t *issues, uint32_t *ptrs);

/* ts_t10_amp_cycles for the shared-coefficient kernel, f32 (k elements, k/2 pairs); 0 where the
 * lowering would not use it (hw->shared_amp unset, or k/2 not a whole number of bodies). */
uint64_t ts_t10_amp_shared_cycles(const ts_t10_hw *hw, uint64_t rows, uint64_t k, uint64_t cols);

/* A tile's `steps` compute steps over kt of k, kp a step (the last the rest): each by the shared
 * kernel where it takes the step's k, else by lwi_emit_mm's routine (ts_t10_amp_cycles). Where the
 * shared kernel does not take kp, steps x ts_t10_amp_cycles(kp), as before it. */
uint64_t ts_t10_steps_cycles(const ts_t10_hw *hw, uint64_t rows, uint64_t kt, uint64_t kp, uint32_t steps, uint64_t cols);

/* ts_t10_steps_cycles where the lowering pads the last step to whole bodies of the shared kernel
 * (f16, lower_ipu_t10.c): where the shared kernel takes kp, the last step is priced by it at its k
 * rounded up to whole bodies; otherwise ts_t10_steps_cycles. */
uint64_t ts_t10_steps_cycles_padded(const ts_t10_hw *hw, uint64_t rows, uint64_t kt, uint64_t kp, uint32_t steps,
                                    uint64_t cols);

/* Whether the lowering pads an f16 plan's last slice (kp whole bodies) where A does not rotate and
 * its rows, padded, lie further apart than k: only where a holder of A holds one row (a graph
 * input's chunks), since a transfer of several rows into padded rows lands in a staging buffer
 * that the supervisor copies word by word. Always where A rotates or needs no padding. */
bool ts_t10_pads_a(const ts_t10_hw *hw, const ts_t10_mm *mm, const ts_t10_plan *p);

/* p's gather of A (a MatMul's, ts_t10_mm_cost's) repriced for the packed rounds of the lowering's
 * f16 plans in whole bodies (lower_ipu_exchange.c, gather_pack): a sender serves one receiver a
 * round, so max(rounds, its receivers) rounds (per slice held first when A rotates; its receivers:
 * the fn tiles of each row block its chunk meets), each one piece of crow rows by the tile's k (a
 * rotating A's: a slice's), plus a round's fixed cost and a sync; unchanged where that is not
 * cheaper (the lowering then keeps the rounds unpacked). */
void ts_t10_gather_packed(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan *p);

/* Derive p's fields from its choice; TS_EINPUT naming the rule if the choice is not a valid plan
 * (a factor of 0, more tiles than the chip, ft not dividing its ring, rp finer than k allows). The
 * memory limit is not checked here. */
ts_status ts_t10_mm_cost(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan *p, ts_err *err);

/* Every valid plan that fits hw->sram_bytes: fm and fn over the values giving distinct block sizes
 * (fn in whole AMP groups), fk and rp powers of two, ft the divisors of the ring. *out is owned by
 * the caller (ts_free); TS_EINPUT if none fits. */
ts_status ts_t10_mm_plans(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan **out, size_t *n, ts_err *err);

/* Keep, in place, the Pareto set of v (no other plan has both fewer cycles and no more memory),
 * sorted by memory ascending (cycles then descending); returns its size. Ties keep the first in a
 * fixed order of the choice fields, so the result does not depend on v's order. */
size_t ts_t10_pareto(ts_t10_plan *v, size_t n);

/* The same over weight bytes (w_bytes) and cycles, sorted by weight bytes ascending: the sets
 * ts_t10_reconcile trades, since weights are what stays in memory across operators. */
size_t ts_t10_pareto_weights(ts_t10_plan *v, size_t n);

/* The fastest plan of a Pareto set within mem_limit bytes; NULL if none. */
const ts_t10_plan *ts_t10_pick(const ts_t10_plan *pareto, size_t n, uint64_t mem_limit);

/* The plan load-compute-store (workloads/ipu/lower_ipu_matmul.c) makes for the same MatMul (lcs set),
 * costed by the same model: rows over tiles, columns in blocks once the weights pass a quarter of the tile
 * memory, the A rows gathered from chunks of at least 1024 elements (the senders' ports are the
 * bottleneck when few tiles hold A), nothing rotates. A compute-shift plan pays the same gather of
 * A into its own layout (ts_t10_mm_cost), with fewer copies of a row when A rotates. */
void ts_t10_mm_lcs(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan *p);

/* Memory across operators (T10's second stage). Operators run one after the other; the weights of
 * every operator stay in tile memory for the whole run, the rest of an operator's memory only while
 * it runs: a choice of one plan per operator needs sum(w_bytes) + max(mem_bytes - w_bytes) per
 * tile. sets[i] is operator i's Pareto set (ts_t10_pareto_weights) of nsets[i] plans; pick[i] gets the
 * index chosen. Starting from every operator's fastest plan, while the total is over `budget` the
 * operator whose smaller plan costs the fewest added cycles per byte saved takes it (any smaller
 * plan of its set, as an operator's other memory need not shrink with its weights).
 * TS_EINPUT if even that cannot fit the budget. */
ts_status ts_t10_reconcile(const ts_t10_plan *const *sets, const size_t *nsets, size_t nops, uint64_t budget,
                           size_t *pick, uint64_t *total_bytes, ts_err *err);

/* When ts_t10_reconcile finds no choice within budget, the choice again with the part of each plan
 * that is not weights capped. The trade takes from each operator's fastest plan down, one operator
 * at a time, and refuses a smaller plan whose other part raises the largest of them more than its
 * weights save, even where that largest part, once raised, would let every other operator give up
 * weights too: BERT-base at batch 4 on ipu_mk2 stopped so, 661,800 bytes of weights against a
 * budget of 638,976, and the smallest weights of every operator were taken instead, among them an
 * in-projection (512 x 768 x 2304) of 1 x 23 x 64 tiles whose partial sums took 451 KiB a tile.
 * For each cap D of 15/16, 14/16, ... 1/16 of the budget: each operator's plans (all of them,
 * all[k]) whose other part is at most D, their Pareto set over weights, traded as if each took D
 * besides its weights (so the trade is over weights alone, within budget - D); of the caps that
 * fit, the one whose plans take the fewest cycles together gives chosen[k] (the plans as they
 * are) and *total. False if none fits. */
bool ts_t10_reconcile_capped(ts_t10_plan *const *all, const size_t *nall, size_t nops, uint64_t budget, ts_t10_plan *chosen,
                             uint64_t *total);

/* The MatMul a Conv is computed as over its im2col rows (batch 1, group 1): m = ho * wo output
 * pixels, k = c * kh * kw, n = m_out channels. */
ts_t10_mm ts_t10_conv_as_mm(uint64_t c, uint64_t ho, uint64_t wo, uint64_t m_out, uint64_t kh, uint64_t kw, uint32_t es);

#endif
