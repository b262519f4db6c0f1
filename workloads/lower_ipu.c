/* workloads/lower_ipu.c — graph to IPU instruction streams, planner (a): load-compute-store.
 *
 * See lower_ipu.h for the contract and docs/lowering-ipu.md for the plan, the kernels and their
 * costs. In short, for every operator in topological order:
 *   1. partition its output over tiles (rows for MatMul/Gemm/Softmax, groups of AMP units of output
 *      channels for Conv, the input's chunks for elementwise ops);
 *   2. gather into each tile the contiguous input slice it needs, unless it is already there:
 *      exchange rounds, one chip-wide superstep each, in which every tile receives from at most one
 *      sender (so no two senders ever meet at a receiver) and a sender serves its receivers one
 *      after another; slices a tile holds itself are copied by its supervisor;
 *   3. compute on one worker per tile, then sync; the output stays where it was computed.
 * Tensors are f32, or f16 throughout a MatMul/Gemm (f16 x f16 -> f32 on the AMP, the output
 * rounded to f16); other dtypes are refused. Memory is a bump allocator with the same
 * addresses on every tile and no reuse, so "needs N KiB per tile" counts every earlier tensor.
 */
#include "workloads/lower_ipu.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"

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
typedef struct lw_place { uint32_t ntiles; uint64_t chunk, addr; uint32_t es; } lw_place; /* es: bytes per element */

typedef struct lw {
    const ts_graph *g;
    const ts_lower_ipu_params *p;
    ts_program *prog;
    ts_err *err;
    uint32_t T;           /* tiles the plan may use */
    uint32_t used;        /* tiles that got work: streams are emitted for 0..used-1 */
    uint32_t units;       /* AMP f32 units: outputs per AMP pass */
    uint32_t units16;     /* AMP f16 units (4 inputs each) */
    uint32_t workers;     /* worker contexts per tile */
    lw_tile *tiles;       /* T, owned */
    lw_place *pl;         /* per tensor, owned; ntiles 0 = not placed */
    uint64_t top;         /* bump allocator, same address on every tile */
    uint32_t step;        /* supersteps so far */
    lw_mark *marks; size_t nmarks, capmarks;
    ts_lower_layer *layers; size_t nlayers, caplayers;
    bool oom;
} lw;

/* ---- emission ---- */

static size_t emit(lw *L, lw_code *c, int op, int32_t a0, int32_t a1, int32_t a2)
{
    if (ts_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v)) {
        L->oom = true;
        return c->n;
    }
    ts_insn *in = &c->v[c->n];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->a[0] = a0;
    in->a[1] = a1;
    in->a[2] = a2;
    return c->n++;
}

static int32_t fbits(float f)
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b;
}

#define S(t, op, a, b, c) emit(L, &L->tiles[t].sup, LW_##op, (a), (b), (c))
#define W(t, op, a, b, c) emit(L, &L->tiles[t].wrk, LW_##op, (a), (b), (c))

static void mark(lw *L, uint32_t t)
{
    if (ts_grow((void **)&L->marks, &L->capmarks, L->nmarks + 1, sizeof *L->marks)) {
        L->oom = true;
        return;
    }
    L->marks[L->nmarks++] = (lw_mark){t, (uint32_t)L->tiles[t].sup.n, L->step};
}

/* Every tile ends the superstep with a chip-wide sync. */
static void sync_all(lw *L)
{
    for (uint32_t t = 0; t < L->T; t++)
        S(t, SYNC, 1, 0, 0);
    L->step++;
    for (uint32_t t = 0; t < L->T; t++)
        mark(L, t);
}

static uint64_t alloc(lw *L, uint64_t bytes)
{
    uint64_t a = (L->top + 15) & ~(uint64_t)15;
    L->top = a + ((bytes + 15) & ~(uint64_t)15);
    return a;
}

static void use_tiles(lw *L, uint32_t n)
{
    if (n > L->used)
        L->used = n;
}

static ts_status seg(lw *L, uint32_t t, uint64_t addr, const void *bytes, uint64_t len)
{
    if (!len)
        return TS_OK;
    return ts_program_add_segment(L->prog, 0, t, addr, bytes, (uint32_t)len, L->err);
}

/* ---- values ---- */

float ts_lower_ipu_fill(int tensor, uint64_t i)
{
    uint64_t z = ((uint64_t)(uint32_t)tensor << 40) ^ i ^ 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0); /* k / 2^23 - 1, exact in f32 */
}

static float value(const ts_graph_tensor *t, int id, uint64_t i)
{
    if (t->dtype == TS_DT_F16) {
        uint16_t h;
        if (!t->data)
            return ts_f16_to_f32(ts_f32_to_f16(ts_lower_ipu_fill(id, i)));
        memcpy(&h, (const char *)t->data + 2 * i, 2);
        return ts_f16_to_f32(h);
    }
    if (t->data) {
        float f;
        memcpy(&f, (const char *)t->data + 4 * i, 4);
        return f;
    }
    return ts_lower_ipu_fill(id, i);
}

/* ---- errors ---- */

static const char *opname(const ts_graph_node *n) { return ts_graph_op_name(n->op); }

static ts_status unsupported(lw *L, const ts_graph_node *n, const char *why)
{
    return ts_err_set(L->err, TS_EINPUT, "%s '%s': %s (the IPU lowering does not support this yet)", opname(n),
                      n->name, why);
}

static ts_status check_f32(lw *L, const ts_graph_node *n)
{
    /* f16 operands: MatMul and Gemm (f16 x f16 -> f32 on the AMP, output f16), Reshape, Flatten */
    bool f16ok = n->op == TS_OP_MATMUL || n->op == TS_OP_GEMM || n->op == TS_OP_RESHAPE || n->op == TS_OP_FLATTEN;
    ts_dtype dt0 = n->nin ? ts_graph_get_tensor(L->g, n->in[0])->dtype : TS_DT_F32;
    for (size_t i = 0; i < n->nin; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(L->g, n->in[i]);
        if (t->dtype != TS_DT_F32 && !(f16ok && t->dtype == TS_DT_F16 && dt0 == TS_DT_F16)) {
            char why[128];
            snprintf(why, sizeof why, "input '%s' is %s; this operator is lowered for f32%s", t->name,
                     ts_dtype_name(t->dtype), f16ok ? " (or f16 throughout)" : "");
            return unsupported(L, n, why);
        }
    }
    return TS_OK;
}

static ts_status check_fit(lw *L, const ts_graph_node *n)
{
    if (L->oom)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering %s '%s'", opname(n), n->name);
    if (L->top <= L->p->sram_bytes)
        return TS_OK;
    return ts_err_set(L->err, TS_EINPUT,
                      "%s '%s' needs %llu KiB per tile, the tile has %llu KiB",
                      opname(n), n->name, (unsigned long long)((L->top + 1023) / 1024),
                      (unsigned long long)(L->p->sram_bytes / 1024));
}

/* ---- gathering input slices ---- */

typedef struct lw_piece { uint32_t src, dst; uint64_t from, to, words; } lw_piece;

/* Tile t < tn needs elements [lo[t], hi[t]) of tensor x contiguous in its memory; where[t] gets
 * the address. In place when the slice lies in the tile's own chunk (unless force); otherwise
 * gathered into one buffer (same address on every tile) by exchange rounds and local copies. */
static ts_status gather(lw *L, int x, uint32_t tn, const uint64_t *lo, const uint64_t *hi, bool force,
                        uint64_t *where)
{
    const lw_place *P = &L->pl[x];
    uint64_t es = P->es, need = 0;
    for (uint32_t t = 0; t < tn; t++) {
        bool local = !force && t < P->ntiles && lo[t] >= t * P->chunk && hi[t] <= (t + 1) * P->chunk;
        where[t] = local ? P->addr + (lo[t] - t * P->chunk) * es : 0;
        if (local || hi[t] <= lo[t])
            continue;
        if ((hi[t] - lo[t]) * es > need)
            need = (hi[t] - lo[t]) * es;
    }
    if (!need)
        return TS_OK;
    /* the buffer receives while the tile sends from x's chunk: keep them in different elements */
    uint64_t eb = L->p->element_bytes ? L->p->element_bytes : 1;
    uint64_t xend = P->addr + P->chunk * es;
    uint64_t g = (L->top + 15) & ~(uint64_t)15;
    if (g / eb == (xend - 1) / eb)
        L->top = (xend / eb + 1) * eb;
    g = alloc(L, need);
    /* pieces, per receiver in source order */
    lw_piece *pc = NULL;
    size_t npc = 0, cap = 0;
    uint32_t rounds = 0;
    uint32_t *count = ts_calloc(tn, sizeof *count);
    if (!count)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory gathering '%s'", ts_graph_get_tensor(L->g, x)->name);
    for (uint32_t t = 0; t < tn; t++) {
        if (hi[t] <= lo[t] || where[t])
            continue;
        where[t] = g;
        for (uint64_t s = lo[t] / P->chunk; s * P->chunk < hi[t]; s++) {
            uint64_t a = lo[t] > s * P->chunk ? lo[t] : s * P->chunk;
            uint64_t b = hi[t] < (s + 1) * P->chunk ? hi[t] : (s + 1) * P->chunk;
            if (ts_grow((void **)&pc, &cap, npc + 1, sizeof *pc)) {
                ts_free(pc);
                ts_free(count);
                return ts_err_set(L->err, TS_ENOMEM, "out of memory gathering");
            }
            if ((a * es) % 4 || (b * es) % 4 || (P->chunk * es) % 4) { /* whole 32-bit words only */
                ts_free(pc);
                ts_free(count);
                return ts_err_set(L->err, TS_EINPUT, "'%s': f16 slices must start and end on 32-bit words",
                                  ts_graph_get_tensor(L->g, x)->name);
            }
            pc[npc++] = (lw_piece){(uint32_t)s, t, P->addr + (a - s * P->chunk) * es, g + (a - lo[t]) * es,
                                   (b - a) * es / 4};
            if (s != t && ++count[t] > rounds)
                rounds = count[t];
        }
    }
    /* exchange rounds: round r carries the r-th remote piece of every receiver */
    for (uint32_t r = 0; r < rounds; r++) {
        memset(count, 0, tn * sizeof *count);
        bool *recv = ts_calloc(L->T, sizeof *recv);
        if (!recv) {
            ts_free(pc);
            ts_free(count);
            return ts_err_set(L->err, TS_ENOMEM, "out of memory gathering");
        }
        size_t *sel = ts_calloc(npc ? npc : 1, sizeof *sel);
        size_t nsel = 0;
        for (size_t i = 0; sel && i < npc; i++) {
            if (pc[i].src == pc[i].dst)
                continue;
            if (count[pc[i].dst]++ == r)
                sel[nsel++] = i;
        }
        for (size_t k = 0; sel && k < nsel; k++) { /* receivers arm first */
            const lw_piece *q = &pc[sel[k]];
            S(q->dst, SETZI, RM(5), (int32_t)q->to, 0);
            S(q->dst, SETZI, RM(6), (int32_t)q->src, 0);
            S(q->dst, RECV, RM(5), RM(6), (int32_t)q->words);
            recv[q->dst] = true;
        }
        for (uint32_t s = 0; sel && s < L->T; s++) /* senders, receivers in ascending order */
            for (size_t k = 0; k < nsel; k++) {
                const lw_piece *q = &pc[sel[k]];
                if (q->src != s)
                    continue;
                S(s, SETZI, RM(5), (int32_t)q->from, 0);
                S(s, SETZI, RM(6), (int32_t)q->dst, 0);
                S(s, SEND, RM(5), RM(6), (int32_t)q->words);
            }
        for (uint32_t t = 0; t < L->T; t++)
            if (recv[t])
                S(t, RXWAIT, 0, 0, 0);
        bool fail = !sel;
        ts_free(sel);
        ts_free(recv);
        if (fail) {
            ts_free(pc);
            ts_free(count);
            return ts_err_set(L->err, TS_ENOMEM, "out of memory gathering");
        }
        sync_all(L);
    }
    /* what a tile holds itself: its supervisor copies it (start of the compute superstep) */
    for (size_t i = 0; i < npc; i++) {
        const lw_piece *q = &pc[i];
        if (q->src != q->dst)
            continue;
        S(q->dst, SETZI, RM(1), (int32_t)q->from, 0);
        S(q->dst, SETZI, RM(2), (int32_t)q->to, 0);
        S(q->dst, SETZI, RM(3), (int32_t)q->words, 0);
        S(q->dst, RPT, RM(3), 2, 0);
        S(q->dst, LD32STEP, RM(4), RM(1), 4);
        S(q->dst, ST32STEP, RM(4), RM(2), 4);
    }
    ts_free(pc);
    ts_free(count);
    return TS_OK;
}

/* ---- the AMP matrix-product kernel ---- */

/* out[row r, output o] = sum_k a[r][k] w[k][o] (+ bias[o]), rows of 2*kp f32 at a + r*a_stride;
 * coefficient blocks [q][kp][unit][2] at w (U*8 bytes each); output o = q*U + u stored at
 * out + r*out_row + q*out_q + u*out_u; bias (0 = none) U floats per q. */
typedef struct mm_args {
    uint32_t rows, nq, kp;
    uint64_t nq_real;          /* outputs to store: nq*U, less in a partial last group */
    uint32_t units;            /* AMP units: outputs per group */
    bool half;                 /* f16 inputs, coefficients and outputs (f16v4amp, 4 inputs per unit) */
    uint64_t a, a_stride, w, bias, out;
    int64_t out_row, out_q, out_u;
} mm_args;

/* $m1 := this worker's first row of `rows` split in blocks of rw = ceil(rows / workers): min(w rw,
 * rows - rw), computed without branches so every worker runs the same instructions (the last
 * blocks overlap and recompute the same rows; they write the same values). */
static void emit_start_row(lw *L, uint32_t t, uint32_t rows, uint32_t rw)
{
    W(t, GET, RM(1), 2, 0);
    W(t, MULI, RM(1), RM(1), (int32_t)rw);
    W(t, SETZI, RM(2), (int32_t)(rows - rw), 0);
    W(t, CMPSLT, RM(3), RM(1), RM(2));
    W(t, SUB, RM(4), RM(1), RM(2));
    W(t, MUL, RM(4), RM(4), RM(3));
    W(t, ADD, RM(1), RM(2), RM(4));
}

static void emit_quad(lw *L, uint32_t t, const mm_args *m, uint32_t nstore)
{
    uint32_t U = m->units;
    W(t, AMPZERO, 0, 0, 0);
    W(t, MOV, RM(4), RM(2), 0);
    W(t, RPT, RM(11), (int32_t)U + 2, 0);
    for (uint32_t s = 0; s < U / 2; s++) {
        W(t, LD128PUTCS, RM(5), (int32_t)s, 0);
        W(t, ADDI, RM(5), RM(5), 16);
    }
    W(t, LD64STEP, RA(0), RM(4), 8);
    if (m->half)
        W(t, F16V4AMP, RA(0), 0, 0);
    else
        W(t, F32V2AMP, RA(0), 0, 0);
    for (uint32_t s = 0; s < U / 2; s++)
        W(t, AMPGET, RA(2 * s), (int32_t)s, 0);
    if (m->bias) {
        for (uint32_t s = 0; s < U / 2; s++) {
            W(t, LD64, RA(8 + 2 * s), RM(8), (int32_t)(8 * s));
            W(t, F32V2ADD, RA(2 * s), RA(2 * s), RA(8 + 2 * s));
        }
        W(t, ADDI, RM(8), RM(8), (int32_t)(4 * U));
    }
    if (m->half) /* pairs rounded to f16 (nearest even), one 32-bit store per pair */
        for (uint32_t s = 0; 2 * s < nstore; s++) {
            W(t, F32V2TOF16, RA(s), RA(2 * s), 0);
            W(t, ST32, RA(s), RM(6), (int32_t)(m->out_u * 2 * s));
        }
    else
        for (uint32_t u = 0; u < nstore; u++)
            W(t, ST32, RA(u), RM(6), (int32_t)(m->out_u * u));
    W(t, ADDI, RM(6), RM(6), (int32_t)m->out_q);
}

/* Every worker of the tile runs this routine (runall) on its block of rows. The AMP coefficients
 * are tile state shared by the workers: all of them load the same block before using it, and they
 * run the same instructions in the same order one barrel slot apart, so each f32v2amp of every
 * worker sees the block of its own iteration (the coefficient loads of the next iteration issue
 * after the last worker's f32v2amp of this one). */
static void emit_mm(lw *L, uint32_t t, const mm_args *m)
{
    uint32_t U = m->units;
    uint32_t rw = (uint32_t)((m->rows + L->workers - 1) / L->workers);
    uint32_t full = (uint32_t)(m->nq_real / U), tail = (uint32_t)(m->nq_real % U);
    emit_start_row(L, t, m->rows, rw);
    W(t, MULI, RM(2), RM(1), (int32_t)m->a_stride);
    W(t, SETZI, RM(3), (int32_t)m->a, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)m->out_row);
    W(t, SETZI, RM(4), (int32_t)m->out, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    W(t, SETZI, RM(11), (int32_t)m->kp, 0);
    size_t row = W(t, SETZI, RM(5), (int32_t)m->w, 0);
    W(t, SETZI, RM(8), (int32_t)m->bias, 0);
    W(t, MOV, RM(6), RM(3), 0);
    if (full) {
        W(t, SETZI, RM(7), (int32_t)full - 1, 0);
        size_t q = L->tiles[t].wrk.n;
        emit_quad(L, t, m, U);
        W(t, BRNZDEC, RM(7), (int32_t)q, 0);
    }
    if (tail)
        emit_quad(L, t, m, tail);
    W(t, ADDI, RM(2), RM(2), (int32_t)m->a_stride);
    W(t, ADDI, RM(3), RM(3), (int32_t)m->out_row);
    W(t, BRNZDEC, RM(1), (int32_t)row, 0);
}

/* Run the routine at wrk pc `entry` on every worker of tile t, wait for them. */
static void run_all(lw *L, uint32_t t, size_t entry)
{
    S(t, SETZI, RM(1), 0, 0);
    S(t, RUNALL, (int32_t)entry, RM(1), 0);
    S(t, SYNC, 0, 0, 0);
}

/* ---- operators ---- */

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static ts_status need_placed(lw *L, const ts_graph_node *n, int x)
{
    if (L->pl[x].ntiles)
        return TS_OK;
    char why[160];
    snprintf(why, sizeof why, "input '%s' is a %s; only activations and graph inputs are lowered as data",
             ts_graph_get_tensor(L->g, x)->name, ts_tensor_kind_name(ts_graph_get_tensor(L->g, x)->kind));
    return unsupported(L, n, why);
}

/* Scratch per tile: lo, hi, where. */
typedef struct lw_scr { uint64_t *lo, *hi, *where; } lw_scr;

static ts_status scratch(lw *L, lw_scr *s)
{
    s->lo = ts_calloc(L->T, sizeof *s->lo);
    s->hi = ts_calloc(L->T, sizeof *s->hi);
    s->where = ts_calloc(L->T, sizeof *s->where);
    if (!s->lo || !s->hi || !s->where)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

static void scratch_free(lw_scr *s)
{
    ts_free(s->lo);
    ts_free(s->hi);
    ts_free(s->where);
}

/* MatMul A[..., K] x B[K, N] and Gemm (transB, bias [N]): rows of A partitioned over tiles. */
static ts_status lower_matmul(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *A = ts_graph_get_tensor(g, n->in[0]);
    const ts_graph_tensor *B = ts_graph_get_tensor(g, n->in[1]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(g, n->out[0]);
    const ts_graph_tensor *C = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    bool gemm = n->op == TS_OP_GEMM;
    bool tb = gemm && n->attrs.trans_b;
    if (gemm && (n->attrs.trans_a || n->attrs.alpha != 1.0 || (C && n->attrs.beta != 1.0)))
        return unsupported(L, n, "transA, alpha or beta other than 1");
    if (B->kind == TS_TENSOR_ACTIVATION || B->kind == TS_TENSOR_INPUT || B->rank != 2 || A->rank < 1)
        return unsupported(L, n, "the second operand must be a 2-d weight");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t K = (uint64_t)A->dims[A->rank - 1];
    uint64_t N = (uint64_t)(tb ? B->dims[0] : B->dims[1]);
    uint64_t M = (uint64_t)ts_graph_tensor_elems(A) / K;
    if (C && ts_graph_tensor_elems(C) != (int64_t)N)
        return unsupported(L, n, "a bias that is not one value per output column");
    bool half = A->dtype == TS_DT_F16;
    uint32_t per = half ? 4 : 2; /* inputs per AMP unit and instruction */
    if (K % per)
        return unsupported(L, n, half ? "an f16 inner dimension that is not a multiple of 4 (f16v4amp)"
                                      : "an odd inner dimension (the AMP takes input pairs)");
    if (half && N % 2)
        return unsupported(L, n, "an odd number of f16 output columns (outputs are stored in pairs)");
    uint32_t U = half ? L->units16 : L->units;
    if (half && (U < 2 || U > 8 || U % 2))
        return unsupported(L, n, "f16 on an AMP of other than 2, 4 or 8 f16 units");
    uint64_t es = half ? 2 : 4;
    uint64_t nq = cdiv(N, U), kp = K / per;
    uint64_t rp = cdiv(M, L->T);
    uint32_t tn = (uint32_t)cdiv(M, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * K;
        sc->hi[t] = (t + 1) * rp < M ? (t + 1) * rp * K : M * K;
    }
    if ((rc = gather(L, n->in[0], tn, sc->lo, sc->hi, false, sc->where)) != TS_OK)
        return rc;
    /* weights: coefficient blocks [group][input step][unit][per], the same on every tile (f16
     * blocks hold halves); the bias stays f32, added to the f32 accumulators */
    uint64_t wbytes = nq * kp * U * 8;
    float *w = ts_calloc(wbytes / 4 + nq * U, 4);
    if (!w)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the weights of '%s'", n->name);
    uint16_t *w16 = (uint16_t *)w;
    for (uint64_t q = 0; q < nq; q++)
        for (uint64_t k2 = 0; k2 < kp; k2++)
            for (uint32_t u = 0; u < U; u++)
                for (uint32_t j = 0; j < per; j++) {
                    uint64_t o = q * U + u, k = per * k2 + j, at = ((q * kp + k2) * U + u) * per + j;
                    float v = o < N ? value(B, n->in[1], tb ? o * K + k : k * N + o) : 0.0f;
                    if (half)
                        w16[at] = ts_f32_to_f16(v);
                    else
                        w[at] = v;
                }
    float *bias = w + wbytes / 4;
    for (uint64_t o = 0; C && o < N; o++)
        bias[o] = value(C, n->in[2], o);
    uint64_t waddr = alloc(L, wbytes);
    uint64_t baddr = C ? alloc(L, nq * U * 4) : 0;
    uint64_t out = alloc(L, rp * N * es);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        rc = seg(L, t, waddr, w, wbytes);
        if (rc == TS_OK && C)
            rc = seg(L, t, baddr, bias, nq * U * 4);
    }
    ts_free(w);
    if (rc != TS_OK)
        return rc;
    for (uint32_t t = 0; t < tn; t++) {
        mm_args m = {.rows = (uint32_t)((sc->hi[t] - sc->lo[t]) / K), .nq = (uint32_t)nq, .kp = (uint32_t)kp,
                     .nq_real = N, .units = U, .half = half, .a = sc->where[t], .a_stride = K * es,
                     .w = waddr, .bias = baddr, .out = out, .out_row = (int64_t)(N * es),
                     .out_q = (int64_t)(U * es), .out_u = (int64_t)es};
        size_t entry = L->tiles[t].wrk.n;
        emit_mm(L, t, &m);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){tn, rp * N, out, (uint32_t)es};
    (void)Y;
    sync_all(L);
    return TS_OK;
}

/* Conv (batch 1, group 1, no dilation) as an im2col'd matrix product on the AMP: output channels
 * in groups of U partitioned over tiles. Each tile gathers the whole input and copies it into a
 * zero-padded image (fresh tile memory reads as zero and is never reused); then every worker, for
 * each output pixel of its block, builds that pixel's im2col row in its own small buffer (a table
 * of byte offsets within the padded image, from the pixel's base address) and multiplies it on
 * the AMP. Positions past K (made even) read the pixel's first element against zero weights. */
static ts_status lower_conv(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *X = ts_graph_get_tensor(g, n->in[0]);
    const ts_graph_tensor *Wt = ts_graph_get_tensor(g, n->in[1]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(g, n->out[0]);
    const ts_graph_tensor *Bt = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    const ts_graph_attrs *at = &n->attrs;
    if (X->rank != 4 || X->dims[0] != 1)
        return unsupported(L, n, "a batch other than 1");
    if (at->group != 1 || at->dilations[0] != 1 || at->dilations[1] != 1)
        return unsupported(L, n, "groups or dilations");
    if (Wt->kind == TS_TENSOR_ACTIVATION || Wt->kind == TS_TENSOR_INPUT)
        return unsupported(L, n, "weights computed at run time");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t C = (uint64_t)X->dims[1], H = (uint64_t)X->dims[2], Wd = (uint64_t)X->dims[3];
    uint64_t M = (uint64_t)Wt->dims[0], kh = (uint64_t)Wt->dims[2], kw = (uint64_t)Wt->dims[3];
    uint64_t Ho = (uint64_t)Y->dims[2], Wo = (uint64_t)Y->dims[3], P = Ho * Wo;
    uint64_t Hp = H + (uint64_t)at->pads[0] + (uint64_t)at->pads[2], Wp = Wd + (uint64_t)at->pads[1] + (uint64_t)at->pads[3];
    uint64_t K = C * kh * kw, kp = cdiv(K, 2), Kpad = 2 * kp;
    uint32_t U = L->units;
    uint64_t nq = cdiv(M, U), qpt = cdiv(nq, L->T);
    uint32_t tn = (uint32_t)cdiv(nq, qpt);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = 0;
        sc->hi[t] = C * H * Wd;
    }
    if ((rc = gather(L, n->in[0], tn, sc->lo, sc->hi, false, sc->where)) != TS_OK)
        return rc;
    uint64_t xp = alloc(L, C * Hp * Wp * 4);
    uint64_t bt = alloc(L, P * 4), off = alloc(L, Kpad * 4), colbuf = alloc(L, L->workers * Kpad * 4);
    uint64_t wbytes = qpt * kp * U * 8, bbytes = qpt * U * 4;
    uint64_t waddr = alloc(L, wbytes), baddr = Bt ? alloc(L, bbytes) : 0;
    uint64_t out = alloc(L, qpt * U * P * 4);
    uint32_t *bv = ts_calloc(P + Kpad, 4);
    float *w = ts_calloc(wbytes / 4 + bbytes / 4, 4);
    if (!bv || !w) {
        ts_free(bv);
        ts_free(w);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    }
    uint32_t *ov = bv + P;
    for (uint64_t oy = 0; oy < Ho; oy++)
        for (uint64_t ox = 0; ox < Wo; ox++)
            bv[oy * Wo + ox] = (uint32_t)(xp + (oy * (uint64_t)at->strides[0] * Wp + ox * (uint64_t)at->strides[1]) * 4);
    for (uint64_t k = 0; k < K; k++)
        ov[k] = (uint32_t)(((k / (kh * kw) * Hp + k / kw % kh) * Wp + k % kw) * 4);
    uint32_t rwc = (uint32_t)((C + L->workers - 1) / L->workers);
    uint32_t rw = (uint32_t)((P + L->workers - 1) / L->workers);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        uint64_t q0 = t * qpt, q1 = (t + 1) * qpt < nq ? (t + 1) * qpt : nq;
        memset(w, 0, wbytes + bbytes);
        float *bias = w + wbytes / 4;
        for (uint64_t q = q0; q < q1; q++)
            for (uint64_t k2 = 0; k2 < kp; k2++)
                for (uint32_t u = 0; u < U; u++)
                    for (uint32_t j = 0; j < 2; j++) {
                        uint64_t m = q * U + u, k = 2 * k2 + j;
                        if (m < M && k < K)
                            w[(((q - q0) * kp + k2) * U + u) * 2 + j] = value(Wt, n->in[1], m * K + k);
                        if (Bt && m < M && !k2 && !j)
                            bias[(q - q0) * U + u] = value(Bt, n->in[2], m);
                    }
        rc = seg(L, t, waddr, w, wbytes);
        if (rc == TS_OK && Bt)
            rc = seg(L, t, baddr, bias, bbytes);
        if (rc == TS_OK)
            rc = seg(L, t, bt, bv, P * 4);
        if (rc == TS_OK)
            rc = seg(L, t, off, ov, Kpad * 4);
        if (rc != TS_OK)
            break;
        /* the padded image, channels over the workers */
        size_t entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, (uint32_t)C, rwc);
        W(t, MULI, RM(2), RM(1), (int32_t)(H * Wd * 4));
        W(t, SETZI, RM(3), (int32_t)sc->where[t], 0);
        W(t, ADD, RM(2), RM(2), RM(3));
        W(t, MULI, RM(3), RM(1), (int32_t)(Hp * Wp * 4));
        W(t, SETZI, RM(4), (int32_t)(xp + ((uint64_t)at->pads[0] * Wp + (uint64_t)at->pads[1]) * 4), 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(5), (int32_t)rwc - 1, 0);
        W(t, SETZI, RM(8), (int32_t)Wd, 0);
        size_t ch = W(t, SETZI, RM(6), (int32_t)H - 1, 0);
        size_t row = W(t, RPT, RM(8), 2, 0);
        W(t, LD32STEP, RA(0), RM(2), 4);
        W(t, ST32STEP, RA(0), RM(3), 4);
        W(t, ADDI, RM(3), RM(3), (int32_t)((Wp - Wd) * 4));
        W(t, BRNZDEC, RM(6), (int32_t)row, 0);
        W(t, ADDI, RM(3), RM(3), (int32_t)((Hp - H) * Wp * 4));
        W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
        /* pixels over the workers: im2col row, then the AMP groups of this tile */
        mm_args m = {.rows = (uint32_t)P, .nq = (uint32_t)(q1 - q0), .kp = (uint32_t)kp,
                     .nq_real = (q1 * U < M ? q1 * U : M) - q0 * U, .units = U, .a_stride = 0, .w = waddr,
                     .bias = baddr, .out = out, .out_row = 4, .out_q = (int64_t)(U * P * 4),
                     .out_u = (int64_t)(P * 4)};
        uint32_t full = (uint32_t)(m.nq_real / U), tail = (uint32_t)(m.nq_real % U);
        entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, (uint32_t)P, rw);
        W(t, GET, RM(2), 2, 0);
        W(t, MULI, RM(2), RM(2), (int32_t)(Kpad * 4));
        W(t, SETZI, RM(3), (int32_t)colbuf, 0);
        W(t, ADD, RM(2), RM(2), RM(3));
        W(t, SHLI, RM(10), RM(1), 2);
        W(t, SETZI, RM(3), (int32_t)bt, 0);
        W(t, ADD, RM(10), RM(10), RM(3));
        W(t, SHLI, RM(3), RM(1), 2);
        W(t, SETZI, RM(4), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        W(t, SETZI, RM(11), (int32_t)kp, 0);
        W(t, SETZI, RM(13), (int32_t)Kpad, 0);
        size_t pix = W(t, LD32STEP, RM(9), RM(10), 4);
        W(t, SETZI, RM(12), (int32_t)off, 0);
        W(t, MOV, RM(14), RM(2), 0);
        W(t, RPT, RM(13), 4, 0);
        W(t, LD32STEP, RM(15), RM(12), 4);
        W(t, ADD, RM(15), RM(15), RM(9));
        W(t, LD32, RA(0), RM(15), 0);
        W(t, ST32STEP, RA(0), RM(14), 4);
        W(t, SETZI, RM(5), (int32_t)waddr, 0);
        W(t, SETZI, RM(8), (int32_t)baddr, 0);
        W(t, MOV, RM(6), RM(3), 0);
        if (full) {
            W(t, SETZI, RM(7), (int32_t)full - 1, 0);
            size_t q = L->tiles[t].wrk.n;
            emit_quad(L, t, &m, U);
            W(t, BRNZDEC, RM(7), (int32_t)q, 0);
        }
        if (tail)
            emit_quad(L, t, &m, tail);
        W(t, ADDI, RM(3), RM(3), 4);
        W(t, BRNZDEC, RM(1), (int32_t)pix, 0);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    ts_free(bv);
    ts_free(w);
    if (rc != TS_OK)
        return rc;
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){tn, qpt * U * P, out, 4};
    sync_all(L);
    return TS_OK;
}

/* Elementwise ops on x's chunks: Relu; Add, Sub, Mul of two tensors of the same shape. */
static ts_status lower_eltwise(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    int x = n->in[0];
    ts_status rc = need_placed(L, n, x);
    if (rc != TS_OK)
        return rc;
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, x);
    uint64_t total = (uint64_t)ts_graph_tensor_elems(X);
    const lw_place P = L->pl[x];
    bool two = n->nin == 2;
    if (two) {
        const ts_graph_tensor *Y2 = ts_graph_get_tensor(L->g, n->in[1]);
        if (ts_graph_tensor_elems(Y2) != (int64_t)total)
            return unsupported(L, n, "broadcasting");
        if ((rc = need_placed(L, n, n->in[1])) != TS_OK)
            return rc;
    }
    uint32_t tn = P.ntiles;
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * P.chunk < total ? t * P.chunk : total;
        sc->hi[t] = (t + 1) * P.chunk < total ? (t + 1) * P.chunk : total;
    }
    if (two && (rc = gather(L, n->in[1], tn, sc->lo, sc->hi, false, sc->where)) != TS_OK)
        return rc;
    uint64_t out = alloc(L, P.chunk * 4);
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t cnt = sc->hi[t] - sc->lo[t];
        if (!cnt)
            continue;
        /* every worker a block of ceil(cnt / workers) elements (the last blocks overlap) */
        uint32_t rw = (uint32_t)((cnt + L->workers - 1) / L->workers);
        size_t entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, (uint32_t)cnt, rw);
        W(t, SHLI, RM(1), RM(1), 2);
        W(t, SETZI, RM(2), (int32_t)P.addr, 0);
        W(t, ADD, RM(2), RM(2), RM(1));
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(1));
        W(t, SETZI, RM(4), (int32_t)rw, 0);
        if (two) {
            W(t, SETZI, RM(5), (int32_t)sc->where[t], 0);
            W(t, ADD, RM(5), RM(5), RM(1));
            W(t, RPT, RM(4), 4, 0);
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, LD32STEP, RA(1), RM(5), 4);
            if (n->op == TS_OP_ADD)
                W(t, F32ADD, RA(0), RA(0), RA(1));
            else if (n->op == TS_OP_SUB)
                W(t, F32SUB, RA(0), RA(0), RA(1));
            else
                W(t, F32MUL, RA(0), RA(0), RA(1));
        } else {
            W(t, SETZI, RA(1), 0, 0);
            W(t, RPT, RM(4), 3, 0);
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, F32MAX, RA(0), RA(0), RA(1));
        }
        W(t, ST32STEP, RA(0), RM(3), 4);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){tn, P.chunk, out, 4};
    sync_all(L);
    return TS_OK;
}

/* exp(x) for x in $a1 (x <= 0), result in $a3; uses $a5..$a10, $m9. 2^x·log2e = 2^n · 2^f with n =
 * trunc(y), f in (-1, 0]; 2^f = e^t, t = f·ln 2, by a degree-8 Taylor polynomial (|error| < 1e-7). */
static void emit_exp(lw *L, uint32_t t)
{
    W(t, LDCONST, RA(5), fbits(-87.0f), 0);
    W(t, F32MAX, RA(1), RA(1), RA(5));
    W(t, LDCONST, RA(5), fbits(1.44269504f), 0);
    W(t, F32MUL, RA(5), RA(1), RA(5));      /* y */
    W(t, F32TOI32, RA(6), RA(5), 0);        /* n */
    W(t, F32FROMI32, RA(7), RA(6), 0);
    W(t, F32SUB, RA(5), RA(5), RA(7));      /* f */
    W(t, LDCONST, RA(7), fbits(0.693147181f), 0);
    W(t, F32MUL, RA(5), RA(5), RA(7));      /* t */
    static const double inv_fact[9] = {1, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                       1.0 / 40320};
    W(t, LDCONST, RA(8), fbits((float)inv_fact[8]), 0);
    int acc = 8;
    for (int d = 7; d >= 0; d--) {
        int nx = acc == 8 ? 9 : 8;
        W(t, LDCONST, RA(nx), fbits((float)inv_fact[d]), 0);
        W(t, F32MAC, RA(nx), RA(acc), RA(5)); /* c_d + p*t */
        acc = nx;
    }
    W(t, MOV, RM(9), RA(6), 0);
    W(t, ADDI, RM(9), RM(9), 127);
    W(t, SHLI, RM(9), RM(9), 23);
    W(t, MOV, RA(10), RM(9), 0);             /* 2^n */
    W(t, F32MUL, RA(3), RA(acc), RA(10));
}

static size_t exp_len(void) { return 9 + 1 + 16 + 5; }

/* Softmax over the last axis: rows partitioned over tiles; per row max, exp and sum, 1/sum by
 * Newton's iteration, scale. */
static ts_status lower_softmax(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + X->rank : n->attrs.axis;
    if (axis != X->rank - 1)
        return unsupported(L, n, "an axis other than the last");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t Lw = (uint64_t)X->dims[X->rank - 1], R = (uint64_t)ts_graph_tensor_elems(X) / Lw;
    uint64_t rp = cdiv(R, L->T);
    uint32_t tn = (uint32_t)cdiv(R, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * Lw;
        sc->hi[t] = ((t + 1) * rp < R ? (t + 1) * rp : R) * Lw;
    }
    if ((rc = gather(L, n->in[0], tn, sc->lo, sc->hi, false, sc->where)) != TS_OK)
        return rc;
    uint64_t out = alloc(L, rp * Lw * 4);
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t rows = (sc->hi[t] - sc->lo[t]) / Lw;
        uint32_t rw = (uint32_t)((rows + L->workers - 1) / L->workers);
        size_t entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, (uint32_t)rows, rw);
        W(t, MULI, RM(1), RM(1), (int32_t)(Lw * 4));
        W(t, SETZI, RM(2), (int32_t)sc->where[t], 0);
        W(t, ADD, RM(2), RM(2), RM(1));
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(1));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        W(t, SETZI, RM(10), (int32_t)Lw - 1, 0);
        W(t, SETZI, RM(11), (int32_t)Lw, 0);
        size_t row = W(t, MOV, RM(4), RM(2), 0);
        W(t, LD32STEP, RA(0), RM(4), 4);
        W(t, RPT, RM(10), 2, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32MAX, RA(0), RA(0), RA(1));
        W(t, MOV, RM(4), RM(2), 0);
        W(t, MOV, RM(5), RM(3), 0);
        W(t, SETZI, RA(2), 0, 0);
        W(t, RPT, RM(11), (int32_t)(exp_len() + 4), 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32SUB, RA(1), RA(1), RA(0));
        emit_exp(L, t);
        W(t, F32ADD, RA(2), RA(2), RA(3));
        W(t, ST32STEP, RA(3), RM(5), 4);
        /* r = 1/sum: bit-trick seed, four Newton steps r = r (2 - s r) */
        W(t, MOV, RM(8), RA(2), 0);
        W(t, SETZI, RM(9), 0x7EF311C3, 0);
        W(t, SUB, RM(9), RM(9), RM(8));
        W(t, MOV, RA(4), RM(9), 0);
        W(t, LDCONST, RA(9), fbits(2.0f), 0);
        for (int i = 0; i < 4; i++) {
            W(t, F32MUL, RA(8), RA(2), RA(4));
            W(t, F32SUB, RA(8), RA(9), RA(8));
            W(t, F32MUL, RA(4), RA(4), RA(8));
        }
        W(t, MOV, RM(5), RM(3), 0);
        W(t, RPT, RM(11), 3, 0);
        W(t, LD32, RA(1), RM(5), 0);
        W(t, F32MUL, RA(1), RA(1), RA(4));
        W(t, ST32STEP, RA(1), RM(5), 4);
        W(t, ADDI, RM(2), RM(2), (int32_t)(Lw * 4));
        W(t, ADDI, RM(3), RM(3), (int32_t)(Lw * 4));
        W(t, BRNZDEC, RM(1), (int32_t)row, 0);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){tn, rp * Lw, out, 4};
    sync_all(L);
    return TS_OK;
}

/* MaxPool and GlobalAveragePool over (n, c) planes, which are contiguous in NCHW: planes
 * partitioned over tiles and, within a tile, over its workers. MaxPool reads each window through
 * a table of byte offsets within the plane; a padded position repeats the window's first valid
 * element, which leaves the maximum unchanged. */
static ts_status lower_pool(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(L->g, n->out[0]);
    const ts_graph_attrs *at = &n->attrs;
    if (X->rank != 4)
        return unsupported(L, n, "an input that is not NCHW");
    bool gap = n->op == TS_OP_GLOBALAVGPOOL;
    if (!gap && (at->dilations[0] != 1 || at->dilations[1] != 1))
        return unsupported(L, n, "dilations");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t H = (uint64_t)X->dims[2], Wd = (uint64_t)X->dims[3], HW = H * Wd;
    uint64_t Ho = (uint64_t)Y->dims[2], Wo = (uint64_t)Y->dims[3], P = Ho * Wo;
    uint64_t R = (uint64_t)(X->dims[0] * X->dims[1]);
    uint64_t kh = gap ? H : (uint64_t)at->kernel[0], kw = gap ? Wd : (uint64_t)at->kernel[1], kk = kh * kw;
    uint64_t rp = cdiv(R, L->T);
    uint32_t tn = (uint32_t)cdiv(R, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * HW;
        sc->hi[t] = ((t + 1) * rp < R ? (t + 1) * rp : R) * HW;
    }
    if ((rc = gather(L, n->in[0], tn, sc->lo, sc->hi, false, sc->where)) != TS_OK)
        return rc;
    uint64_t tab = 0;
    uint32_t *tv = NULL;
    if (!gap) {
        tab = alloc(L, P * kk * 4);
        tv = ts_calloc(P * kk, 4);
        if (!tv)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
        for (uint64_t oy = 0; oy < Ho; oy++)
            for (uint64_t ox = 0; ox < Wo; ox++) {
                int64_t first = -1;
                for (uint64_t k = 0; k < kk; k++) {
                    int64_t iy = (int64_t)(oy * (uint64_t)at->strides[0] + k / kw) - at->pads[0];
                    int64_t ix = (int64_t)(ox * (uint64_t)at->strides[1] + k % kw) - at->pads[1];
                    if (iy >= 0 && ix >= 0 && iy < (int64_t)H && ix < (int64_t)Wd) {
                        first = (iy * (int64_t)Wd + ix) * 4;
                        break;
                    }
                }
                if (first < 0) {
                    ts_free(tv);
                    return unsupported(L, n, "a window that covers only padding");
                }
                for (uint64_t k = 0; k < kk; k++) {
                    int64_t iy = (int64_t)(oy * (uint64_t)at->strides[0] + k / kw) - at->pads[0];
                    int64_t ix = (int64_t)(ox * (uint64_t)at->strides[1] + k % kw) - at->pads[1];
                    bool in = iy >= 0 && ix >= 0 && iy < (int64_t)H && ix < (int64_t)Wd;
                    tv[(oy * Wo + ox) * kk + k] = (uint32_t)(in ? (iy * (int64_t)Wd + ix) * 4 : first);
                }
            }
    }
    uint64_t out = alloc(L, rp * P * 4);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        if (tv)
            rc = seg(L, t, tab, tv, P * kk * 4);
        uint32_t planes = (uint32_t)((sc->hi[t] - sc->lo[t]) / HW);
        uint32_t rw = (planes + L->workers - 1) / L->workers;
        size_t entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, planes, rw);
        W(t, MULI, RM(2), RM(1), (int32_t)(HW * 4));
        W(t, SETZI, RM(3), (int32_t)sc->where[t], 0);
        W(t, ADD, RM(2), RM(2), RM(3));
        W(t, MULI, RM(4), RM(1), (int32_t)(P * 4));
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(4), RM(4), RM(3));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        if (gap) {
            W(t, SETZI, RM(9), (int32_t)HW, 0);
            W(t, LDCONST, RA(2), fbits((float)(1.0 / (double)HW)), 0);
            size_t plane = W(t, SETZI, RA(0), 0, 0);
            W(t, RPT, RM(9), 2, 0);
            W(t, LD32STEP, RA(1), RM(2), 4);
            W(t, F32ADD, RA(0), RA(0), RA(1));
            W(t, F32MUL, RA(0), RA(0), RA(2));
            W(t, ST32STEP, RA(0), RM(4), 4);
            W(t, BRNZDEC, RM(1), (int32_t)plane, 0);
        } else {
            W(t, SETZI, RM(8), (int32_t)kk - 1, 0);
            size_t plane = W(t, SETZI, RM(5), (int32_t)tab, 0);
            W(t, SETZI, RM(6), (int32_t)P - 1, 0);
            size_t pix = W(t, LD32STEP, RM(7), RM(5), 4);
            W(t, ADD, RM(7), RM(7), RM(2));
            W(t, LD32, RA(0), RM(7), 0);
            W(t, RPT, RM(8), 4, 0);
            W(t, LD32STEP, RM(7), RM(5), 4);
            W(t, ADD, RM(7), RM(7), RM(2));
            W(t, LD32, RA(1), RM(7), 0);
            W(t, F32MAX, RA(0), RA(0), RA(1));
            W(t, ST32STEP, RA(0), RM(4), 4);
            W(t, BRNZDEC, RM(6), (int32_t)pix, 0);
            W(t, ADDI, RM(2), RM(2), (int32_t)(HW * 4));
            W(t, BRNZDEC, RM(1), (int32_t)plane, 0);
        }
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    ts_free(tv);
    if (rc != TS_OK)
        return rc;
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){tn, rp * P, out, 4};
    sync_all(L);
    return TS_OK;
}

static ts_status lower_node(lw *L, int id, lw_scr *sc)
{
    const ts_graph_node *n = ts_graph_get_node(L->g, id);
    ts_status rc = check_f32(L, n);
    if (rc != TS_OK)
        return rc;
    switch (n->op) {
    case TS_OP_MATMUL:
    case TS_OP_GEMM: return lower_matmul(L, n, sc);
    case TS_OP_CONV: return lower_conv(L, n, sc);
    case TS_OP_RELU:
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL: return lower_eltwise(L, n, sc);
    case TS_OP_SOFTMAX: return lower_softmax(L, n, sc);
    case TS_OP_MAXPOOL:
    case TS_OP_GLOBALAVGPOOL: return lower_pool(L, n, sc);
    case TS_OP_RESHAPE:
    case TS_OP_FLATTEN:
        if ((rc = need_placed(L, n, n->in[0])) != TS_OK)
            return rc;
        L->pl[n->out[0]] = L->pl[n->in[0]]; /* same elements in the same order */
        return TS_OK;
    default: return unsupported(L, n, "this operator");
    }
}

/* ---- the program ---- */

static ts_status finish(lw *L, ts_program **out)
{
    for (uint32_t t = 0; t < L->used; t++)
        S(t, HALT, 0, 0, 0);
    if (L->oom)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
    for (uint32_t t = 0; t < L->used; t++) {
        ts_stream *s = ts_program_stream(L->prog, 0, t);
        if (!s)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
        lw_tile *T = &L->tiles[t];
        int32_t off = (int32_t)T->sup.n;
        for (size_t i = 0; i < T->sup.n + T->wrk.n; i++) {
            bool w = i >= T->sup.n;
            ts_insn in = w ? T->wrk.v[i - T->sup.n] : T->sup.v[i];
            if (in.op == LW_RUN || in.op == LW_RUNALL)
                in.a[0] += off;
            else if (w && (in.op == LW_BR))
                in.a[0] += off;
            else if (w && (in.op == LW_BRZ || in.op == LW_BRNZ || in.op == LW_BRNEG || in.op == LW_BRNZDEC))
                in.a[1] += off;
            ts_insn *d = ts_stream_emit(s, in.op);
            if (!d)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
            memcpy(d->a, in.a, sizeof d->a);
        }
    }
    for (size_t i = 0; i < L->nmarks; i++) {
        const lw_mark *k = &L->marks[i];
        if (k->tile >= L->used)
            continue;
        ts_stream *s = ts_program_stream(L->prog, 0, k->tile);
        ts_status rc = ts_program_add_mark(L->prog, (uint32_t)(s - L->prog->streams), k->pc, k->id, L->err);
        if (rc != TS_OK)
            return rc;
    }
    ts_program_canonicalize(L->prog);
    *out = L->prog;
    L->prog = NULL;
    return TS_OK;
}

void ts_lower_report_free(ts_lower_report *rep)
{
    if (!rep)
        return;
    ts_free(rep->places);
    ts_free(rep->layers);
    memset(rep, 0, sizeof *rep);
}

ts_status ts_lower_ipu(const ts_graph *g, const void *ipu_params, ts_program **out, ts_lower_report *rep,
                       ts_err *err)
{
    *out = NULL;
    if (rep)
        memset(rep, 0, sizeof *rep);
    const ts_lower_ipu_params *p = ipu_params;
    if (!p || !p->tiles || !p->sram_bytes)
        return ts_err_set(err, TS_EINPUT, "IPU lowering: no tiles or no tile memory in the parameters");
    uint32_t U = p->amp_macs_f32 / 2;
    if (U != 2 && U != 4 && U != 8)
        return ts_err_set(err, TS_EINPUT, "IPU lowering: %u AMP f32 MACs per cycle; the lowering handles 4, 8 or 16",
                          p->amp_macs_f32);
    lw L0 = {0}, *L = &L0;
    L->g = g;
    L->p = p;
    L->err = err;
    L->units = U;
    L->units16 = p->amp_macs_f16 / 4;
    L->workers = p->workers ? p->workers : 6;
    L->T = p->max_tiles && p->max_tiles < p->tiles ? p->max_tiles : p->tiles;
    size_t nt = ts_graph_tensor_count(g);
    L->tiles = ts_calloc(L->T, sizeof *L->tiles);
    L->pl = ts_calloc(nt ? nt : 1, sizeof *L->pl);
    L->prog = ts_program_create("ipu");
    lw_scr sc = {0};
    ts_status rc = TS_OK;
    if (!L->tiles || !L->pl || !L->prog) {
        rc = ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
        goto done;
    }
    if ((rc = scratch(L, &sc)) != TS_OK)
        goto done;
    L->top = (p->interleaved_base + 15) & ~(uint64_t)15;
    for (uint32_t t = 0; t < L->T; t++)
        mark(L, t);
    /* graph inputs: as initial data, in equal chunks of whole rows over the tiles, at least 1024
     * elements (or the whole input) per tile */
    for (size_t i = 0; i < nt; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i);
        size_t nc = 0;
        ts_graph_consumers(g, (int)i, &nc);
        if (t->kind != TS_TENSOR_INPUT || (!nc && !t->is_output))
            continue;
        uint32_t es = t->dtype == TS_DT_F16 ? 2 : 4;
        if (t->dtype != TS_DT_F32 && t->dtype != TS_DT_F16) {
            rc = ts_err_set(err, TS_EINPUT, "input '%s' is %s; the IPU lowering handles f32 and f16 only", t->name,
                            ts_dtype_name(t->dtype));
            goto done;
        }
        uint64_t ne = (uint64_t)ts_graph_tensor_elems(t);
        float *v = ts_calloc(ne ? ne : 1, 4);
        if (!v) {
            rc = ts_err_set(err, TS_ENOMEM, "out of memory placing '%s'", t->name);
            goto done;
        }
        for (uint64_t k = 0; k < ne; k++) {
            float f = value(t, (int)i, k);
            if (es == 2) {
                uint16_t h = ts_f32_to_f16(f);
                memcpy((char *)v + 2 * k, &h, 2);
            } else
                v[k] = f;
        }
        /* whole rows of the last axis, as the row-partitioned operators (MatMul, Softmax) want */
        uint64_t ld = t->rank > 0 && t->dims[t->rank - 1] > 0 ? (uint64_t)t->dims[t->rank - 1] : 1;
        uint64_t chunk = ne ? (ne / ld + L->T - 1) / L->T * ld : 1;
        if (chunk < 1024) /* at least 1024 elements a tile (whole rows): fewer pieces to gather */
            chunk = ne < 1024 ? ne : (1024 + ld - 1) / ld * ld;
        if (!chunk)
            chunk = 1;
        if (es == 2 && chunk % 2) {
            rc = ts_err_set(err, TS_EINPUT, "f16 input '%s' needs an even last dimension (it is placed in 32-bit words)",
                            t->name);
            ts_free(v);
            goto done;
        }
        uint32_t tn = (uint32_t)((ne + chunk - 1) / chunk);
        uint64_t a = alloc(L, chunk * es);
        for (uint32_t k = 0; k < tn && rc == TS_OK; k++)
            rc = seg(L, k, a, (char *)v + k * chunk * es, ((k + 1) * chunk < ne ? chunk : ne - k * chunk) * es);
        ts_free(v);
        if (rc != TS_OK)
            goto done;
        L->pl[i] = (lw_place){tn ? tn : 1, chunk, a, es};
        use_tiles(L, tn ? tn : 1);
        if (L->top > p->sram_bytes) {
            rc = ts_err_set(err, TS_EINPUT, "input '%s' needs %llu KiB per tile, the tile has %llu KiB", t->name,
                            (unsigned long long)((L->top + 1023) / 1024), (unsigned long long)(p->sram_bytes / 1024));
            goto done;
        }
    }
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        uint32_t first = L->step;
        if ((rc = lower_node(L, (int)i, &sc)) != TS_OK)
            goto done;
        if ((rc = check_fit(L, ts_graph_get_node(g, (int)i))) != TS_OK)
            goto done;
        if (ts_grow((void **)&L->layers, &L->caplayers, L->nlayers + 1, sizeof *L->layers)) {
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto done;
        }
        uint32_t tiles = 0;
        const ts_graph_node *n = ts_graph_get_node(g, (int)i);
        if (n->nout)
            tiles = L->pl[n->out[0]].ntiles;
        L->layers[L->nlayers++] = (ts_lower_layer){(int)i, tiles, first, L->step - first, L->top};
    }
    if ((rc = finish(L, out)) != TS_OK)
        goto done;
    char desc[256];
    snprintf(desc, sizeof desc, "%s lowered to the IPU (load-compute-store, %u tiles, %u supersteps)",
             ts_graph_name(g), L->used, L->step);
    (*out)->workload = ts_strdup(desc);
    if (rep) {
        rep->tiles_used = L->used;
        rep->supersteps = L->step;
        rep->mem_bytes = L->top;
        rep->layers = L->layers;
        rep->nlayers = L->nlayers;
        L->layers = NULL;
        for (size_t i = 0; i < nt; i++)
            if (L->pl[i].ntiles)
                rep->nplaces++;
        rep->places = ts_calloc(rep->nplaces ? rep->nplaces : 1, sizeof *rep->places);
        if (!rep->places) {
            ts_program_destroy(*out);
            *out = NULL;
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto done;
        }
        size_t k = 0;
        for (size_t i = 0; i < nt; i++)
            if (L->pl[i].ntiles)
                rep->places[k++] = (ts_lower_place){(int)i, L->pl[i].ntiles, L->pl[i].chunk, L->pl[i].addr};
    }
done:
    scratch_free(&sc);
    for (uint32_t t = 0; L->tiles && t < L->T; t++) {
        ts_free(L->tiles[t].sup.v);
        ts_free(L->tiles[t].wrk.v);
    }
    ts_free(L->tiles);
    ts_free(L->pl);
    ts_free(L->marks);
    ts_free(L->layers);
    ts_program_destroy(L->prog);
    if (rc != TS_OK && rep)
        ts_lower_report_free(rep);
    return rc;
}

int ts_lower_ipu_locate(const ts_lower_report *rep, const ts_graph *g, int tensor, uint64_t elem, uint32_t *tile,
                        uint64_t *addr)
{
    for (size_t i = 0; i < rep->nplaces; i++) {
        const ts_lower_place *p = &rep->places[i];
        if (p->tensor != tensor)
            continue;
        const ts_graph_tensor *t = ts_graph_get_tensor(g, tensor);
        if (!t || elem >= (uint64_t)ts_graph_tensor_elems(t))
            return -1;
        *tile = (uint32_t)(elem / p->chunk);
        *addr = p->addr + (elem % p->chunk) * ts_dtype_size(t->dtype);
        return 0;
    }
    return -1;
}

/* ---- parameters from a config ---- */

static int cfg_u64(const ts_config *cfg, const char *key, uint64_t *v)
{
    const ts_schema *s = ts_config_schema(cfg);
    const char *base = ts_config_data(cfg);
    for (size_t i = 0; s && i < s->nkeys; i++) {
        const ts_cfg_key *k = &s->keys[i];
        if (strcmp(k->path, key))
            continue;
        if (k->type == TS_CFG_UINT)
            memcpy(v, base + k->offset, sizeof *v);
        else if (k->type == TS_CFG_INT) {
            int64_t x;
            memcpy(&x, base + k->offset, sizeof x);
            *v = (uint64_t)x;
        } else if (k->type == TS_CFG_FLOAT) {
            double x;
            memcpy(&x, base + k->offset, sizeof x);
            *v = (uint64_t)x;
        } else
            return -1;
        return 0;
    }
    return -1;
}

ts_status ts_lower_ipu_params_from_config(const ts_config *cfg, ts_lower_ipu_params *out, ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(ts_config_arch(cfg), "ipu"))
        return ts_err_set(err, TS_EINPUT, "config '%s' is for arch '%s', not 'ipu'", ts_config_name(cfg),
                          ts_config_arch(cfg));
    uint64_t tiles = 0, macs = 0, macs16 = 0, workers = 0;
    if (cfg_u64(cfg, "tiles", &tiles) || cfg_u64(cfg, "tile.sram", &out->sram_bytes) ||
        cfg_u64(cfg, "tile.element_bytes", &out->element_bytes) ||
        cfg_u64(cfg, "tile.interleaved_base", &out->interleaved_base) ||
        cfg_u64(cfg, "amp.macs_per_cycle_f32", &macs) || cfg_u64(cfg, "amp.macs_per_cycle_f16", &macs16) || cfg_u64(cfg, "tile.worker_contexts", &workers))
        return ts_err_set(err, TS_EINPUT, "config '%s' lacks a key the IPU lowering reads", ts_config_name(cfg));
    out->tiles = (uint32_t)tiles;
    out->amp_macs_f32 = (uint32_t)macs;
    out->amp_macs_f16 = (uint32_t)macs16;
    out->workers = (uint32_t)workers;
    return TS_OK;
}
