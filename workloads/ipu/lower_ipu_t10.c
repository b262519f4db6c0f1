/* workloads/ipu/lower_ipu_t10.c — planner (b) of the IPU lowering: MatMul, Gemm and 1x1 Conv as T10's
 * compute-shift plans (research/graphcore_ipu.md §4.5, §5; the plan space and cost model are plan_t10.h's).
 *
 * A plan fm x fn x fk (ft, rp, rot) puts the output block of rows i, columns j and the k-part l on
 * tile t = (l * fm + i) * fn + j. Each tile holds its slices of A (rows i, its k-range) and of B
 * (its k-range, columns j) and runs ft * rp steps, each a compute superstep (the AMP kernel of
 * lower_ipu.c on one k-slice of kp, adding to the partial sums of the steps before) followed, but
 * for the last, by a shift superstep per rotating operand. A rotating operand is held as rp slices
 * in a ring of rp + 1 slots; in every shift each tile sends the slice it has just used (its front
 * slot) to its predecessor in its ring of ft tiles and receives its successor's into the free slot,
 * so over the steps every slice of the ring passes every tile once. A rotates in rings along j (the
 * fn tiles sharing its rows), B along i; when both rotate (Cannon's skew) tile (i, j) starts with
 * sub-tensor (i + j) mod ft of both. With fk > 1 the k-parts' sums are added in a tree: in level d
 * the tile with l = d (mod 2d) sends its sums to l - d (an exchange superstep), which adds them (a
 * compute superstep). The output stays on the l = 0 tiles, blocked (rows of i, columns of j).
 *
 * Each tile has one AMP routine per kind of step (first, adding, last in f16), which reads the
 * step's addresses and k from a table of six words a step (initial data; emit_mm's `tab`), so the
 * code does not grow with the steps.
 *
 * Initial placement: A is gathered from where it lies into the plan's layout by lower_ipu.c's
 * gather (a rotating A: its first rp slices, into the slots); B is initial data, already in AMP
 * coefficient blocks per slice (a rotating B: its first slice). Weights are placed by salloc as in
 * planner (a). Sends and receives of one superstep never share an SRAM element (`tile.element_bytes`):
 * the slots of a ring are allocated apart, and apart from A's placement.
 *
 * A 1x1 Conv (stride 1, no padding) is the product of its pixels by its input channels by its
 * output channels: its input is gathered channel-major and turned into pixel rows on the tile, its
 * output turned channel-major at the end (conv_rows, and the end of ts_lwi_t10_matmul); a Conv
 * another operator reads keeps blocks of whole image rows and at most 16 channels. f16
 * MatMul/Gemm hold halves in A and B, keep f32 partial sums between the steps and round at the last.
 *
 * What the code generator does not take (the plan is then not offered): a rotating B with rp > 1
 * (its slots would have to lie apart in the static region, whose addresses the first pass does not
 * know) or on a tile whose low memory does not take 128-bit loads (its free slot is dynamic); a
 * rotating A at rp > 1 on tiles of fewer than four SRAM elements; f16 with k split over tiles;
 * MatMul/Gemm of one row, odd k, transA/alpha/beta, Convs other than 1x1, f16 Convs (planner (a)
 * lowers them).
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/ipu/lower_ipu_int.h"

#define S(t, op, a, b, c) ts_lwi_emit(L, &L->tiles[t].sup, LW_##op, (a), (b), (c))
#define W(t, op, a, b, c) ts_lwi_emit(L, &L->tiles[t].wrk, LW_##op, (a), (b), (c))

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static uint64_t umin(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* A MatMul/Gemm planner (b) generates code for. */
typedef struct t10_op {
    const ts_graph_tensor *A, *B, *C;
    uint64_t M, K, N;
    bool tb;   /* Gemm transB: B is [N][K] */
    bool conv; /* a 1x1 Conv (stride 1, no padding): M = pixels, K = input channels, N = output channels */
    bool half; /* f16 throughout (a MatMul/Gemm): halves in and out, f32 partial sums, f16v4amp */
    uint64_t wo; /* a Conv's output row (pixels) */
    bool read; /* a Conv's output is read by another operator */
} t10_op;

static bool conv_shape(const ts_graph *g, const ts_graph_node *n, t10_op *s)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(g, n->in[0]), *Wt = ts_graph_get_tensor(g, n->in[1]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(g, n->out[0]);
    const ts_graph_attrs *at = &n->attrs;
    s->A = X;
    s->B = Wt;
    s->C = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    if (X->rank != 4 || X->dims[0] != 1 || Wt->rank != 4 || Y->rank != 4 || at->group != 1)
        return false;
    if (Wt->kind == TS_TENSOR_ACTIVATION || Wt->kind == TS_TENSOR_INPUT || Wt->dims[2] != 1 || Wt->dims[3] != 1)
        return false;
    for (int k = 0; k < 4; k++)
        if (at->pads[k] || (k < 2 && (at->strides[k] != 1 || at->dilations[k] != 1)))
            return false;
    if (X->dtype != TS_DT_F32 || Wt->dtype != TS_DT_F32 || (s->C && s->C->dtype != TS_DT_F32))
        return false;
    s->conv = s->tb = true; /* W[M][C][1][1] is B[N][K] */
    s->M = (uint64_t)(X->dims[2] * X->dims[3]);
    s->K = (uint64_t)X->dims[1];
    s->N = (uint64_t)Wt->dims[0];
    s->wo = (uint64_t)Y->dims[3];
    size_t nc = 0;
    ts_graph_consumers(g, n->out[0], &nc);
    s->read = nc > 0;
    if (s->C && ts_graph_tensor_elems(s->C) != (int64_t)s->N)
        return false;
    return s->M > 1 && s->K >= 2 && s->K % 2 == 0 && s->N > 0;
}

static bool t10_shape(const ts_graph *g, const ts_graph_node *n, t10_op *s)
{
    memset(s, 0, sizeof *s);
    if (n->op == TS_OP_CONV)
        return conv_shape(g, n, s);
    if (n->op != TS_OP_MATMUL && n->op != TS_OP_GEMM)
        return false;
    s->A = ts_graph_get_tensor(g, n->in[0]);
    s->B = ts_graph_get_tensor(g, n->in[1]);
    s->C = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    bool gemm = n->op == TS_OP_GEMM;
    if (gemm && (n->attrs.trans_a || n->attrs.alpha != 1.0 || (s->C && n->attrs.beta != 1.0)))
        return false;
    if (s->B->kind == TS_TENSOR_ACTIVATION || s->B->kind == TS_TENSOR_INPUT || s->B->rank != 2 || s->A->rank < 1)
        return false;
    s->half = s->A->dtype == TS_DT_F16;
    ts_dtype dt = s->half ? TS_DT_F16 : TS_DT_F32;
    if (s->A->dtype != dt || s->B->dtype != dt || (s->C && s->C->dtype != dt))
        return false;
    /* f16: A held as halves (a graph input read by a MatMul/Gemm, or the output of one) */
    if (s->half && s->A->kind != TS_TENSOR_INPUT &&
        (s->A->producer < 0 || (ts_graph_get_node(g, s->A->producer)->op != TS_OP_MATMUL &&
                                ts_graph_get_node(g, s->A->producer)->op != TS_OP_GEMM)))
        return false;
    s->tb = gemm && n->attrs.trans_b;
    s->K = (uint64_t)s->A->dims[s->A->rank - 1];
    s->N = (uint64_t)(s->tb ? s->B->dims[0] : s->B->dims[1]);
    s->M = s->K ? (uint64_t)ts_graph_tensor_elems(s->A) / s->K : 0;
    if (s->C && ts_graph_tensor_elems(s->C) != (int64_t)s->N)
        return false;
    if (s->half && (s->K % 4 || s->N % 2))
        return false;
    return s->M > 1 && s->K >= 2 && s->K % 2 == 0 && s->N > 0;
}

static ts_t10_hw t10_hw(const ts_lower_ipu_params *p, uint64_t sram)
{
    uint32_t T = p->max_tiles && p->max_tiles < p->target.tiles ? p->max_tiles : p->target.tiles;
    /* round_cycles 30 is assumed (arming recv, send and rxwait of one exchange superstep), as in
     * plan_t10_table.c */
    return (ts_t10_hw){.tiles = T, .sram_bytes = sram, .units = p->target.amp_units_f32,
                       .workers = p->target.workers ? p->target.workers : 6, .xbytes = p->target.xbytes ? p->target.xbytes : 4,
                       .sync_cycles = p->target.sync_cycles ? p->target.sync_cycles : 90, .round_cycles = 30};
}

/* A 1x1 Conv's plan priced for what its code does beyond a MatMul's. Its input arrives
 * channel-major and is turned into rows of pixels (2 issues per element, pixels over the workers),
 * its output, computed pixel-major, is turned channel-major (2 issues per element, channels over
 * the workers). Its gather reads a piece per input channel (of its k-range, or of the slices it
 * holds first when A rotates, each pixel block then read by fn / ft tiles instead of fn) from the
 * holders of the input placed as a graph input (chunks of at least 1024 elements): one round per
 * holder a tile reads from (staggered, so a holder serves its readers spread over the rounds), each
 * a sync, the holder's share of its sends (its words, and 18 cycles each for setting up and issuing
 * the send) and an exchange superstep's fixed cost; this replaces the MatMul's gather of A rows. */
static void conv_cost(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan *p)
{
    uint64_t W = hw->workers ? hw->workers : 6, xb = hw->xbytes ? hw->xbytes : 4;
    /* channels a tile gathers: its k-range, or (A rotating) its first rp slices; the copies of a
     * pixel block's channels: one per channel block, or per ring */
    bool rota = p->rot & TS_T10_ROT_A;
    uint64_t kin = rota ? p->kp * p->rp : p->kt, copies = rota ? p->fn / p->ft : p->fn;
    uint64_t c = W * (cdiv(p->rows, W) * (2 * kin + 8) + 20) + W * (cdiv(p->cols, W) * (2 * p->rows + 8) + 20);
    p->compute_cycles += c;
    uint64_t ch = cdiv(mm->k * mm->m, hw->tiles), cph = 1, senders;
    if (ch < 1024)
        ch = 1024;
    if (ch >= mm->m) { /* a holder holds whole channels */
        cph = ch / mm->m;
        senders = cdiv(kin, cph);
    } else
        senders = kin * cdiv(p->rows, ch);
    uint64_t readers = copies * cdiv(ch < mm->m ? ch : mm->m, p->rows); /* tiles reading one holder */
    uint64_t per_round = cdiv(readers, senders) * (cdiv(p->rows * cph * 4, xb) + 18) + hw->round_cycles;
    uint32_t levels = 0;
    while ((1u << levels) < p->fk)
        levels++;
    uint64_t old_rounds = p->syncs - (2 * p->steps - 1 + levels);
    p->exchange_cycles = p->exchange_cycles - p->in_cycles + senders * per_round;
    p->in_cycles = senders * per_round;
    p->syncs = (uint32_t)(p->syncs - old_rounds + senders);
    p->sync_cycles = (uint64_t)p->syncs * hw->sync_cycles;
    p->cycles = p->compute_cycles + p->exchange_cycles + p->sync_cycles;
}

/* An f16 plan's compute: the f16v4amp kernel, (U16 + 2) issues per 4 inputs per group of U16
 * outputs (ts_t10_amp_cycles on half the k with U16 units). */
static void f16_cost(const ts_t10_hw *hw, uint32_t u16, ts_t10_plan *p)
{
    ts_t10_hw h = *hw;
    h.units = u16;
    uint64_t c = p->steps * ts_t10_amp_cycles(&h, p->rows, p->kp / 2, p->cols);
    p->cycles = p->cycles - p->compute_cycles + c;
    p->compute_cycles = c;
}

/* Plans the code generator takes (see the top of the file). */
static bool generable(const ts_lower_ipu_params *p, const t10_op *s, const ts_t10_plan *pl)
{
    /* f16: whole f16v4amp groups and steps of 4 inputs, k not split (its partial sums would need a
     * rounding pass after the tree) */
    uint32_t u16 = p->target.amp_units_f16;
    if (s->half && (u16 < 2 || u16 > 8 || u16 % 2 || pl->cols % u16 || pl->kp % 4 || pl->kt % 4 || pl->fk > 1))
        return false;
    /* a Conv another operator reads: blocks of whole image rows and at most 16 channels, as planner
     * (a)'s Convs leave theirs, since its reader gathers a piece per channel and block (smaller
     * blocks made ResNet-50's exchange code outgrow the tile memory) */
    if (s->conv && s->read && ((pl->rows % s->wo && pl->rows < s->M) || pl->cols > 16))
        return false;
    if (pl->rot & TS_T10_ROT_B)
        return pl->rp == 1 && !p->target.interleaved_base;
    /* a ring of rp + 1 > 2 slots needs three elements apart from the one A lies in */
    uint64_t eb = p->target.element_bytes ? p->target.element_bytes : 16;
    if ((pl->rot & TS_T10_ROT_A) && pl->rp > 1)
        return p->target.sram_bytes / eb >= 4;
    return true;
}

ts_status ts_lwi_t10_plans(const ts_graph *g, const ts_lower_ipu_params *p, uint64_t budget, ts_t10_plan *plans,
                           ts_err *err)
{
    size_t nn = ts_graph_node_count(g), nops = 0;
    ts_t10_plan **sets = ts_calloc(nn ? nn : 1, sizeof *sets);
    size_t *nsets = ts_calloc(nn ? nn : 1, sizeof *nsets), *pick = ts_calloc(nn ? nn : 1, sizeof *pick);
    int *node = ts_calloc(nn ? nn : 1, sizeof *node);
    ts_status rc = sets && nsets && pick && node ? TS_OK : ts_err_set(err, TS_ENOMEM, "out of memory planning");
    ts_t10_hw hw = t10_hw(p, budget);
    for (size_t i = 0; i < nn && rc == TS_OK; i++) {
        memset(&plans[i], 0, sizeof plans[i]);
        t10_op s;
        if (!t10_shape(g, ts_graph_get_node(g, (int)i), &s))
            continue;
        ts_t10_mm mm = {.m = s.M, .k = s.K, .n = s.N, .es = s.half ? 2 : 4};
        if (p->t10_plan) { /* the caller's choice */
            ts_t10_plan *f = &plans[i];
            *f = (ts_t10_plan){.fm = p->t10_plan->fm, .fn = p->t10_plan->fn, .fk = p->t10_plan->fk,
                               .ft = p->t10_plan->ft, .rp = p->t10_plan->rp, .rot = p->t10_plan->rot};
            if ((rc = ts_t10_mm_cost(&hw, &mm, f, err)) != TS_OK)
                break;
            if (s.conv)
                conv_cost(&hw, &mm, f);
            if (s.half)
                f16_cost(&hw, p->target.amp_units_f16, f);
            if (!generable(p, &s, f)) {
                rc = ts_err_set(err, TS_EINPUT, "plan: not generated (a rotating B needs rp 1 and 128-bit loads "
                                                "everywhere, a rotating A at rp > 1 four SRAM elements per tile)");
                break;
            }
            continue;
        }
        ts_t10_plan *v = NULL;
        size_t nv = 0;
        if (ts_t10_mm_plans(&hw, &mm, &v, &nv, NULL) != TS_OK)
            continue; /* nothing fits: planner (a) lowers it (and says by how much it is over) */
        size_t k = 0;
        for (size_t j = 0; j < nv; j++)
            if (generable(p, &s, &v[j]) && (p->planner != TS_LOWER_PLANNER_SPLIT || v[j].rot == TS_T10_ROT_NONE)) {
                if (s.conv)
                    conv_cost(&hw, &mm, &v[j]);
                if (s.half)
                    f16_cost(&hw, p->target.amp_units_f16, &v[j]);
                v[k++] = v[j];
            }
        if (!k) {
            ts_free(v);
            continue;
        }
        sets[nops] = v;
        nsets[nops] = ts_t10_pareto_weights(v, k);
        node[nops++] = (int)i;
    }
    if (rc == TS_OK && nops) {
        /* weights stay for the whole run, the rest only while its operator runs; if even the
         * smallest plans do not fit, take them and let the lowering say what is over */
        if (ts_t10_reconcile((const ts_t10_plan *const *)sets, nsets, nops, budget, pick, NULL, NULL) != TS_OK)
            for (size_t k = 0; k < nops; k++)
                pick[k] = 0;
        for (size_t k = 0; k < nops; k++)
            plans[node[k]] = sets[k][pick[k]];
    }
    for (size_t k = 0; sets && k < nops; k++)
        ts_free(sets[k]);
    ts_free(sets);
    ts_free(nsets);
    ts_free(pick);
    ts_free(node);
    return rc;
}

/* ---- code generation ---- */

/* The plan laid over the tiles. */
typedef struct t10_gen {
    uint32_t fm, fn, fk, ft, rp, steps;
    bool rota, rotb;
    bool cm; /* output blocks numbered channel-major (a Conv): t = (l * fn + j) * fm + i */
    uint64_t rows, cols, kt, kp, M, K, N;
} t10_gen;

static uint32_t tile_of(const t10_gen *G, uint32_t i, uint32_t j, uint32_t l)
{
    return G->cm ? (l * G->fn + j) * G->fm + i : (l * G->fm + i) * G->fn + j;
}

/* Rows, columns (valid outputs) of block (i, j); k-range of part l. */
static uint64_t rows_of(const t10_gen *G, uint32_t i) { return i * G->rows < G->M ? umin(G->rows, G->M - i * G->rows) : 0; }
static uint64_t cols_of(const t10_gen *G, uint32_t j) { return j * G->cols < G->N ? umin(G->cols, G->N - j * G->cols) : 0; }

/* k-slice sigma of part l: its first k and its length (0 past the end of k). */
static uint64_t slice_k(const t10_gen *G, uint32_t l, uint32_t sigma, uint64_t *ks)
{
    uint64_t k0 = (uint64_t)l * G->kt, k1 = umin(G->K, k0 + G->kt);
    *ks = k0 + (uint64_t)sigma * G->kp;
    return *ks < k1 ? umin(G->kp, k1 - *ks) : 0;
}

/* The sub-tensor tile (i, j) holds first: its position in its ring (both rings with Cannon's skew). */
static uint32_t base_of(const t10_gen *G, uint32_t i, uint32_t j)
{
    if (G->rota && G->rotb)
        return (i % G->ft + j % G->ft) % G->ft;
    return G->rota ? j % G->ft : G->rotb ? i % G->ft : 0;
}

/* The slice tile (i, j) computes on in step s. */
static uint32_t sigma_of(const t10_gen *G, uint32_t i, uint32_t j, uint32_t s)
{
    return (base_of(G, i, j) * G->rp + s) % G->steps;
}

/* One shift of a ring: every tile t < n with words[t] > 0 receives into `to` from nxt[t] and sends
 * `from[t]` to prv[t]; one exchange superstep. */
static void shift(lw *L, uint32_t n, const uint32_t *prv, const uint32_t *nxt, const uint64_t *from, uint64_t to,
                  const uint64_t *words)
{
    for (uint32_t t = 0; t < n; t++)
        if (words[t]) { /* receivers arm first */
            S(t, SETZI, RM(5), (int32_t)to, 0);
            S(t, SETZI, RM(6), (int32_t)nxt[t], 0);
            S(t, RECV, RM(5), RM(6), (int32_t)words[t]);
        }
    for (uint32_t t = 0; t < n; t++)
        if (words[t]) {
            S(t, SETZI, RM(5), (int32_t)from[t], 0);
            S(t, SETZI, RM(6), (int32_t)prv[t], 0);
            S(t, SEND, RM(5), RM(6), (int32_t)words[t]);
            S(t, RXWAIT, 0, 0, 0);
        }
    ts_lwi_sync_all(L);
}

/* Element-aligned span of [a, a + bytes). */
static void span(const lw *L, uint64_t a, uint64_t bytes, uint64_t *out)
{
    uint64_t eb = L->p->target.element_bytes ? L->p->target.element_bytes : 16;
    out[0] = a / eb * eb;
    out[1] = cdiv(a + (bytes ? bytes : 1), eb) * eb;
}

/* Coefficient blocks of B for columns [c0, c0 + cols) and k [ks, ks + kv): [group][pair][unit][2],
 * packed with kv (the kernel's step), zero past N. */
static void build_b(lw *L, const t10_op *s, int bid, float *w, uint64_t c0, uint64_t cols, uint64_t ks, uint64_t kv)
{
    uint32_t U = s->half ? L->units16 : L->units, per = s->half ? 4 : 2; /* f16: [group][step][unit][4] halves */
    uint16_t *w16 = (uint16_t *)w;
    for (uint64_t q = 0; q < cols / U; q++)
        for (uint64_t k2 = 0; k2 < kv / per; k2++)
            for (uint32_t u = 0; u < U; u++)
                for (uint32_t jj = 0; jj < per; jj++) {
                    uint64_t o = c0 + q * U + u, k = ks + per * k2 + jj, at = ((q * (kv / per) + k2) * U + u) * per + jj;
                    float v = o < s->N ? ts_lwi_value(s->B, bid, s->tb ? o * s->K + k : k * s->N + o) : 0.0f;
                    if (s->half)
                        w16[at] = ts_f32_to_f16(v);
                    else
                        w[at] = v;
                }
}

/* A 1x1 Conv's A: tile (i, j, l) gathers channels [l kt, ..) of its pixels [i rows, ..) of x
 * (channel-major, rows pixels a channel) into cbuf, then its workers turn them into rows of pixels
 * at dst ([rows][dk]; pixels over the workers, overlapping blocks write the same values). With
 * slot >= 0 (a rotating A) only the slice the tile holds in that slot, into the slot. */
static ts_status conv_rows(lw *L, const t10_gen *G, int x, uint32_t tn, lw_scr *sc, uint64_t cbuf, int slot,
                           uint64_t dst, uint64_t dk)
{
    for (uint32_t t = 0; t < L->T; t++)
        sc->lo[t] = sc->hi[t] = 0, sc->nr[t] = 0;
    for (uint32_t l = 0; l < G->fk; l++)
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, l);
                uint64_t ks, kv;
                if (slot >= 0)
                    kv = slice_k(G, l, base_of(G, i, j) * G->rp + (uint32_t)slot, &ks);
                else
                    kv = slice_k(G, l, 0, &ks) ? umin(G->K, (uint64_t)l * G->kt + G->kt) - ks : 0;
                uint64_t r = rows_of(G, i);
                if (!kv || !r)
                    continue;
                sc->lo[t] = ks * G->M + i * G->rows;
                sc->hi[t] = sc->lo[t] + r;
                sc->nr[t] = (uint32_t)kv;
            }
    L->into = cbuf;
    L->stagger = true; /* a channel's holder serves all its pixel blocks: not all in one round */
    ts_status rc = ts_lwi_gather(L, x, tn, sc->lo, sc->hi, sc->nr, G->M, G->rows, false, sc->where);
    L->into = 0;
    L->stagger = false;
    if (rc != TS_OK)
        return rc;
    for (uint32_t t = 0; t < tn; t++) {
        if (!sc->nr[t])
            continue;
        uint64_t r = sc->hi[t] - sc->lo[t], kv = sc->nr[t], src = sc->where[t];
        uint32_t rw = (uint32_t)cdiv(r, L->workers);
        size_t entry = L->tiles[t].wrk.n;
        /* $m1 := first pixel; $m2 := src + 4 $m1 (channel 0 of it); $m3 := dst + $m1 dk 4 */
        ts_lwi_emit_start_row(L, t, (uint32_t)r, rw);
        W(t, SHLI, RM(2), RM(1), 2);
        W(t, SETZI, RM(4), (int32_t)src, 0);
        W(t, ADD, RM(2), RM(2), RM(4));
        W(t, MULI, RM(3), RM(1), (int32_t)(dk * 4));
        W(t, SETZI, RM(4), (int32_t)dst, 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        W(t, SETZI, RM(5), (int32_t)kv, 0);
        size_t px = W(t, MOV, RM(6), RM(2), 0);
        W(t, RPT, RM(5), 2, 0);
        W(t, LD32STEP, RA(0), RM(6), (int32_t)(G->rows * 4));
        W(t, ST32STEP, RA(0), RM(3), 4);
        W(t, ADDI, RM(2), RM(2), 4);
        W(t, ADDI, RM(3), RM(3), (int32_t)((dk - kv) * 4));
        W(t, BRNZDEC, RM(1), (int32_t)px, 0);
        W(t, EXIT, 0, 0, 0);
        ts_lwi_run_all(L, t, entry);
    }
    return TS_OK;
}

ts_status ts_lwi_t10_matmul(lw *L, const ts_graph_node *n, lw_scr *sc, const ts_t10_plan *pl)
{
    t10_op s;
    if (!t10_shape(L->g, n, &s))
        return ts_lwi_unsupported(L, n, "a compute-shift plan for this MatMul/Gemm");
    int x = n->in[0];
    if (!L->pl[x].ntiles)
        return ts_lwi_unsupported(L, n, "an input that is not an activation or a graph input");
    t10_gen G0 = {.fm = pl->fm, .fn = pl->fn, .fk = pl->fk, .ft = pl->ft, .rp = pl->rp, .steps = pl->ft * pl->rp,
                  .rota = pl->rot & TS_T10_ROT_A, .rotb = pl->rot & TS_T10_ROT_B, .rows = pl->rows, .cols = pl->cols,
                  .kt = pl->kt, .kp = pl->kp, .M = s.M, .K = s.K, .N = s.N, .cm = s.conv};
    const t10_gen *G = &G0;
    uint32_t U = s.half ? L->units16 : L->units, Wk = L->workers, tn = G->fm * G->fn * G->fk;
    uint64_t es = s.half ? 2 : 4, per = s.half ? 4 : 2; /* A and B element bytes, inputs per AMP step */
    if (tn > L->T || G->cols % U || G->kp % per || (G->rotb && G->rp != 1) || (s.half && G->fk > 1))
        return ts_lwi_unsupported(L, n, "this compute-shift plan");
    if (s.half != (L->pl[x].es == 2))
        return ts_lwi_unsupported(L, n, "an f16 input held in f32 words");
    ts_status rc = TS_OK;
    const lw_place P = L->pl[x];
    uint64_t av[1][2];
    span(L, P.addr, P.chunk * P.es, av[0]); /* A's placement sends while the slots receive */

    /* A: a ring of rp + 1 slots of rows x kp, or the whole k-range rows x kt. In a shift the front
     * slot sends and the one before it in the ring receives: neighbouring slots (and the last and
     * the first) lie in different elements. */
    uint64_t aslot[17] = {0}, abuf = 0, aslot_b = G->rows * G->kp * es;
    if (G->rota) {
        if (G->rp > 16)
            return ts_lwi_unsupported(L, n, "a rotating pace above 16");
        for (uint32_t k = 0; k <= G->rp; k++) { /* the free slot rp takes no part in the gather */
            uint64_t sv[3][2];
            size_t nav = 0;
            if (k < G->rp)
                memcpy(sv[nav++], av[0], sizeof sv[0]);
            if (k)
                span(L, aslot[k - 1], aslot_b, sv[nav++]);
            if (k && k == G->rp)
                span(L, aslot[0], aslot_b, sv[nav++]);
            aslot[k] = ts_lwi_talloc_apart(L, aslot_b, (const uint64_t(*)[2])sv, nav);
        }
    } else
        abuf = ts_lwi_talloc_apart(L, G->rows * G->kt * es, (const uint64_t(*)[2])av, 1);
    /* B: its slices of cols x kp as coefficient blocks, all (still) or the first and a free slot */
    uint64_t bslot_b = G->cols * G->kp * es, bw = 0, bslot[2] = {0, 0};
    if (G->rotb) {
        bslot[0] = ts_lwi_salloc(L, bslot_b);
        uint64_t bsp[1][2];
        span(L, bslot[0], bslot_b, bsp[0]);
        bslot[1] = ts_lwi_talloc_apart(L, bslot_b, (const uint64_t(*)[2])bsp, 1);
    } else
        bw = ts_lwi_salloc(L, G->steps * bslot_b);
    uint64_t baddr = s.C ? ts_lwi_salloc(L, G->cols * 4) : 0;
    /* per tile and step, the kernel's a, w, out, acc, bias and kp (one routine serves every step) */
    uint64_t ptab = ts_lwi_salloc(L, (uint64_t)G->steps * 24);
    /* partial sums: two buffers (a step adds the one to the other), padded to whole worker blocks
     * for the tree's adds; the last written stays as the output */
    uint64_t ne0 = 0, ks;
    for (uint32_t sg = 0; sg < G->steps; sg++)
        ne0 += slice_k(G, 0, sg, &ks) > 0;
    uint32_t fin = (uint32_t)((ne0 - 1) % 2);
    bool two = G->steps > 1 || G->fk > 1;
    uint64_t obytes = cdiv(G->rows * G->cols, Wk) * Wk * 4, obuf[2] = {0, 0};
    /* the output: the last sum buffer, or a Conv's channel-major copy, or f16's halves */
    uint64_t yout = s.conv || s.half ? ts_lwi_alloc(L, G->rows * G->cols * es) : 0;
    if (!s.half || two)
        obuf[fin] = s.conv || s.half ? ts_lwi_talloc_apart(L, obytes, NULL, 0) : ts_lwi_alloc(L, obytes);
    if (two)
        obuf[1 - fin] = ts_lwi_talloc_apart(L, obytes, NULL, 0);

    /* initial data: B's coefficient blocks and the bias */
    float *w = L->measure ? NULL : ts_calloc(cdiv(bslot_b, 4) + G->cols + 1, 4);
    if (!L->measure && !w)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the weights of '%s'", n->name);
    for (uint32_t l = 0; w && l < G->fk && rc == TS_OK; l++)
        for (uint32_t j = 0; j < G->fn && rc == TS_OK; j++)
            for (uint32_t sg = 0; sg < G->steps && rc == TS_OK; sg++) {
                uint64_t kv = slice_k(G, l, sg, &ks);
                memset(w, 0, bslot_b);
                build_b(L, &s, n->in[1], w, (uint64_t)j * G->cols, G->cols, ks, kv);
                for (uint32_t i = 0; i < G->fm && rc == TS_OK; i++) {
                    uint32_t t = tile_of(G, i, j, l);
                    if (G->rotb && base_of(G, i, j) * G->rp != sg)
                        continue;
                    rc = ts_lwi_seg(L, t, G->rotb ? bslot[0] : bw + sg * bslot_b, w, G->cols * kv * es);
                }
            }
    for (uint32_t j = 0; w && s.C && j < G->fn && rc == TS_OK; j++) {
        float *bias = w + cdiv(bslot_b, 4);
        for (uint64_t o = 0; o < G->cols; o++)
            bias[o] = j * G->cols + o < s.N ? ts_lwi_value(s.C, n->in[2], j * G->cols + o) : 0.0f;
        for (uint32_t i = 0; i < G->fm && rc == TS_OK; i++)
            rc = ts_lwi_seg(L, tile_of(G, i, j, 0), baddr, bias, G->cols * 4);
    }
    ts_free(w);
    if (rc != TS_OK)
        return rc;

    /* A into the plan's layout: row r of block i, k of the tile's range (or of slot k's slice); a
     * Conv's input channels of the tile's range over its pixels, then turned into rows of pixels */
    if (s.conv) { /* the channel-major buffer receives while x's holders send: apart from x's elements */
        uint64_t cbuf = ts_lwi_talloc_apart(L, G->rows * (G->rota ? G->kp : G->kt) * 4, (const uint64_t(*)[2])av, 1);
        for (uint32_t k = 0; k < (G->rota ? G->rp : 1) && rc == TS_OK; k++)
            rc = conv_rows(L, G, x, tn, sc, cbuf, G->rota ? (int)k : -1, G->rota ? aslot[k] : abuf,
                           G->rota ? G->kp : G->kt);
    }
    for (uint32_t k = 0; !s.conv && k < (G->rota ? G->rp : 1) && rc == TS_OK; k++) {
        for (uint32_t t = 0; t < L->T; t++)
            sc->lo[t] = sc->hi[t] = 0, sc->nr[t] = 0;
        for (uint32_t l = 0; l < G->fk; l++)
            for (uint32_t i = 0; i < G->fm; i++)
                for (uint32_t j = 0; j < G->fn; j++) {
                    uint32_t t = tile_of(G, i, j, l);
                    uint64_t len = G->rota ? slice_k(G, l, base_of(G, i, j) * G->rp + k, &ks)
                                           : slice_k(G, l, 0, &ks) ? umin(G->K, (uint64_t)l * G->kt + G->kt) - ks : 0;
                    uint64_t r = rows_of(G, i);
                    if (!len || !r)
                        continue;
                    sc->lo[t] = i * G->rows * G->K + ks;
                    sc->hi[t] = sc->lo[t] + len;
                    sc->nr[t] = (uint32_t)r;
                }
        L->into = G->rota ? aslot[k] : abuf;
        rc = ts_lwi_gather(L, x, tn, sc->lo, sc->hi, sc->nr, G->K, G->rota ? G->kp : G->kt, true, sc->where);
        L->into = 0;
    }
    if (rc != TS_OK)
        return rc;

    /* the steps */
    int *cur = ts_calloc(tn, sizeof *cur);
    uint64_t *done = ts_calloc(tn, sizeof *done); /* steps computed, per tile */
    uint32_t *par = ts_calloc((size_t)tn * G->steps * 6, sizeof *par);
    size_t *ent = ts_calloc((size_t)tn * 8, sizeof *ent); /* per tile and kind of step: its routine + 1 */
    uint32_t *prv = ts_calloc(tn, sizeof *prv), *nxt = ts_calloc(tn, sizeof *nxt);
    uint64_t *from = ts_calloc(tn, sizeof *from), *words = ts_calloc(tn, sizeof *words);
    if (!cur || !done || !par || !ent || !prv || !nxt || !from || !words)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++)
        cur[t] = -1;
    for (uint32_t st = 0; st < G->steps && rc == TS_OK; st++) {
        for (uint32_t l = 0; l < G->fk; l++)
            for (uint32_t i = 0; i < G->fm; i++)
                for (uint32_t j = 0; j < G->fn; j++) {
                    uint32_t t = tile_of(G, i, j, l), sg = sigma_of(G, i, j, st);
                    uint64_t kv = slice_k(G, l, sg, &ks), r = rows_of(G, i), cv = cols_of(G, j);
                    if (!kv || !r || !cv)
                        continue;
                    int o = cur[t] < 0 ? 0 : 1 - cur[t];
                    mm_args m = {.rows = (uint32_t)r, .nq = (uint32_t)cdiv(cv, U), .kp = (uint32_t)(kv / per),
                                 .nq_real = cv, .units = U, .half = s.half,
                                 .a = G->rota ? aslot[st % (G->rp + 1)] : abuf + (uint64_t)sg * G->kp * es,
                                 .a_stride = (G->rota ? G->kp : G->kt) * es,
                                 .w = G->rotb ? bslot[st % 2] : bw + sg * bslot_b,
                                 .bias = cur[t] < 0 && l == 0 ? baddr : 0, .out = obuf[o],
                                 .out_row = (int64_t)(G->cols * 4), .out_q = (int64_t)(U * 4), .out_u = 4,
                                 .acc = cur[t] < 0 ? 0 : obuf[cur[t]], .acc_row = (int64_t)(G->cols * 4)};
                    if (s.half && ++done[t] == ne0) { /* f16's last step: rounded to halves, stored in pairs */
                        m.out16 = true;
                        m.out = yout;
                        m.out_row = (int64_t)(G->cols * 2);
                        m.out_q = (int64_t)(U * 2);
                        m.out_u = 2;
                    }
                    uint32_t *pv = &par[((size_t)t * G->steps + st) * 6];
                    pv[0] = (uint32_t)m.a, pv[1] = (uint32_t)m.w, pv[2] = (uint32_t)m.out;
                    pv[3] = (uint32_t)m.acc, pv[4] = (uint32_t)m.bias, pv[5] = m.kp;
                    size_t *e = &ent[(size_t)t * 8 + (m.bias ? 1 : 0) + (m.acc ? 2 : 0) + (m.out16 ? 4 : 0)];
                    if (!*e) {
                        m.tab = true;
                        *e = L->tiles[t].wrk.n + 1;
                        ts_lwi_emit_mm(L, t, &m);
                        W(t, EXIT, 0, 0, 0);
                    }
                    ts_lwi_run_all_m0(L, t, *e - 1, ptab + (uint64_t)st * 24);
                    cur[t] = o;
                }
        ts_lwi_sync_all(L);
        if (st + 1 == G->steps)
            break;
        for (int op = 0; op < 2; op++) { /* shift A along j, then B along i */
            bool a = op == 0;
            if (a ? !G->rota : !G->rotb)
                continue;
            memset(words, 0, tn * sizeof *words);
            for (uint32_t l = 0; l < G->fk; l++)
                for (uint32_t i = 0; i < G->fm; i++)
                    for (uint32_t j = 0; j < G->fn; j++) {
                        uint32_t t = tile_of(G, i, j, l);
                        uint32_t g0 = a ? j / G->ft * G->ft : i / G->ft * G->ft, p = a ? j % G->ft : i % G->ft;
                        uint32_t pp = g0 + (p + G->ft - 1) % G->ft, pn = g0 + (p + 1) % G->ft;
                        prv[t] = a ? tile_of(G, i, pp, l) : tile_of(G, pp, j, l);
                        nxt[t] = a ? tile_of(G, i, pn, l) : tile_of(G, pn, j, l);
                        words[t] = (a ? rows_of(G, i) * G->kp : cols_of(G, j) ? G->cols * G->kp : 0) * es / 4;
                        from[t] = a ? aslot[st % (G->rp + 1)] : bslot[st % 2];
                    }
            shift(L, tn, prv, nxt, from, a ? aslot[(st + G->rp) % (G->rp + 1)] : bslot[(st + 1) % 2], words);
        }
    }
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++)
        rc = ts_lwi_seg(L, t, ptab, &par[(size_t)t * G->steps * 6], (uint64_t)G->steps * 24);
    /* the partial-sum tree over l */
    for (uint32_t d = 1; d < G->fk && rc == TS_OK; d *= 2) {
        memset(words, 0, tn * sizeof *words);
        for (uint32_t l = d; l < G->fk; l += 2 * d)
            for (uint32_t i = 0; i < G->fm; i++)
                for (uint32_t j = 0; j < G->fn; j++) {
                    uint32_t t = tile_of(G, i, j, l), r = tile_of(G, i, j, l - d);
                    if (cur[t] < 0 || !rows_of(G, i) || !cols_of(G, j))
                        continue;
                    words[r] = rows_of(G, i) * G->cols;
                    from[r] = t; /* the receiver's sender */
                }
        for (uint32_t r = 0; r < tn; r++)
            if (words[r]) {
                S(r, SETZI, RM(5), (int32_t)obuf[1 - cur[r]], 0);
                S(r, SETZI, RM(6), (int32_t)from[r], 0);
                S(r, RECV, RM(5), RM(6), (int32_t)words[r]);
            }
        for (uint32_t r = 0; r < tn; r++)
            if (words[r]) {
                uint32_t t = (uint32_t)from[r];
                S(t, SETZI, RM(5), (int32_t)obuf[cur[t]], 0);
                S(t, SETZI, RM(6), (int32_t)r, 0);
                S(t, SEND, RM(5), RM(6), (int32_t)words[r]);
            }
        for (uint32_t r = 0; r < tn; r++)
            if (words[r])
                S(r, RXWAIT, 0, 0, 0);
        ts_lwi_sync_all(L);
        /* the receivers add: every worker a block of ceil(words / workers), no overlap (the
         * buffers are padded to whole blocks) */
        for (uint32_t r = 0; r < tn; r++) {
            if (!words[r])
                continue;
            uint64_t bw_ = cdiv(words[r], Wk);
            size_t entry = L->tiles[r].wrk.n;
            W(r, GET, RM(1), 2, 0);
            W(r, MULI, RM(1), RM(1), (int32_t)(bw_ * 4));
            W(r, SETZI, RM(2), (int32_t)obuf[cur[r]], 0);
            W(r, ADD, RM(2), RM(2), RM(1));
            W(r, SETZI, RM(3), (int32_t)obuf[1 - cur[r]], 0);
            W(r, ADD, RM(3), RM(3), RM(1));
            W(r, SETZI, RM(4), (int32_t)bw_, 0);
            W(r, RPT, RM(4), 4, 0);
            W(r, LD32, RA(0), RM(2), 0);
            W(r, LD32STEP, RA(1), RM(3), 4);
            W(r, F32ADD, RA(0), RA(0), RA(1));
            W(r, ST32STEP, RA(0), RM(2), 4);
            W(r, EXIT, 0, 0, 0);
            ts_lwi_run_all(L, r, entry);
        }
        ts_lwi_sync_all(L);
    }
    ts_free(cur);
    ts_free(done);
    ts_free(par);
    ts_free(ent);
    ts_free(prv);
    ts_free(nxt);
    ts_free(from);
    ts_free(words);
    if (rc != TS_OK)
        return rc;
    ts_lwi_use_tiles(L, tn);
    if (s.conv) {
        /* the l = 0 tiles turn their block channel-major: channels over the workers */
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, 0);
                uint64_t r = rows_of(G, i), cv = cols_of(G, j);
                if (!r || !cv)
                    continue;
                uint32_t rw = (uint32_t)cdiv(cv, L->workers);
                size_t entry = L->tiles[t].wrk.n;
                ts_lwi_emit_start_row(L, t, (uint32_t)cv, rw);
                W(t, SHLI, RM(2), RM(1), 2);
                W(t, SETZI, RM(4), (int32_t)obuf[fin], 0);
                W(t, ADD, RM(2), RM(2), RM(4));
                W(t, MULI, RM(3), RM(1), (int32_t)(G->rows * 4));
                W(t, SETZI, RM(4), (int32_t)yout, 0);
                W(t, ADD, RM(3), RM(3), RM(4));
                W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
                W(t, SETZI, RM(5), (int32_t)r, 0);
                size_t ch = W(t, MOV, RM(6), RM(2), 0);
                W(t, RPT, RM(5), 2, 0);
                W(t, LD32STEP, RA(0), RM(6), (int32_t)(G->cols * 4));
                W(t, ST32STEP, RA(0), RM(3), 4);
                W(t, ADDI, RM(2), RM(2), 4);
                W(t, ADDI, RM(3), RM(3), (int32_t)((G->rows - r) * 4));
                W(t, BRNZDEC, RM(1), (int32_t)ch, 0);
                W(t, EXIT, 0, 0, 0);
                ts_lwi_run_all(L, t, entry);
            }
        ts_lwi_sync_all(L);
        /* channels of block j ("channels" cb = cols), pixels of block i (pb = rows) */
        lw_place *o = &L->pl[n->out[0]];
        *o = (lw_place){.ntiles = G->fm * G->fn, .chunk = G->rows * G->cols, .addr = yout, .es = 4};
        if (G->fm > 1 || G->rows != G->M) {
            o->inner = G->M;
            o->cb = G->cols;
            o->pb = G->rows;
            o->nrb = G->fm;
        }
        return TS_OK;
    }
    /* the output on the l = 0 tiles: rows of block i ("channels"), columns of block j ("pixels") */
    lw_place *o = &L->pl[n->out[0]];
    *o = (lw_place){.ntiles = G->fm * G->fn, .chunk = G->rows * G->cols, .addr = s.half ? yout : obuf[fin],
                    .es = (uint32_t)es};
    if (G->fn > 1 || G->cols != G->N) {
        o->inner = G->N;
        o->cb = G->rows;
        o->pb = G->cols;
        o->nrb = G->fn;
    }
    return TS_OK;
}
