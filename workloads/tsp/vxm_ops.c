/* workloads/tsp/vxm_ops.c — Relu, Add, MaxPool and GlobalAveragePool on the VXM (see lower_tsp.h,
 * docs/lowering-tsp.md).
 *
 * Each output vector is one group: its inputs read from the west MEM to the VXM, a short chain of
 * ALU operations through the latches, the result written back to the west MEM. A group goes at
 * the first cycle at which its inputs are ready and every reservation is free (lt_search).
 */
#include "workloads/tsp/lower_tsp_int.h"

#include "core/alloc.h"

/* The first cycle at which vector v of x can reach the VXM. */
static uint64_t start_lb(const lt *L, const tens *x, uint64_t v)
{
    uint32_t mem, word;
    lt_slot(L, x, v, &mem, &word);
    return x->ready[v] + L->tg->d_func.read + (L->tg->pos_vxm - lt_mem_pos(L, mem));
}

/* ---- Relu and Add ---- */

/* Elementwise over the vectors of y: out = relu(a) or out = adds(a, b) [relu]. */
typedef struct elem_arg {
    int op;
    tens *a, *b, *y;
    bool relu;
    uint64_t v;
} elem_arg;

static bool try_elem(lt *L, const void *arg, uint64_t A, uint64_t *w)
{
    const elem_arg *e = arg;
    const ts_tsp_regs *R = &L->tg->reg;
    uint32_t tag = L->tag % 65535 + 1, mem, word;
    val va, vb, r1, r2;
    int so;
    lt_slot(L, e->a, e->v, &mem, &word);
    if (!lt_vin_w(L, mem, word, A, tag, e->a->ready[e->v], &va))
        return false;
    uint64_t tb;
    if (e->op == TS_OP_RELU) {
        if (!lt_vop(L, LT_RELU, R->i8, 0, A, &va, NULL, P_FROMV_W, 1, tag, &r1, &so))
            return false;
        tb = r1.t;
    } else {
        uint32_t amem = mem;
        lt_slot(L, e->b, e->v, &mem, &word);
        if (!lt_vin_w2(L, mem, word, A, tag, e->b->ready[e->v], &va, amem, &vb))
            return false;
        if (e->relu) {
            if (!lt_vop(L, LT_ADDS, R->i8, 0, A, &va, &vb, -1, 0, tag, &r1, NULL) ||
                !lt_vop(L, LT_RELU, R->i8, 0, r1.t, &r1, NULL, P_FROMV_W, 1, tag, &r2, &so))
                return false;
            tb = r2.t;
        } else {
            if (!lt_vop(L, LT_ADDS, R->i8, 0, A, &va, &vb, P_FROMV_W, 1, tag, &r1, &so))
                return false;
            tb = r1.t;
        }
    }
    lt_slot(L, e->y, e->v, &mem, &word);
    if (!lt_wr(L, mem, word, tb, L->tg->pos_vxm, WEST, so, tag, e->y->avail, w))
        return false;
    L->tag = tag;
    return true;
}

/* What every cycle of an elementwise group needs (lt_need): its write, its reads, its ALUs. */
static void elem_need(const lt *L, const elem_arg *e, lt_need *n)
{
    uint32_t am, aw, mem, word, dadd = lt_vop_lat(L, LT_ADDS), drelu = lt_vop_lat(L, LT_RELU);
    int64_t tb = e->op == TS_OP_RELU ? drelu : e->relu ? dadd + drelu : dadd;
    *n = (lt_need){0};
    lt_slot(L, e->y, e->v, &mem, &word);
    lt_need_wr(L, n, mem, word, tb, L->tg->pos_vxm, WEST, e->y->avail);
    lt_slot(L, e->a, e->v, &am, &aw);
    lt_need_vin(L, n, am, aw, 0);
    if (e->op == TS_OP_RELU) {
        lt_need_vop(L, n, LT_RELU, 0, P_FROMV_W, 1);
        return;
    }
    lt_slot(L, e->b, e->v, &mem, &word);
    lt_need_vin2(L, n, mem, word, 0, true, am);
    lt_need_vop(L, n, LT_ADDS, 0, e->relu ? -1 : P_FROMV_W, 1);
    if (e->relu)
        lt_need_vop(L, n, LT_RELU, dadd, P_FROMV_W, 1);
}

static ts_status sched_elem(lt *L, const ts_graph_node *nd, tens *a, tens *b, tens *y, bool relu,
                            ts_lower_tsp_layer *ly)
{
    uint64_t n = (uint64_t)y->P * y->T, prev = 0;
    lt_need *need = ts_malloc(sizeof *need);
    if (!need)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (uint64_t v = 0; v < n; v++) {
        elem_arg e = {.op = nd->op, .a = a, .b = b, .y = y, .relu = relu, .v = v};
        uint64_t A = start_lb(L, a, v), w;
        if (b && start_lb(L, b, v) > A)
            A = start_lb(L, b, v);
        if (L->mono && prev > A)
            A = prev;
        elem_need(L, &e, need);
        ts_status rc = lt_search(L, try_elem, &e, need, &A, &w, nd, false);
        if (rc != TS_OK) {
            ts_free(need);
            return rc;
        }
        prev = A;
        y->ready[v] = w + L->tg->d_func.write + 1;
        if (L->rdmax > a->last_read)
            a->last_read = L->rdmax;
        if (b && L->rdmax > b->last_read)
            b->last_read = L->rdmax;
        lt_span(ly, A, w);
        ly->passes++;
    }
    ts_free(need);
    return TS_OK;
}

/* Relu (unless fused into the product before it) or Add (with a lone Relu after it fused). */
ts_status lt_lower_elem(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    if (nd->op == TS_OP_RELU && !L->t[nd->in[0]].placed) {
        /* fused into the product before it */
        ly->first = ly->last = 0;
        return TS_OK;
    }
    tens *a = &L->t[nd->in[0]], *b = nd->op == TS_OP_ADD ? &L->t[nd->in[1]] : NULL;
    if (!a->placed || (b && !b->placed))
        return ts_lower_fail(L->err, nd, "an input is not an int8 activation the lowering placed");
    if (b && (a->P != b->P || a->C != b->C))
        return ts_lower_fail(L->err, nd, "the TSP lowering takes two tensors of one shape (no broadcast)");
    int out = nd->out[0];
    int fu = nd->op == TS_OP_ADD ? lt_fused_relu(L, out) : -1;
    int yid = fu >= 0 ? ts_graph_get_node(L->g, fu)->out[0] : out;
    ts_status rc = lt_place(L, yid, a->P, a->C, nd, false, lt_bank_pref(L, a));
    if (rc != TS_OK)
        return rc;
    L->t[yid].nonneg = nd->op == TS_OP_RELU || fu >= 0;
    if ((rc = sched_elem(L, nd, a, b, &L->t[yid], fu >= 0, ly)) != TS_OK)
        return rc;
    lt_release(L, nd->in[0]);
    if (b && nd->in[1] != nd->in[0])
        lt_release(L, nd->in[1]);
    return TS_OK;
}

/* ---- MaxPool ---- */

/* MaxPool of non-negative int8 (exact for values in 0..127): a chain through the ALU latches over
 * the window's vectors win[0..nwin-1] into vector v of y. A window of 2 or 3 vectors takes
 * max(m, x) = x + relu(m - x), 3 operations a step; a larger one runs offset by -128 (the constant
 * in word kword of the east MEM): M = m - 128 lies in -128..-1, so subs(M, x) = relu(m - x) - 128
 * saturates exactly where m < x, and M' = subs(M, x) + x = max(m, x) - 128: 2 operations a step,
 * one to offset x0 and a mask with 0x7f to take the offset off (2 n instead of 3 (n - 1)). */
typedef struct pool_arg {
    tens *x, *y;
    const uint64_t *win;
    uint32_t nwin, kword;
    uint64_t v;
} pool_arg;

/* The offset chain from a window of this many vectors on (2 n operations against 3 (n - 1)). */
#define POOL_OFFSET_MIN 4

/* The offset chain at cycle A (pool_arg): *m the result, on stream *so. */
static bool pool_offset(lt *L, const pool_arg *a, uint64_t A, uint32_t tag, val *m, int *so)
{
    const ts_tsp_regs *R = &L->tg->reg;
    tens *x = a->x;
    uint32_t mem, word;
    val x0, k, d, xi, M;
    lt_slot(L, x, a->win[0], &mem, &word);
    if (!lt_byte_in(L, a->kword, A, tag, &k) || !lt_vin_w(L, mem, word, A, tag, x->ready[a->win[0]], &x0) ||
        !lt_vop(L, LT_ADD, R->i8, 0, A, &x0, &k, -1, 0, tag, &M, NULL))
        return false;
    for (uint32_t i = 1; i < a->nwin; i++) {
        lt_slot(L, x, a->win[i], &mem, &word);
        if (!lt_vin_w(L, mem, word, M.t, tag, x->ready[a->win[i]], &xi) ||
            !lt_vop(L, LT_SUBS, R->i8, 0, M.t, &M, &xi, -1, 0, tag, &d, NULL) ||
            !lt_vin_w(L, mem, word, d.t, tag, x->ready[a->win[i]], &xi) ||
            !lt_vop(L, LT_ADD, R->i8, 0, d.t, &d, &xi, -1, 0, tag, &M, NULL))
            return false;
    }
    return lt_vop(L, LT_MASK, R->i8, 0x7f, M.t, &M, NULL, P_FROMV_W, 1, tag, m, so);
}

/* Step i >= 1 of the chain at cycle t: m = x_i + relu(m - x_i), x_i read twice, so the running
 * maximum waits in a latch for one cycle only (m starts as x0, read from MEM); the last step's
 * result goes to a stream (*so). */
static bool pool_step(lt *L, const pool_arg *a, uint32_t i, uint64_t t, uint32_t tag, val *m, int *so)
{
    const ts_tsp_regs *R = &L->tg->reg;
    tens *x = a->x;
    uint32_t mem, word, mi, wi;
    val xi, d, r, x0;
    lt_slot(L, x, a->win[0], &mem, &word);
    lt_slot(L, x, a->win[i], &mi, &wi);
    if (i == 1) {
        if (!lt_vin_w(L, mem, word, t, tag, x->ready[a->win[0]], &x0) ||
            !lt_vin_w2(L, mi, wi, t, tag, x->ready[a->win[i]], &x0, mem, &xi) ||
            !lt_vop(L, LT_SUBS, R->i8, 0, t, &x0, &xi, -1, 0, tag, &d, NULL))
            return false;
    } else if (!lt_vin_w(L, mi, wi, t, tag, x->ready[a->win[i]], &xi) ||
               !lt_vop(L, LT_SUBS, R->i8, 0, t, m, &xi, -1, 0, tag, &d, NULL)) {
        return false;
    }
    bool last = i + 1 == a->nwin;
    return lt_vop(L, LT_RELU, R->i8, 0, d.t, &d, NULL, -1, 0, tag, &r, NULL) &&
           lt_vin_w(L, mi, wi, r.t, tag, x->ready[a->win[i]], &xi) &&
           lt_vop(L, LT_ADDS, R->i8, 0, r.t, &xi, &r, last ? P_FROMV_W : -1, 1, tag, m, so);
}

static bool try_pool(lt *L, const void *arg, uint64_t A, uint64_t *w)
{
    const pool_arg *a = arg;
    uint32_t tag = L->tag % 65535 + 1, mem, word;
    val m = {0}, x0; /* m is set by the chain's last step (a window has at least one vector) */
    int so = -1;
    lt_slot(L, a->x, a->win[0], &mem, &word);
    if (a->nwin >= POOL_OFFSET_MIN) {
        if (!pool_offset(L, a, A, tag, &m, &so))
            return false;
    } else if (a->nwin == 1) {
        if (!lt_vin_w(L, mem, word, A, tag, a->x->ready[a->win[0]], &x0) ||
            !lt_vop(L, LT_RELU, L->tg->reg.i8, 0, A, &x0, NULL, P_FROMV_W, 1, tag, &m, &so))
            return false;
    } else {
        uint64_t t = A;
        for (uint32_t i = 1; i < a->nwin; i++) {
            if (!pool_step(L, a, i, t, tag, &m, &so))
                return false;
            t = m.t;
        }
    }
    uint32_t om, ow;
    lt_slot(L, a->y, a->v, &om, &ow);
    if (!lt_wr(L, om, ow, m.t, L->tg->pos_vxm, WEST, so, tag, a->y->avail, w))
        return false;
    L->tag = tag;
    return true;
}

/* What every cycle of a MaxPool chain needs (lt_need): its write, then step by step as pool_step
 * takes them its reads and ALUs. */
static void pool_need(const lt *L, const pool_arg *a, lt_need *n)
{
    uint32_t mem, word, mi, wi, dsub = lt_vop_lat(L, LT_SUBS), drelu = lt_vop_lat(L, LT_RELU),
                                dadd = lt_vop_lat(L, LT_ADDS);
    *n = (lt_need){0};
    lt_slot(L, a->y, a->v, &mem, &word);
    if (a->nwin >= POOL_OFFSET_MIN) {
        int64_t dmask = lt_vop_lat(L, LT_MASK), t = dadd;
        lt_need_wr(L, n, mem, word, dadd + (int64_t)(a->nwin - 1) * (dsub + dadd) + dmask, L->tg->pos_vxm, WEST,
                   a->y->avail);
        lt_need_group(L, n, P_E2V_W, 1, 0, L->tg->pos_vxm);
        lt_slot(L, a->x, a->win[0], &mem, &word);
        lt_need_vin(L, n, mem, word, 0);
        lt_need_vop(L, n, LT_ADD, 0, -1, 0);
        for (uint32_t i = 1; i < a->nwin; i++) {
            lt_slot(L, a->x, a->win[i], &mi, &wi);
            lt_need_vin(L, n, mi, wi, t);
            lt_need_vop(L, n, LT_SUBS, t, -1, 0);
            lt_need_vin(L, n, mi, wi, t + dsub);
            lt_need_vop(L, n, LT_ADD, t + dsub, -1, 0);
            t += dsub + dadd;
        }
        lt_need_vop(L, n, LT_MASK, t, P_FROMV_W, 1);
        return;
    }
    lt_need_wr(L, n, mem, word, a->nwin == 1 ? drelu : (int64_t)(a->nwin - 1) * (dsub + drelu + dadd),
               L->tg->pos_vxm, WEST, a->y->avail);
    lt_slot(L, a->x, a->win[0], &mem, &word);
    if (a->nwin == 1) {
        lt_need_vin(L, n, mem, word, 0);
        lt_need_vop(L, n, LT_RELU, 0, P_FROMV_W, 1);
        return;
    }
    int64_t t = 0;
    for (uint32_t i = 1; i < a->nwin; i++) {
        lt_slot(L, a->x, a->win[i], &mi, &wi);
        if (i == 1) {
            lt_need_vin(L, n, mem, word, t);
            lt_need_vin2(L, n, mi, wi, t, true, mem);
        } else {
            lt_need_vin(L, n, mi, wi, t);
        }
        lt_need_vop(L, n, LT_SUBS, t, -1, 0);
        lt_need_vop(L, n, LT_RELU, t + dsub, -1, 0);
        lt_need_vin(L, n, mi, wi, t + dsub + drelu);
        lt_need_vop(L, n, LT_ADDS, t + dsub + drelu, i + 1 == a->nwin ? P_FROMV_W : -1, 1);
        t += dsub + drelu + dadd;
    }
}

/* The input vectors of output pixel (oy, ox) of image b, channel tile c, in window order (at most 64). */
static uint32_t pool_window(const ts_geom_window *w, const tens *x, int64_t b, int64_t oy, int64_t ox, uint32_t c,
                            uint64_t *win)
{
    uint32_t nwin = 0;
    for (int64_t ky = 0; ky < w->kh; ky++)
        for (int64_t kx = 0; kx < w->kw; kx++) {
            int64_t iy, ix;
            if (ts_geom_window_tap(w, oy, ox, ky, kx, &iy, &ix) && nwin < 64)
                win[nwin++] = (uint64_t)((b * w->H + iy) * w->W + ix) * x->T + c;
        }
    return nwin;
}

static ts_status sched_pool(lt *L, const ts_graph_node *nd, const ts_geom_window *g, tens *x, tens *y,
                            ts_lower_tsp_layer *ly)
{
    uint64_t win[64], prev = 0;
    uint32_t kword = 0;
    if (g->kh * g->kw >= POOL_OFFSET_MIN) {
        ts_status rc = lt_byte_const(L, nd, 0x80, &kword);
        if (rc != TS_OK)
            return rc;
    }
    lt_need *need = ts_malloc(sizeof *need);
    if (!need)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t px = 0; px < g->N * g->Ho * g->Wo; px++)
        for (uint32_t c = 0; c < y->T; c++) {
            int64_t b = px / (g->Ho * g->Wo), oy = px / g->Wo % g->Ho, ox = px % g->Wo;
            uint32_t nwin = pool_window(g, x, b, oy, ox, c, win);
            if (!nwin) {
                ts_free(need);
                return ts_lower_fail(L->err, nd, "a window holds no input pixel");
            }
            pool_arg a = {.x = x, .y = y, .win = win, .nwin = nwin, .kword = kword, .v = (uint64_t)px * y->T + c};
            uint64_t A = 0, w;
            for (uint32_t i = 0; i < nwin; i++)
                if (start_lb(L, x, win[i]) > A)
                    A = start_lb(L, x, win[i]);
            if (L->mono && prev > A)
                A = prev;
            pool_need(L, &a, need);
            ts_status rc = lt_search(L, try_pool, &a, need, &A, &w, nd, false);
            if (rc != TS_OK) {
                ts_free(need);
                return rc;
            }
            prev = A;
            y->ready[a.v] = w + L->tg->d_func.write + 1;
            if (L->rdmax > x->last_read)
                x->last_read = L->rdmax;
            lt_span(ly, A, w);
            ly->passes++;
        }
    ts_free(need);
    return TS_OK;
}

/* MaxPool of a Relu's output (NCHW). */
ts_status lt_lower_maxpool(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    tens *x = &L->t[nd->in[0]], *y = &L->t[nd->out[0]];
    if (!x->placed || !x->nonneg)
        return ts_lower_fail(L->err, nd, "the TSP lowering takes the output of a Relu (max through subtract and relu "
                                         "is exact for 0..127 only)");
    ts_geom_window w;
    if (!ts_geom_window_of(L->g, nd, &w))
        return ts_lower_fail(L->err, nd, "the TSP lowering takes NCHW tensors");
    ts_status rc = lt_place(L, nd->out[0], (uint32_t)(w.N * w.Ho * w.Wo), (uint32_t)w.M, nd, false,
                            lt_bank_pref(L, x));
    if (rc != TS_OK)
        return rc;
    y->nonneg = true;
    y->ones = x->ones; /* the maximum of 1s (ones_lanes) */
    if ((rc = sched_pool(L, nd, &w, x, y, ly)) != TS_OK)
        return rc;
    lt_release(L, nd->in[0]);
    return TS_OK;
}

/* ---- GlobalAveragePool ---- */

/* Channel tile c of image b (hw pixels each): sum = i32(x0) + i32(x1) + ..., then i8(f32(sum) x scale). */
typedef struct gap_arg {
    tens *x, *y;
    uint32_t c, sword, b, hw;
} gap_arg;

static bool try_gap(lt *L, const void *arg, uint64_t A, uint64_t *w)
{
    const gap_arg *a = arg;
    const ts_tsp_regs *R = &L->tg->reg;
    tens *x = a->x;
    uint32_t tag = L->tag % 65535 + 1, mem, word;
    val s = {0}, xi, ci, f, mu, o, scl; /* s is set by the first input (a pool has at least one) */
    int so;
    uint64_t t = A;
    for (uint32_t i = 0; i < a->hw; i++) {
        uint64_t v = ((uint64_t)a->b * a->hw + i) * x->T + a->c;
        lt_slot(L, x, v, &mem, &word);
        if (!lt_vin_w(L, mem, word, t, tag, x->ready[v], &xi))
            return false;
        /* the sum stays in its latch until the add that meets this input's conversion, so that the
         * conversion takes another ALU (under LEAN, lower_tsp.c, the first free one would be the
         * sum's, and no start of the group would fit) */
        if (i && !lt_hold(L, &s, t + lt_vop_lat(L, LT_CVT)))
            return false;
        if (!lt_vop(L, LT_CVT, R->i32, R->i8, t, &xi, NULL, -1, 0, tag, i ? &ci : &s, NULL))
            return false;
        if (i && !lt_vop(L, LT_ADD, R->i32, 0, ci.t, &s, &ci, -1, 0, tag, &s, NULL))
            return false;
        t = s.t;
    }
    if (!lt_vop(L, LT_CVT, R->f32, R->i32, s.t, &s, NULL, -1, 0, tag, &f, NULL) ||
        !lt_scale_in(L, a->sword, f.t, tag, &scl))
        return false;
    if (!lt_vop(L, LT_MUL, R->f32, 0, f.t, &f, &scl, -1, 0, tag, &mu, NULL) ||
        !lt_vop(L, LT_CVT, R->i8, R->f32, mu.t, &mu, NULL, P_FROMV_W, 1, tag, &o, &so))
        return false;
    uint32_t om, ow;
    lt_slot(L, a->y, (uint64_t)a->b * a->y->T + a->c, &om, &ow);
    if (!lt_wr(L, om, ow, o.t, L->tg->pos_vxm, WEST, so, tag, a->y->avail, w))
        return false;
    L->tag = tag;
    return true;
}

static ts_status sched_gap(lt *L, const ts_graph_node *nd, tens *x, tens *y, ts_lower_tsp_layer *ly)
{
    uint32_t cbase, hw = x->P / y->P;
    uint64_t prev = 0;
    float sc = 1.0f / (float)hw;
    ly->scale = sc;
    ts_status rc = lt_scale_const(L, nd, sc, &cbase);
    if (rc != TS_OK)
        return rc;
    for (uint32_t b = 0; b < y->P; b++)
        for (uint32_t c = 0; c < y->T; c++) {
            gap_arg a = {.x = x, .y = y, .c = c, .sword = cbase, .b = b, .hw = hw};
            uint64_t A = 0, w;
            for (uint32_t i = 0; i < hw; i++) {
                uint64_t v = ((uint64_t)b * hw + i) * x->T + c;
                if (start_lb(L, x, v) > A)
                    A = start_lb(L, x, v);
            }
            if (L->mono && prev > A)
                A = prev;
            if ((rc = lt_search(L, try_gap, &a, NULL, &A, &w, nd, false)) != TS_OK)
                return rc;
            prev = A;
            if (L->rdmax > x->last_read)
                x->last_read = L->rdmax;
            y->ready[(uint64_t)b * y->T + c] = w + L->tg->d_func.write + 1;
            lt_span(ly, A, w);
            ly->passes++;
        }
    return TS_OK;
}

/* GlobalAveragePool: one output pixel per image, scale 1 / pixels of an image. */
ts_status lt_lower_gap(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    tens *x = &L->t[nd->in[0]];
    ts_geom_window gw;
    if (!x->placed)
        return ts_lower_fail(L->err, nd, "its input is not placed");
    if (!ts_geom_window_of(L->g, nd, &gw))
        return ts_lower_fail(L->err, nd, "the TSP lowering takes NCHW tensors");
    ts_status rc = lt_place(L, nd->out[0], (uint32_t)gw.N, x->C, nd, false, lt_bank_pref(L, x));
    if (rc != TS_OK || (rc = sched_gap(L, nd, x, &L->t[nd->out[0]], ly)) != TS_OK)
        return rc;
    lt_release(L, nd->in[0]);
    return TS_OK;
}
