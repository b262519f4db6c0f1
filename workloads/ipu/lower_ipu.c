/* workloads/ipu/lower_ipu.c — graph to IPU instruction streams: the driver.
 *
 * See lower_ipu.h for the contract, docs/lowering-ipu.md for the plan, the kernels and their costs,
 * and lower_ipu_int.h for the files of the lowering. In short, for every operator in topological
 * order (planner (a), load-compute-store):
 *   1. partition its output over tiles (rows for MatMul/Gemm/Softmax/LayerNorm, each batch's rows
 *      for a MatMul of two activations, output rows for Transpose, and columns for a MatMul/Gemm
 *      with large weights; output-channel groups, row blocks and input-channel parts for Conv and
 *      one-row Gemm; planes for the pools; the input's layout for elementwise ops);
 *   2. gather into each tile the input ranges it needs, unless they are already there: exchange
 *      rounds, one chip-wide superstep each, in which every tile receives from at most one sender
 *      (so no two senders ever meet at a receiver) and a sender serves its receivers one after
 *      another; ranges a tile holds itself are copied by its supervisor;
 *   3. compute on the tile's workers, then sync; the output stays where it was computed (partial
 *      sums of a Conv split over input channels are added in a tree first).
 * Tensors are f32 or f16 (a graph f16 throughout). f16 is held as halves around the f16 MatMul/Gemm
 * routine (f16 x f16 -> f32 on the AMP, the output rounded to f16) and in f32 words elsewhere: a
 * Conv or one-row Gemm rounds its inputs and weights to f16 for f16v4amp and accumulates in f32,
 * and the operators between them run as for f32. Other dtypes are refused. Memory has the same
 * addresses on every tile: tensors and buffers in a first-fit dynamic region freed after their last
 * use; each operator's weights, loaded before the run, above it until the operator has run; shared
 * tables at the top. The lowering runs twice: the first pass sizes each operator's weights, the
 * second places them; an operator that does not fit makes it plan again with less memory.
 *
 * This file: the checks every operator shares, the dispatch of an operator to its room, one pass
 * over the graph (its state, liveness, the graph inputs, the operators, the report), and the
 * passes again until the plan fits.
 */
#include "workloads/ipu/lower_ipu.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"
#include "workloads/lower/unsupported.h"

/* ---- the checks every operator shares ---- */

ts_status lwi_unsupported(lw *L, const ts_graph_node *n, const char *why)
{
    return ts_lower_fail(L->err, n, "%s (the IPU lowering does not support this yet)", why);
}

/* f16 tensors are held in one of two ways: as halves (es 2) around the f16 MatMul/Gemm routine
 * (inputs read and outputs written as halves), or as f32 words (es 4) everywhere else: a Conv
 * (and a one-row Gemm) rounds its inputs and weights to f16 for f16v4amp and accumulates in f32,
 * and the operators between them (Relu, Add, pools, ...) run on the f32 words as for f32. */
bool lwi_held_half(const lw *L, int x) { return L->pl[x].ntiles && L->pl[x].es == 2; }

/* The operators the IPU lowering refuses whatever their shapes (ts_lower_ops; the dispatch below
 * asks it too): kinds without a room, dtypes other than f32 or f16 throughout. */
static bool refuse(const ts_graph *g, const ts_graph_node *n, char *why, size_t cap)
{
    switch (n->op) {
    case TS_OP_MATMUL:
    case TS_OP_GEMM:
    case TS_OP_CONV:
    case TS_OP_RELU:
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
    case TS_OP_GELU:
    case TS_OP_SOFTMAX:
    case TS_OP_LAYERNORM:
    case TS_OP_RMSNORM:
    case TS_OP_TRANSPOSE:
    case TS_OP_MAXPOOL:
    case TS_OP_AVGPOOL:
    case TS_OP_GLOBALAVGPOOL:
    case TS_OP_RESHAPE:
    case TS_OP_FLATTEN:
    case TS_OP_CLIP:
    case TS_OP_SIGMOID:
    case TS_OP_TANH:
    case TS_OP_CONCAT:
    case TS_OP_SLICE:
    case TS_OP_EXPAND: break;
    case TS_OP_GATHER: {
        const ts_graph_tensor *I = n->nin > 1 ? ts_graph_get_tensor(g, n->in[1]) : NULL;
        if (!I || !I->data || (I->dtype != TS_DT_I64 && I->dtype != TS_DT_I32)) {
            snprintf(why, cap, "with indices computed at run time (an embedding lookup)");
            return true;
        }
        break;
    }
    default:
        if (!lwi_unary_op(n->op)) /* HardSwish */
            return true;
        break;
    }
    ts_dtype dt0 = n->nin ? ts_graph_get_tensor(g, n->in[0])->dtype : TS_DT_F32;
    for (size_t i = 0; i < (n->op == TS_OP_GATHER ? 1 : n->nin); i++) { /* Gather: the data, not its indices */
        ts_dtype dt = ts_graph_get_tensor(g, n->in[i])->dtype;
        if (dt != TS_DT_F32 && dt != TS_DT_F16) {
            snprintf(why, cap, "on %s", ts_dtype_name(dt));
            return true;
        }
        if (dt != dt0) {
            snprintf(why, cap, "mixing %s and %s", ts_dtype_name(dt0), ts_dtype_name(dt));
            return true;
        }
    }
    return false;
}

static const ts_lower_ops ipu_ops = {.family = "IPU", .refuse = refuse, .takes = NULL};

/* An f16 input must be held as the operator reads it: halves for MatMul/Gemm, f32 words elsewhere
 * (the dtypes themselves are checked by refuse). */
static ts_status check_f16_held(lw *L, const ts_graph_node *n)
{
    bool mm = n->op == TS_OP_MATMUL || n->op == TS_OP_GEMM;
    bool view = n->op == TS_OP_RESHAPE || n->op == TS_OP_FLATTEN;
    for (size_t i = 0; i < n->nin; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(L->g, n->in[i]);
        bool weight = t->kind != TS_TENSOR_ACTIVATION && t->kind != TS_TENSOR_INPUT;
        if (t->dtype != TS_DT_F16 || weight || !lwi_held_half(L, n->in[i]) || mm || view)
            continue;
        char why[160];
        snprintf(why, sizeof why, "input '%s' is f16 held as halves (the output of an f16 MatMul/Gemm); this "
                 "operator reads f16 held in f32 words", t->name);
        return lwi_unsupported(L, n, why);
    }
    return TS_OK;
}

ts_status lwi_need_placed(lw *L, const ts_graph_node *n, int x)
{
    if (L->pl[x].ntiles)
        return TS_OK;
    char why[160];
    snprintf(why, sizeof why, "input '%s' is a %s; only activations and graph inputs are lowered as data",
             ts_graph_get_tensor(L->g, x)->name, ts_tensor_kind_name(ts_graph_get_tensor(L->g, x)->kind));
    return lwi_unsupported(L, n, why);
}

/* ---- one operator ---- */

/* Whether node id has a plan of (b)'s space (compute-shift or split), which (b)'s code lowers. */
static bool lw_shift_plan(const lw *L, int id) { return L->plans && L->plans[id].tiles && !L->plans[id].lcs; }

static ts_status lower_node(lw *L, int id, lw_scr *sc)
{
    const ts_graph_node *n = ts_graph_get_node(L->g, id);
    ts_status rc = ts_lower_refused(L->err, L->g, n, &ipu_ops);
    if (rc == TS_OK)
        rc = check_f16_held(L, n);
    if (rc != TS_OK)
        return rc;
    switch (n->op) {
    case TS_OP_MATMUL:
    case TS_OP_GEMM:
        if (n->op == TS_OP_MATMUL && n->nin == 2) {
            ts_tensor_kind bk = ts_graph_get_tensor(L->g, n->in[1])->kind;
            if (bk == TS_TENSOR_ACTIVATION || bk == TS_TENSOR_INPUT)
                return lwi_lower_bmm(L, n, sc);
        }
        if (n->op == TS_OP_MATMUL && L->fbias && L->fbias[id] >= 0) { /* with the bias the Add after it adds */
            int in3[3] = {n->in[0], n->in[1], L->fbias[id]};
            ts_graph_node nb = *n;
            nb.in = in3;
            nb.nin = 3;
            return lw_shift_plan(L, id) ? lwi_t10_matmul(L, &nb, sc, &L->plans[id]) : lwi_lower_matmul(L, &nb, sc);
        }
        if (lw_shift_plan(L, id)) /* planner (b) chose a compute-shift plan */
            return lwi_t10_matmul(L, n, sc, &L->plans[id]);
        return lwi_lower_matmul(L, n, sc);
    case TS_OP_CONV:
        if (lw_shift_plan(L, id)) /* planner (b): a 1x1 Conv as a compute-shift product */
            return lwi_t10_matmul(L, n, sc, &L->plans[id]);
        return lwi_lower_conv(L, n, sc);
    case TS_OP_RELU:
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
    case TS_OP_GELU:
    case TS_OP_CLIP:
    case TS_OP_SIGMOID:
    case TS_OP_TANH: return lwi_lower_eltwise(L, n, sc);
    case TS_OP_CONCAT:
    case TS_OP_SLICE:
    case TS_OP_EXPAND:
    case TS_OP_GATHER: return lwi_lower_move(L, n, sc);
    case TS_OP_SOFTMAX: return lwi_lower_softmax(L, n, sc);
    case TS_OP_LAYERNORM:
    case TS_OP_RMSNORM: return lwi_lower_layernorm(L, n, sc);
    case TS_OP_TRANSPOSE: return lwi_lower_transpose(L, n, sc);
    case TS_OP_MAXPOOL:
    case TS_OP_AVGPOOL:
    case TS_OP_GLOBALAVGPOOL: return lwi_lower_pool(L, n, sc);
    case TS_OP_RESHAPE:
    case TS_OP_FLATTEN:
        if ((rc = lwi_need_placed(L, n, n->in[0])) != TS_OK)
            return rc;
        L->pl[n->out[0]] = L->pl[n->in[0]]; /* same elements in the same order */
        return TS_OK;
    default: /* refused above, but HardSwish */
        if (lwi_unary_op(n->op))
            return lwi_lower_eltwise(L, n, sc);
        return ts_err_set(L->err, TS_EINTERNAL, "%s '%s': no room for this operator", ts_graph_op_name(n->op), n->name);
    }
}

/* ---- one pass ---- */

/* A pass: its state, what it was given, what it keeps between operators. */
typedef struct lw_pass {
    lw L;
    lw_scr sc;
    uint64_t in_hw;    /* the graph inputs' highest dynamic byte, counted by the first operator */
    uint64_t maxneed;  /* the most tile memory an operator needed */
} lw_pass;

static ts_status scratch(lw *L, lw_scr *s)
{
    s->lo = ts_calloc(L->T, sizeof *s->lo);
    s->hi = ts_calloc(L->T, sizeof *s->hi);
    s->where = ts_calloc(L->T, sizeof *s->where);
    s->nr = ts_calloc(L->T, sizeof *s->nr);
    if (!s->lo || !s->hi || !s->where || !s->nr)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

static void scratch_free(lw_scr *s)
{
    ts_free(s->lo);
    ts_free(s->hi);
    ts_free(s->where);
    ts_free(s->nr);
}

/* The pass's state: the chip's terms, the weights of the first pass, the tiles' code. */
static ts_status pass_init(lw_pass *ps, const ts_graph *g, const ts_lower_ipu_params *p, const ts_t10_plan *plans,
                           bool measure, uint32_t mmshare, lw_wt *w, uint64_t perm, ts_err *err)
{
    lw *L = &ps->L;
    L->measure = measure;
    L->mmshare = mmshare;
    L->coalesce = mmshare > 4;
    L->plans = plans;
    L->w = w;
    L->perm = measure ? 0 : perm;
    L->code_lim = p->target.sram_bytes / LW_INSN_BYTES;
    L->ptop = p->target.sram_bytes & ~(uint64_t)15;
    L->g = g;
    L->p = p;
    L->err = err;
    L->units = p->target.amp_units_f32;
    /* an AMP of more than 8 f16 units (MK2's 16) is used as 8: the routines hold a group's sums in
     * $a0..$a7 and its bias in $a8..$a15; the other units' sums are never read */
    L->units16 = p->target.amp_units_f16 > 8 && p->target.amp_units_f16 % 8 == 0 ? 8 : p->target.amp_units_f16;
    L->workers = p->target.workers ? p->target.workers : 6;
    L->T = p->max_tiles && p->max_tiles < p->target.tiles ? p->max_tiles : p->target.tiles;
    size_t nt = ts_graph_tensor_count(g);
    L->tiles = ts_calloc(L->T, sizeof *L->tiles);
    L->code0 = ts_calloc(L->T, sizeof *L->code0);
    L->ctop = ts_calloc(L->T, sizeof *L->ctop);
    L->pl = ts_calloc(nt ? nt : 1, sizeof *L->pl);
    L->prog = ts_program_create("ipu");
    if (!L->tiles || !L->code0 || !L->ctop || !L->pl || !L->prog)
        return ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
    ts_status rc = scratch(L, &ps->sc);
    if (rc != TS_OK)
        return rc;
    for (uint32_t t = 0; t < L->T; t++)
        lwi_mark(L, t);
    return TS_OK;
}

/* The only node that reads tensor x, once, when x is not a graph output; else -1. */
static int sole_reader(const ts_graph *g, int x)
{
    size_t n;
    const int *c = ts_graph_consumers(g, x, &n);
    if (n != 1 || ts_graph_get_tensor(g, x)->is_output)
        return -1;
    const ts_graph_node *r = ts_graph_get_node(g, c[0]);
    size_t reads = 0;
    for (size_t k = 0; k < r->nin; k++)
        reads += r->in[k] == x;
    return reads == 1 ? c[0] : -1;
}

/* The weight a MatMul's sole reader, an Add, adds to each row of its output: N values (N its output
 * columns, the bias's last axis), of its dtype, the Add's output no larger than the MatMul's; else
 * -1. torch exports a Linear on more than two axes so (MatMul, then Add of its bias). */
static int bias_add(const ts_graph *g, const ts_graph_node *n, int *reader)
{
    if (n->op != TS_OP_MATMUL || n->nin != 2 || !n->nout)
        return -1;
    const ts_graph_tensor *B = ts_graph_get_tensor(g, n->in[1]), *O = ts_graph_get_tensor(g, n->out[0]);
    if ((B->kind != TS_TENSOR_WEIGHT && B->kind != TS_TENSOR_CONST) || B->rank != 2 || O->rank < 1)
        return -1;
    int r = sole_reader(g, n->out[0]);
    const ts_graph_node *rn = r >= 0 ? ts_graph_get_node(g, r) : NULL;
    if (!rn || rn->op != TS_OP_ADD || rn->nin != 2 || !rn->nout)
        return -1;
    int b = rn->in[0] == n->out[0] ? rn->in[1] : rn->in[0];
    const ts_graph_tensor *Bi = ts_graph_get_tensor(g, b);
    int64_t N = O->dims[O->rank - 1];
    if ((Bi->kind != TS_TENSOR_WEIGHT && Bi->kind != TS_TENSOR_CONST) || Bi->dtype != O->dtype || Bi->rank < 1 ||
        Bi->dims[Bi->rank - 1] != N || ts_graph_tensor_elems(Bi) != N ||
        ts_graph_tensor_elems(ts_graph_get_tensor(g, rn->out[0])) != ts_graph_tensor_elems(O))
        return -1;
    *reader = r;
    return b;
}

/* Elementwise tails fused into the producing superstep (issue 17): a Conv planner (b) lowers whose
 * output only an Add reads, the Add's other operand an activation of the same shape produced before
 * the Conv, takes the Add into its output pass (the operand gathered where its output blocks lie);
 * and a Relu that alone reads the Conv's output, or that Add's, as well. A MatMul whose output only
 * an Add of a bias reads (bias_add) adds it itself, as a Gemm's C: its columns' values once on the
 * tiles that hold them, where the Add held the bias as the activation's elements on every tile (at
 * batch 4 BERT-base's linear1 bias took 272 KiB a tile on the 23 tiles of its output). The Add and
 * the Relu then emit nothing, their outputs the producer's memory (fold: the input it aliases). */
static ts_status fuse_tails(lw *L)
{
    const ts_graph *g = L->g;
    size_t nn = ts_graph_node_count(g);
    L->fadd = ts_calloc(nn ? nn : 1, sizeof *L->fadd);
    L->frelu = ts_calloc(nn ? nn : 1, sizeof *L->frelu);
    L->fold = ts_calloc(nn ? nn : 1, sizeof *L->fold);
    L->fbias = ts_calloc(nn ? nn : 1, sizeof *L->fbias);
    ts_status rc = TS_OK;
    if (!L->fadd || !L->frelu || !L->fold || !L->fbias)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
    for (size_t i = 0; rc == TS_OK && i < nn; i++)
        L->fadd[i] = L->frelu[i] = L->fold[i] = L->fbias[i] = -1;
    for (size_t c = 0; rc == TS_OK && c < nn; c++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)c);
        int br = -1, b = bias_add(g, n, &br);
        if (b >= 0) {
            L->fbias[c] = b;
            L->fold[br] = n->out[0];
            continue;
        }
        if (n->op != TS_OP_CONV || !lw_shift_plan(L, (int)c) || !n->nout)
            continue;
        int o = n->out[0], r = sole_reader(g, o);
        const ts_graph_tensor *O = ts_graph_get_tensor(g, o);
        const ts_graph_node *rn = r >= 0 ? ts_graph_get_node(g, r) : NULL;
        if (rn && rn->op == TS_OP_ADD && rn->nin == 2 && rn->nout && rn->in[0] != rn->in[1]) {
            int y = rn->in[0] == o ? rn->in[1] : rn->in[0];
            const ts_graph_tensor *Y = ts_graph_get_tensor(g, y);
            if ((Y->kind == TS_TENSOR_ACTIVATION || Y->kind == TS_TENSOR_INPUT) && Y->dtype == O->dtype &&
                ts_graph_tensor_elems(Y) == ts_graph_tensor_elems(O) &&
                ts_graph_tensor_elems(ts_graph_get_tensor(g, rn->out[0])) == ts_graph_tensor_elems(O) &&
                Y->producer < (int)c) {
                L->fadd[c] = r;
                L->fold[r] = o;
                o = rn->out[0];
                r = sole_reader(g, o);
                rn = r >= 0 ? ts_graph_get_node(g, r) : NULL;
            }
        }
        if (rn && rn->op == TS_OP_RELU && rn->nin == 1 && rn->nout) {
            L->frelu[c] = r;
            L->fold[r] = o;
        }
    }
    return rc;
}

/* Liveness: the memory of a tensor (of its root, through Reshape and Flatten) is freed after its
 * last consumer; graph outputs are kept. (The IPU lowering's own: the TSP lowering counts each
 * tensor's readers down as it schedules them and keeps an aliased region for the whole run; the
 * wafer-mesh lowering streams and frees nothing.) */
static ts_status liveness(lw *L)
{
    const ts_graph *g = L->g;
    size_t nt = ts_graph_tensor_count(g);
    L->root = ts_calloc(nt ? nt : 1, sizeof *L->root);
    L->last = ts_calloc(nt ? nt : 1, sizeof *L->last);
    if (!L->root || !L->last)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
    ts_status rc = fuse_tails(L);
    if (rc != TS_OK)
        return rc;
    for (size_t i = 0; i < nt; i++)
        L->root[i] = (int)i;
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)i);
        if ((n->op == TS_OP_RESHAPE || n->op == TS_OP_FLATTEN || lwi_move_alias(L, n)) && n->nin && n->nout)
            L->root[n->out[0]] = L->root[n->in[0]];
        else if (L->fold[i] >= 0) /* an Add or Relu done by the Conv before it: that Conv's memory */
            L->root[n->out[0]] = L->root[L->fold[i]];
        for (size_t k = 0; k < n->nin; k++)
            L->last[L->root[n->in[k]]] = (int)i;
    }
    for (size_t i = 0; i < nt; i++)
        if (ts_graph_get_tensor(g, (int)i)->is_output)
            L->last[L->root[i]] = -1;
    return TS_OK;
}

/* After operator i: its buffers freed, then the tensors it was the last to read. */
static void free_after(lw *L, const ts_graph_node *nd, int i)
{
    for (size_t k = 0; k < L->ntmp; k++)
        lwi_release(L, L->tmp[k]);
    L->ntmp = 0;
    for (size_t k = 0; k < nd->nin; k++) {
        int r = L->root[nd->in[k]];
        if (L->last[r] == i && L->pl[r].ntiles) {
            lwi_release(L, L->pl[r].addr);
            L->last[r] = -2; /* freed once */
        }
    }
}

/* Operator i's row of the report: its tiles, supersteps from `first`, memory, MACs and plan. */
static ts_status record_layer(lw_pass *ps, int i, uint32_t first)
{
    lw *L = &ps->L;
    const ts_graph_node *nd = ts_graph_get_node(L->g, i);
    if (ts_grow((void **)&L->layers, &L->caplayers, L->nlayers + 1, sizeof *L->layers))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    uint64_t need = lwi_need_bytes(L);
    if (need > ps->maxneed)
        ps->maxneed = need;
    ts_lower_layer *ly = &L->layers[L->nlayers++];
    *ly = (ts_lower_layer){.node = i, .tiles = L->optiles, .first_step = first, .steps = L->step - first,
                           .mem_bytes = need, .op = (int)nd->op, .macs = ts_graph_node_macs(L->g, i)};
    if (L->plans && L->plans[i].tiles) { /* a plan the cost model priced */
        const ts_t10_plan *pl = &L->plans[i];
        ly->t10 = !pl->lcs;
        ly->plan = pl->lcs ? TS_LOWER_PLAN_LCS : pl->rot ? TS_LOWER_PLAN_SHIFT : TS_LOWER_PLAN_SPLIT;
        ly->fm = pl->fm, ly->fn = pl->fn, ly->fk = pl->fk, ly->ft = pl->ft, ly->rp = pl->rp, ly->rot = pl->rot;
        ly->model_cycles = pl->cycles;
    }
    return TS_OK;
}

/* f16 activations held as the operator reads them, for it alone (lwi_reheld): the first input of a
 * MatMul/Gemm by a weight of more than one row as halves (the f16 routine reads halves; one row
 * goes to the Conv routine, which reads f32 words), and inputs held as halves as f32 words for
 * the operators that read words (all but views, data movements and those MatMuls). */
static ts_status reheld_inputs(lw *L, const ts_graph_node *n)
{
    const ts_graph *g = L->g;
    bool mm = (n->op == TS_OP_MATMUL || n->op == TS_OP_GEMM) && n->nin >= 2;
    if (mm) {
        ts_tensor_kind bk = ts_graph_get_tensor(g, n->in[1])->kind;
        mm = bk != TS_TENSOR_ACTIVATION && bk != TS_TENSOR_INPUT;
    }
    if (n->op == TS_OP_RESHAPE || n->op == TS_OP_FLATTEN || n->op == TS_OP_CONCAT || n->op == TS_OP_SLICE ||
        n->op == TS_OP_EXPAND || n->op == TS_OP_GATHER)
        return TS_OK;
    for (size_t k = 0; k < n->nin; k++) {
        const ts_graph_tensor *x = ts_graph_get_tensor(g, n->in[k]);
        if (x->dtype != TS_DT_F16 || (x->kind != TS_TENSOR_ACTIVATION && x->kind != TS_TENSOR_INPUT) ||
            !L->pl[n->in[k]].ntiles)
            continue;
        ts_status rc = TS_OK;
        if (mm && k == 0) {
            uint64_t K = x->rank > 0 ? (uint64_t)x->dims[x->rank - 1] : 0;
            if (K && (uint64_t)ts_graph_tensor_elems(x) / K > 1)
                rc = lwi_reheld(L, n->in[k], 2);
        } else if (!mm && lwi_held_half(L, n->in[k]))
            rc = lwi_reheld(L, n->in[k], 4);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* Operator i: its weights and the dynamic bytes in use counted from the start, lowered, checked
 * against the tile, its memory freed, its row recorded. */
static ts_status lower_op(lw_pass *ps, int i)
{
    lw *L = &ps->L;
    uint32_t first = L->step;
    L->optiles = 0;
    L->cur = i;
    L->pk = -1;
    L->wnext = 0;
    L->slim = L->w[i].lim;
    const ts_graph_node *nd = ts_graph_get_node(L->g, i);
    L->hw = ps->in_hw;
    for (size_t k = 0; k < L->nblk; k++)
        if (L->blk[k].a + L->blk[k].n > L->hw)
            L->hw = L->blk[k].a + L->blk[k].n;
    L->base = 0;
    lw_place *keep = ts_calloc(nd->nin ? nd->nin : 1, sizeof *keep);
    if (!keep)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", nd->name);
    for (size_t k = 0; k < nd->nin; k++)
        keep[k] = L->pl[nd->in[k]];
    ts_status rc = TS_OK;
    if (L->fold && L->fold[i] >= 0) /* done by the Conv before it: its output is that Conv's */
        L->pl[nd->out[0]] = L->pl[L->fold[i]];
    else if ((rc = reheld_inputs(L, nd)) == TS_OK)
        rc = lower_node(L, i, &ps->sc);
    for (size_t k = nd->nin; k-- > 0;) /* the inputs as they were held */
        L->pl[nd->in[k]] = keep[k];
    ts_free(keep);
    L->base = L->toff = 0;
    if (rc == TS_OK)
        lwi_code_profile(L);
    const lw_wt *e = &L->w[i]; /* its weights, where the next operators start (lwi_place_op) */
    for (uint32_t t = e->lo; L->wload && rc == TS_OK && !e->spread && e->bytes && t < e->hi && t < L->T; t++)
        L->wload[t] += e->bytes;
    if (rc == TS_OK)
        rc = lwi_check_fit(L, ts_graph_op_name(nd->op), nd->name);
    if (rc == TS_OK && (rc = lwi_check_code(L)) == TS_EINPUT && L->plans) {
        /* code past the tile's memory: planned again for a smaller budget (ts_lower_ipu, at least
         * 1/64 of the tile less), whose plans put their steps' code elsewhere. BERT-base at batch
         * 4 on ipu_mk2: tile 298 held 159,787 instructions at the first plan, 172 bytes over (the
         * most from each layer's Transpose_3, 3,072); the plan for 628,224 bytes fits. */
        L->overfull = L->code_over = true;
        L->short_by = 1;
    }
    if (rc != TS_OK)
        return rc;
    ps->in_hw = 0;
    free_after(L, nd, i);
    return record_layer(ps, i, first);
}

/* The program's description and the report (rep may be NULL). */
static ts_status pass_report(lw_pass *ps, const ts_lower_ipu_params *p, ts_program *prog, ts_lower_report *rep)
{
    lw *L = &ps->L;
    const ts_graph *g = L->g;
    char desc[256];
    snprintf(desc, sizeof desc, "%s lowered to the IPU (%s, %u tiles, %u supersteps)", ts_graph_name(g),
             !L->plans ? "load-compute-store"
             : p->planner == TS_LOWER_PLANNER_SPLIT
                 ? "split plans without rotation for MatMul, Gemm and 1x1 Conv, load-compute-store for the rest"
             : p->planner == TS_LOWER_PLANNER_AUTO
                 ? "auto: the cheapest plan per MatMul, Gemm and 1x1 Conv, load-compute-store for the rest"
                 : "compute-shift for MatMul, Gemm and 1x1 Conv, load-compute-store for the rest",
             L->used, L->step);
    prog->workload = ts_strdup(desc);
    if (!rep)
        return TS_OK;
    rep->tiles_used = L->used;
    rep->supersteps = L->step;
    rep->mem_bytes = ps->maxneed;
    rep->planner = L->plans ? p->planner : TS_LOWER_PLANNER_LCS;
    rep->layers = L->layers;
    rep->nlayers = L->nlayers;
    L->layers = NULL;
    size_t nt = ts_graph_tensor_count(g);
    for (size_t i = 0; i < nt; i++)
        if (L->pl[i].ntiles)
            rep->nplaces++;
    rep->places = ts_calloc(rep->nplaces ? rep->nplaces : 1, sizeof *rep->places);
    if (!rep->places)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < nt; i++)
        if (L->pl[i].ntiles)
            rep->places[k++] = (ts_lower_place){(int)i, L->pl[i].ntiles, L->pl[i].chunk, L->pl[i].addr,
                                                L->pl[i].inner, L->pl[i].cb, L->pl[i].pb, L->pl[i].nrb,
                                                L->pl[i].es, L->pl[i].t0};
    return TS_OK;
}

static void pass_free(lw_pass *ps)
{
    lw *L = &ps->L;
    scratch_free(&ps->sc);
    for (uint32_t t = 0; L->tiles && t < L->T; t++) {
        ts_free(L->tiles[t].sup.v);
        ts_free(L->tiles[t].wrk.v);
        ts_free(L->tiles[t].rout);
    }
    ts_free(L->tiles);
    ts_free(L->code0);
    ts_free(L->ctop);
    ts_free(L->pl);
    ts_free(L->blk);
    ts_free(L->tabs);
    ts_free(L->tmp);
    ts_free(L->root);
    ts_free(L->last);
    ts_free(L->fadd);
    ts_free(L->frelu);
    ts_free(L->fold);
    ts_free(L->fbias);
    ts_free(L->wload);
    for (size_t k = 0; k < L->npkeys; k++)
        ts_free(L->pkeys[k].prof);
    ts_free(L->pkeys);
    ts_free(L->marks);
    ts_free(L->xr);
    ts_free(L->xreg);
    ts_free(L->layers);
    ts_program_destroy(L->prog);
}

/* One pass of the lowering: with measure, only the weight bytes and tiles per node (w) and the table
 * bytes (*perm) are found; otherwise they place the static data, and *out gets the program. tload:
 * lw's (NULL: none); place 1: operators with weights start where the weights before them are
 * fewest (lwi_place_op), 2: and under the code spread (L->cspread), 0: at tile 0. *overfull: the
 * bytes short when an operator did not fit (1 for a tile's code), else 0; *code_over: whether that
 * was code (either may be NULL). */
static ts_status lower_pass(const ts_graph *g, const ts_lower_ipu_params *p, const ts_t10_plan *plans, bool measure,
                            uint32_t mmshare, lw_wt *w, const uint64_t *tload, int place, uint64_t *perm,
                            ts_program **out, ts_lower_report *rep, uint64_t *overfull, bool *code_over, ts_err *err)
{
    lw_pass ps = {0};
    lw *L = &ps.L;
    ts_status rc = pass_init(&ps, g, p, plans, measure, mmshare, w, *perm, err);
    L->tload = tload;
    L->cspread = place > 1;
    if (rc == TS_OK && place && !(L->wload = ts_calloc(L->T, sizeof *L->wload)))
        rc = ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
    if (rc == TS_OK)
        rc = liveness(L);
    if (rc == TS_OK)
        rc = lwi_place_inputs(L);
    ps.in_hw = L->hw;
    for (size_t i = 0; rc == TS_OK && i < ts_graph_node_count(g); i++)
        rc = lower_op(&ps, (int)i);
    if (rc == TS_OK && measure)
        *perm = L->perm;
    else if (rc == TS_OK && (rc = lwi_finish(L, out)) == TS_OK && (rc = pass_report(&ps, p, *out, rep)) != TS_OK) {
        ts_program_destroy(*out);
        *out = NULL;
    }
    if (overfull) /* the bytes short when an operator did not fit, else 0 */
        *overfull = L->overfull ? L->short_by : 0;
    if (code_over)
        *code_over = L->overfull && L->code_over;
    pass_free(&ps);
    if (rc != TS_OK && rep)
        ts_lower_report_free(rep);
    return rc;
}

/* ---- the lowering ---- */

/* The budget of planner (b)'s plans after a plan of `budget` bytes per tile, which the model priced
 * at `planned` (0: unknown), was `overfull` bytes short: the plans' bytes less the shortfall, so
 * that the next plans give up about what was missing (the tensors live around an operator, the
 * weights of the operators planner (a) lowers, the steps' tables: none of them in the model) and
 * not much more; at least 1/64 of the tile less, at most a quarter of the budget (as before, when
 * every retry took a quarter). resnet50:size=32 on ipu_mk1: 18,208 bytes short at 256 KiB, then
 * 11,248 short at 192 KiB; the third plan at 178 KiB fits and runs in 676,213 cycles, where the
 * third at 144 KiB took 698,623. */
static uint64_t next_budget(const ts_lower_ipu_params *p, uint64_t budget, uint64_t planned, uint64_t overfull)
{
    uint64_t quarter = budget / 4 * 3, from = planned && planned < budget ? planned : budget;
    uint64_t step = overfull > p->target.sram_bytes / 64 ? overfull : p->target.sram_bytes / 64;
    step = (step + 15) & ~(uint64_t)15;
    return from > step && from - step > quarter ? from - step : quarter;
}

/* Whether the weights of a first pass (w, every operator from tile 0 on) stack on some tile to more
 * than half the tile memory: the lowering then starts each operator with weights where those
 * before it are fewest (lwi_place_op). Below it the programs are those of every operator from tile
 * 0 (resnet50:size=32 on ipu_mk2 stacks 28 %, the MLP 44 %); resnet50:size=32 on ipu_mk1 stacked
 * 94 % (676,213 -> 667,776 cycles spread), bert2_s16 on ipu_mk2 67 % (412,879 -> 412,645). load
 * (T entries): scratch. */
static bool weights_stacked(const lw_wt *w, size_t nn, uint32_t T, uint64_t sram, uint64_t *load)
{
    uint64_t most = 0;
    lwi_weight_sums(w, nn, T, false, load);
    for (uint32_t t = 0; t < T; t++)
        most = load[t] > most ? load[t] : most;
    return most * 2 > sram;
}

/* All weights are loaded before the run, so a model whose weights alone exceed the tile memory of
 * the tiles it may use cannot fit, whatever the plan: an error naming the first weight (in the
 * order of the nodes reading them) past the chip's memory, and the shortfall in bytes. */
static ts_status check_weights_fit(const ts_graph *g, const ts_lower_ipu_params *p, uint32_t T, ts_err *err)
{
    uint64_t cap = (uint64_t)T * p->target.sram_bytes, total = 0;
    int first = -1, fnode = -1;
    size_t nt = ts_graph_tensor_count(g);
    bool *seen = ts_calloc(nt ? nt : 1, sizeof *seen);
    if (!seen)
        return ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)i);
        for (size_t k = 0; k < n->nin; k++) {
            const ts_graph_tensor *t = ts_graph_get_tensor(g, n->in[k]);
            if (t->kind != TS_TENSOR_WEIGHT || seen[n->in[k]])
                continue;
            seen[n->in[k]] = true;
            total += (uint64_t)ts_graph_tensor_elems(t) * (t->dtype == TS_DT_F16 ? 2 : 4);
            if (total > cap && first < 0)
                first = n->in[k], fnode = (int)i;
        }
    }
    ts_free(seen);
    if (first < 0)
        return TS_OK;
    const ts_graph_node *n = ts_graph_get_node(g, fnode);
    return ts_err_set(err, TS_EINPUT,
                      "'%s' does not fit: its weights take %llu bytes, the %u tiles hold %llu (%llu bytes short); "
                      "the first weight past the chip's memory is '%s' of %s '%s'", ts_graph_name(g),
                      (unsigned long long)total, T, (unsigned long long)cap, (unsigned long long)(total - cap),
                      ts_graph_get_tensor(g, first)->name, ts_graph_op_name(n->op), n->name);
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
    if (!p || !p->target.tiles || !p->target.sram_bytes)
        return ts_err_set(err, TS_EINPUT, "IPU lowering: no tiles or no tile memory in the parameters");
    uint32_t U = p->target.amp_units_f32;
    if (U != 2 && U != 4 && U != 8)
        return ts_err_set(err, TS_EINPUT, "IPU lowering: %u AMP f32 MACs per cycle; the lowering handles 4, 8 or 16",
                          p->target.amp_macs_f32);
    ts_status rc = ts_lower_check_ops(g, &ipu_ops, err);
    if (rc == TS_OK)
        rc = check_weights_fit(g, p, p->max_tiles && p->max_tiles < p->target.tiles ? p->max_tiles : p->target.tiles,
                               err);
    if (rc != TS_OK)
        return rc;
    size_t nn = ts_graph_node_count(g);
    lw_wt *w = ts_calloc(nn ? nn : 1, sizeof *w);
    const uint32_t T = p->max_tiles && p->max_tiles < p->target.tiles ? p->max_tiles : p->target.tiles;
    uint64_t perm = 0, *tload = ts_calloc(T, sizeof *tload);
    bool shift = p->planner == TS_LOWER_PLANNER_T10 || p->planner == TS_LOWER_PLANNER_SPLIT ||
                 p->planner == TS_LOWER_PLANNER_AUTO;
    ts_t10_plan *plans = shift ? ts_calloc(nn ? nn : 1, sizeof *plans) : NULL;
    if (!w || !tload || (shift && !plans)) {
        ts_free(w);
        ts_free(tload);
        return ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
    }
    /* planner (b): the plans are chosen for a budget of tile memory; an operator that then does not
     * fit (the tensors live around it, the weights of the operators (a) lowers, alignment) makes the
     * planner choose again for a budget less what was missing (next_budget), down to 1/8 of the
     * tile. Planner (a) alone: a MatMul/Gemm keeps its weights within 1/4 of the tile memory per
     * tile; if an operator does not fit (all weights are loaded before the run), within 1/8, then
     * 1/16, down to 1/64, and on past it while the share is at least LW_MIN_SHARE bytes: a product
     * of few rows repeats its weights on each tile of its column blocks, every product on the
     * tiles from 0 up, so a deep model of small products can stack more than a tile holds on the
     * first tiles at 1/64 where a smaller share would cut its columns over more tiles. */
    uint32_t mmshare = 4;
    /* the message of the plan that came closest to fitting (the fewest bytes short), kept: when a
     * smaller plan tried after it runs out of host memory, the model does not fit, and that is the
     * message */
    char *closest = NULL;
    uint64_t closest_by = 0;
    unsigned code_tries = 0;
    /* 1: operators start where the weights before them are fewest (weights_stacked); 2: and where
     * a plan's code passed a tile's memory, the same plan again under the code spread */
    int place = 0;
    for (uint64_t budget = p->target.sram_bytes, next = 0, planned = 0;; budget = next, mmshare *= plans ? 1 : 2) {
        memset(w, 0, nn * sizeof *w);
        perm = 0;
        if (plans && (rc = lwi_t10_plans(g, p, budget, plans, &planned, err)) != TS_OK)
            break;
        uint64_t overfull = 0, top = p->target.sram_bytes & ~(uint64_t)15;
        bool code_over = false;
        /* the same plan twice: first the sizes and tiles of the static data, then with its addresses;
         * when operators of few tiles have weights, the first pass again, those operators put where
         * the others' weights leave the most memory (lwi_spread) */
        rc = lower_pass(g, p, plans, true, mmshare, w, NULL, place, &perm, out, NULL, NULL, NULL, err);
        if (rc == TS_OK && !place && weights_stacked(w, nn, T, p->target.sram_bytes, tload)) {
            place = 1;
            memset(w, 0, nn * sizeof *w);
            perm = 0;
            rc = lower_pass(g, p, plans, true, mmshare, w, NULL, place, &perm, out, NULL, NULL, NULL, err);
        }
        bool hinted = rc == TS_OK && lwi_tile_load(w, nn, T, tload);
        if (hinted) {
            memset(w, 0, nn * sizeof *w);
            perm = 0;
            rc = lower_pass(g, p, plans, true, mmshare, w, tload, place, &perm, out, NULL, NULL, NULL, err);
        }
        if (rc == TS_OK)
            rc = lwi_place_weights_by(w, nn, T, top > perm ? top - perm : 0, place ? T / 4 : 0, err);
        if (rc == TS_OK)
            rc = lower_pass(g, p, plans, false, mmshare, w, hinted ? tload : NULL, place, &perm, out, rep, &overfull,
                            &code_over, err);
        next = next_budget(p, budget, planned, overfull);
        /* code past a tile's memory: a smaller budget once, then that plan again under the code
         * spread (lwi_place_op: the same operator of every layer starts where its code leaves the
         * tiles least full), so that what fits at the first or second try is lowered as before;
         * each try is a whole pass, and a model whose code is far over would go down the budgets
         * 1/64 of the tile at a time (a fourth try, a smaller budget under the spread, left
         * ViT-B/16 at batch 4 2,908 bytes over where the third was 188) */
        bool cspread = code_over && code_tries == 1 && place < 2;
        if (cspread)
            place = 2, next = budget;
        bool spent = plans && next < p->target.sram_bytes / 8;
        if (rc == TS_OK || !overfull || (spent && p->planner != TS_LOWER_PLANNER_AUTO) ||
            (!plans && mmshare >= 64 && p->target.sram_bytes / mmshare / 2 < LW_MIN_SHARE) ||
            (code_over && !cspread && code_tries++))
            break;
        if (err) {
            if (!closest || overfull < closest_by) {
                ts_free(closest);
                closest = ts_strdup(err->msg);
                closest_by = overfull;
            }
            ts_err_free(err);
            ts_err_init(err);
        }
        if (spent) { /* auto: no plan fits down to an eighth of the tile; load-compute-store's shares next
                      * (f16 products, which planner (b) does not split along k) */
            ts_free(plans);
            plans = NULL;
            mmshare = 2; /* doubled to 4 as the loop goes on */
        }
    }
    if (rc == TS_ENOMEM && closest)
        rc = ts_err_set(err, TS_EINPUT, "'%s' does not fit: %s (of the plans tried the closest; the next ran out of host "
                        "memory)", ts_graph_name(g), closest);
    ts_free(closest);
    ts_free(plans);
    ts_free(w);
    ts_free(tload);
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
        lw_place P = {.ntiles = p->ntiles, .chunk = p->chunk, .addr = p->addr, .inner = p->inner, .cb = p->cb,
                      .pb = p->pb, .nrb = p->nrb, .t0 = p->t0};
        uint64_t off;
        lwi_pl_run(&P, elem, tile, &off);
        *addr = p->addr + off * (p->es ? p->es : ts_dtype_size(t->dtype));
        return 0;
    }
    return -1;
}
