/* workloads/wse/lower_wse_routes.c — colours and the routes between stages.
 *
 * A stage uses one of four colour sets of four colours (4 set .. 4 set + 3): two for the partial
 * sums going north, alternating by row (lw_rcol), two for the row chain going east, alternating by
 * column (lw_gcol). Its input colour is its predecessor's output colour. A stage's own routes stay
 * in its rectangle and are emitted with its code; the routes here are the pass-through routes of
 * PEs outside every stage that carry a skip path down, along and up, or the main stream past
 * columns a main stage left empty.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

void ts_lww_colours(lw *L)
{
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        const lw_stage *pv = s->prev >= 0 ? &L->st[s->prev] : NULL;
        /* a main stage takes the set (0 or 1) its input does not use, a skip stage the set (2 or
         * 3) likewise; a stage's input colour is its predecessor's output colour */
        s->set = !pv ? 0 : !s->lane ? (pv->set == 0 ? 1 : 0) : (pv->set == 2 ? 3 : 2);
        s->cin = !pv ? 0 : !s->lane && lw_join_spread(pv) ? lw_join_east(pv) : pv->cout;
        s->cout = s->fold ? lw_rcol(s, 0) : lw_gcol(s, s->w - 1); /* a folded attention's: up its last column */
        if (s->kind == K_JOIN || s->kind == K_CONCAT)
            s->cskip = L->st[s->prev2].cout;
    }
}

static int add_pass(lw *L, lw_pass **v, size_t *n, size_t *cap, uint32_t x, uint32_t y, uint32_t colour, int rx,
                    int tx)
{
    if (ts_grow((void **)v, cap, *n + 1, sizeof **v))
        return -1;
    (*v)[(*n)++] = (lw_pass){.pe = y * L->t->width + x, .colour = (int)colour, .rx = rx, .tx = tx};
    return 0;
}

static int pass_cmp(const void *a, const void *b)
{
    const lw_pass *x = a, *y = b;
    return x->pe < y->pe ? -1 : x->pe > y->pe ? 1 : x->colour - y->colour;
}

/* Pass-through routes of every skip path: down the column of the fork's last PE, east along
 * row Hm to the skip path's first stage; from its last stage east along row Hm to the join's
 * column, up to the join's first PE; and along row 0 over the columns a main stage left empty
 * when a skip path below was wider than the main path above it. */
ts_status ts_lww_skip_routes(lw *L, uint32_t Hm, lw_pass **v, size_t *n)
{
    size_t cap = 0;
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        if (s->lane && s->prev >= 0 && !L->st[s->prev].lane) { /* first stage of a skip path */
            const lw_stage *f = &L->st[s->prev];
            uint32_t x = f->x + f->w - 1;
            /* a spread join's row comes down from its bottom PE, passed down from PE to PE above it */
            const uint32_t top = lw_join_spread(f) ? f->y0 + (f->ko - 1) * f->kstep : 0;
            for (uint32_t y = 1; y < Hm; y++) {
                const uint32_t q = top && y < top ? (y - f->y0) / f->kstep + 1 : 0;
                if (top && y <= top && (y - f->y0) % f->kstep == 0) /* its PEs route it */
                    continue;
                if (add_pass(L, v, n, &cap, x, y, q ? lw_rcol(f, q) : f->cout, P_N, P_S))
                    return TS_ENOMEM;
            }
            if (add_pass(L, v, n, &cap, x, Hm, f->cout, P_N, P_E))
                return TS_ENOMEM;
        }
        if (!s->lane && s->prev >= 0) { /* a main stage pushed east by a wide skip path */
            const lw_stage *pv = &L->st[s->prev];
            for (uint32_t x = pv->x + pv->w; x < s->x; x++)
                if (add_pass(L, v, n, &cap, x, 0, s->cin, P_W, P_E))
                    return TS_ENOMEM;
        }
        if (s->kind == K_JOIN || s->kind == K_CONCAT) {
            const lw_stage *k = &L->st[s->prev2];
            for (uint32_t x = k->x + k->w; x < s->x; x++)
                if (add_pass(L, v, n, &cap, x, Hm, k->cout, P_W, P_E))
                    return TS_ENOMEM;
            if (add_pass(L, v, n, &cap, s->x, Hm, k->cout, P_W, P_N))
                return TS_ENOMEM;
            for (uint32_t y = Hm - 1; y >= 1; y--) /* a spread join's PEs route it themselves */
                if (!(lw_join_spread(s) && y >= s->y0 && (y - s->y0) % s->kstep == 0 &&
                      (y - s->y0) / s->kstep < s->ko) &&
                    add_pass(L, v, n, &cap, s->x, y, k->cout, P_S, P_N))
                    return TS_ENOMEM;
        }
    }
    if (*n)
        qsort(*v, *n, sizeof **v, pass_cmp);
    return TS_OK;
}
