/* workloads/tsp/sched.c — the TSP scheduler's reservation tables (see lower_tsp_int.h).
 *
 * Every instruction gets an exact cycle. The scheduler places one group of instructions at a time
 * (a weight install, one product pass, one elementwise vector) at the first cycle at which all of
 * its reservations are free, taking them with an undo log so a failed attempt leaves nothing. The
 * reservations are bitmaps over cycles:
 *   - issue slots of every queue (a MEM queue has a read slot and a write slot per cycle);
 *   - MEM banks per slice, at the cycle the bank is used (a read and a write per cycle, different
 *     banks);
 *   - VXM ALU latches: the cycles from a result's commit to its last chained read;
 *   - stream registers, by trajectory. Streams are split into pools, each carrying values in one
 *     direction between one group of producers and one group of consumers that lie on either side
 *     of a point every value passes (W MEM -> MXM, W MEM and MXM -> VXM, E MEM -> VXM, VXM -> W MEM,
 *     VXM -> E MEM). Within a pool two values can only meet if they are on the same trajectory
 *     (a value at position p at cycle t is at p +- 1 at t + 1), and then they do meet, so the
 *     reservation is one bit per trajectory: t - p eastward, t + p westward.
 * Queues issue in order, so after placement each queue's instructions are sorted by cycle and the
 * gaps filled with nop (lower_tsp.c).
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <string.h>

#include "core/alloc.h"

const lt_pool lt_pools[P_COUNT] = {
    [P_WGT] = {WEST, 0, 16},     /* W MEM -> MXM: weight rows, one iw of 16 streams */
    [P_E2V_W] = {WEST, 16, 12},  /* E MEM -> VXM: partial sums, bias, scales */
    [P_ACT] = {WEST, 28, 2},     /* W MEM -> MXM: activations */
    [P_FROMV_W] = {WEST, 30, 2}, /* VXM -> W MEM: int8 results */
    [P_W2V_E] = {EAST, 0, 20},   /* W MEM and W MXM -> VXM: activations, products */
    [P_FROMV_E] = {EAST, 20, 12},/* VXM -> E MEM: partial sums */
};

/* ---- bitmaps over cycles ---- */

/* Set or clear bit i, growing the map; -1 when out of memory. */
int lt_bput(bits *b, uint64_t i, bool v)
{
    size_t k = (size_t)(i >> 6);
    if (k >= b->nw) {
        if (!v)
            return 0;
        size_t n = b->nw ? b->nw : 64;
        while (n <= k)
            n *= 2;
        uint64_t *w = ts_realloc(b->w, n * sizeof *w);
        if (!w)
            return -1;
        memset(w + b->nw, 0, (n - b->nw) * sizeof *w);
        b->w = w;
        b->nw = n;
    }
    if (v)
        b->w[k] |= 1ull << (i & 63);
    else
        b->w[k] &= ~(1ull << (i & 63));
    return 0;
}

/* ---- the undo log and pending instructions ---- */

/* The next instruction tag (1..65535, wrapping). */
uint32_t lt_new_tag(lt *L)
{
    L->tag = L->tag % 65535 + 1;
    return L->tag;
}

/* Would taking cycle i of a queue's issue bitmap b leave no free cycle in its aligned window of
 * L->fwin cycles? Every queue keeps one, for an ifetch (ifetch.c). */
static bool window_full(const lt *L, const bits *b, uint64_t i)
{
    if (!L->fwin || (const void *)b < (const void *)L->q || (const void *)b >= (const void *)(L->q + L->nq))
        return false;
    const lq *q = &L->q[(size_t)((const char *)b - (const char *)L->q) / sizeof *L->q];
    uint64_t w0 = i / L->fwin * L->fwin;
    for (uint64_t t = w0; t < w0 + L->fwin; t++)
        if (t != i && !lt_bget(&q->issue, t) && !lt_bget(&q->wr, t))
            return false;
    return true;
}

/* Take bit i of b (logged for undo); false if it is taken or would fill a queue's fetch window. */
bool lt_take(lt *L, bits *b, uint64_t i)
{
    if (lt_bget(b, i) || window_full(L, b, i))
        return false;
    if (lt_bput(b, i, true) || ts_grow((void **)&L->u, &L->capu, L->nu + 1, sizeof *L->u)) {
        L->oom = true;
        return false;
    }
    L->u[L->nu++] = (undo){b, i};
    return true;
}

/* Give back the reservations taken since mark and drop the instructions pending since pmark. */
void lt_undo_to(lt *L, size_t mark, size_t pmark)
{
    while (L->nu > mark) {
        L->nu--;
        lt_bput(L->u[L->nu].b, L->u[L->nu].i, false);
    }
    L->npd = pmark;
}

/* A pending instruction: op with n operands a on queue q at cycle t (see E1). */
void lt_emit(lt *L, uint32_t q, uint64_t t, uint16_t op, int n, const int32_t *a)
{
    if (ts_grow((void **)&L->pd, &L->cappd, L->npd + 1, sizeof *L->pd)) {
        L->oom = true;
        return;
    }
    pend *p = &L->pd[L->npd++];
    memset(p, 0, sizeof *p);
    p->q = q;
    p->t = t;
    p->in.op = op;
    for (int i = 0; i < n; i++)
        p->in.a[i] = a[i];
}

/* Make the pending instructions and reservations permanent, counting them in the current layer. */
int lt_keep(lt *L)
{
    for (size_t i = 0; i < L->npd; i++) {
        pend *p = &L->pd[i];
        lq *q = &L->q[p->q];
        if (ts_grow((void **)&q->v, &q->cap, q->n + 1, sizeof *q->v)) {
            L->oom = true;
            return -1;
        }
        q->v[q->n++] = (rec){p->t, p->in};
        if (p->t > L->last)
            L->last = p->t;
        if (L->nlayers) {
            ts_lower_tsp_layer *y = &L->layers[L->nlayers - 1];
            y->instructions++;
            if (p->in.op == LT_READ || p->in.op == LT_WRITE)
                y->mem_bytes += L->VL;
            else if (p->in.op == LT_ABC)
                y->mxm_macs += (uint64_t)L->VL * L->VL;
            else if (p->q >= L->tg->q_vxm && p->q < L->tg->q_mxm)
                y->vxm_ops++;
        }
    }
    L->npd = 0;
    L->nu = 0;
    return 0;
}

/* Place a group at the first cycle from *t at which fit succeeds, and keep it: *t and *w (the
 * cycle of its last write) are then the group's. Gives up after GIVE_UP cycles with TS_EINTERNAL
 * "<op> '<name>': no cycle found for a group of instructions" (the node's name only if `named`). */
ts_status lt_search(lt *L, lt_fit fit, const void *arg, uint64_t *t, uint64_t *w, const ts_graph_node *nd,
                    bool named)
{
    for (uint64_t t0 = *t;; (*t)++) {
        size_t mark = L->nu, pm = L->npd;
        if (*t - t0 > GIVE_UP) {
            if (named)
                return ts_err_set(L->err, TS_EINTERNAL, "%s '%s': no cycle found for a group of instructions",
                                  ts_graph_op_name(nd->op), nd->name);
            return ts_err_set(L->err, TS_EINTERNAL, "%s: no cycle found for a group of instructions",
                              ts_graph_op_name(nd->op));
        }
        L->rdmax = 0;
        *w = 0;
        if (fit(L, arg, *t, w))
            break;
        lt_undo_to(L, mark, pm);
        if (L->oom)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    if (lt_keep(L))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

/* ---- stream registers ---- */

/* Reserve stream s of pool direction dir for a value that is at position pos at cycle t. */
bool lt_take_stream(lt *L, int dir, int s, uint64_t t, uint32_t pos)
{
    return lt_take(L, &L->diag[dir][s], lt_diag_key(dir, t, pos));
}

/* Reserve an aligned group of w streams of a pool; *s gets the first. */
bool lt_take_group(lt *L, int pool, int w, uint64_t t, uint32_t pos, int *s)
{
    int dir = lt_pools[pool].dir;
    for (int i = 0; i + w <= lt_pools[pool].n; i += w) {
        size_t mark = L->nu, pm = L->npd;
        int f = lt_pools[pool].first + i, k;
        for (k = 0; k < w && !lt_bget(&L->diag[dir][f + k], lt_diag_key(dir, t, pos)); k++)
            ;
        if (k < w)
            continue;
        for (k = 0; k < w && lt_take_stream(L, dir, f + k, t, pos); k++)
            ;
        if (k == w) {
            *s = f;
            return true;
        }
        lt_undo_to(L, mark, pm);
    }
    return false;
}

/* ---- queues ---- */

/* A queue's instructions in issue order (qsort): by cycle, a read before the write of the same cycle. */
int lt_cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->in.op == LT_WRITE) - (y->in.op == LT_WRITE);
}
