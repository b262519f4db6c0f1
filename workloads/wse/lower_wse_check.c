/* workloads/wse/lower_wse_check.c — the wait-for graph of a lowered program has no cycle.
 *
 * Every stage blocks on an empty input queue or a full output queue, so the program deadlocks
 * exactly when some set of PEs waits on itself. Three kinds of waiting are checked, before the
 * program is handed out, each a compile error naming the operators:
 *   routes   every (PE, colour) has at most one route; a colour sent to a neighbour is taken by
 *            it from the facing side; following the routes of one colour never comes back to a
 *            PE (a wavelet would circle for ever, or two stages would share a queue);
 *   stages   the stages wait on the stages they read (prev, prev2): that graph is acyclic;
 *   queues   at a fork the multicast moves a wavelet only when both paths take it, and the join
 *            takes the skip path's values only as the main path's arrive: the skip path's FIFOs
 *            must hold at least how far ahead the main path reads (its lag: a row of the forked
 *            stream, and the rows each window reaches below its output row), else the fork and
 *            the join wait on each other. The same estimate tops the FIFOs up (build).
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

/* ---- names ---- */

static void stage_name(const lw *L, int si, char *buf, size_t cap)
{
    const lw_stage *s = &L->st[si];
    if (s->node >= 0) {
        const ts_graph_node *n = ts_graph_get_node(L->g, s->node);
        snprintf(buf, cap, "%s '%s' (%s)", ts_graph_op_name(n->op), n->name, ts_lww_kind_name[s->kind]);
    } else
        snprintf(buf, cap, "the %s", ts_lww_kind_name[s->kind]);
}

/* ---- queues: what a stage takes in before it gives out ---- */

/* How far ahead of its output stage s must read its input, in values of its input: a line
 * buffer the rows its window reaches below the output row's own (kh - pt - 1, at most H - 1), an
 * average pool an image, a softmax a row; a stage that gives out row by row (a product, a join,
 * an elementwise PE) nothing beyond the row the fork's stream already counts. */
static uint64_t stage_ahead(const lw_stage *s)
{
    switch (s->kind) {
    case K_FEED:
    case K_MAXPOOL: {
        int64_t rows = s->khe - s->pt - 1 < s->H - 1 ? s->khe - s->pt - 1 : s->H - 1;
        return rows > 0 ? (uint64_t)(rows * s->W * s->C) : 0;
    }
    case K_GAP: return (uint64_t)(s->H * s->W * s->C);
    case K_SOFTMAX: return (uint64_t)s->L;
    case K_TRANSPOSE: return s->in_n;
    case K_ROPE: return (uint64_t)s->L;
    case K_ATTN: return s->in_n / (uint64_t)(s->nseq > 1 ? s->nseq : 1); /* a sequence at a time */
    default: return 0;
    }
}

/* v values of stage s's input in values of a stream of E values (the fork's), rounded up. */
static uint64_t in_fork_values(const lw_stage *s, uint64_t v, uint64_t E)
{
    return s->in_n ? (v * E + s->in_n - 1) / s->in_n : 0;
}

uint64_t ts_lww_lag(const lw *L, int from, int to)
{
    const lw_stage *f = &L->st[from];
    const uint64_t E = f->out_n;
    uint64_t lag = f->row;
    for (int i = to; i >= 0 && i != from; i = L->st[i].prev)
        lag += in_fork_values(&L->st[i], stage_ahead(&L->st[i]), E);
    return lag;
}

uint64_t ts_lww_room(const lw *L, int from, int to)
{
    const uint64_t E = L->st[from].out_n;
    uint64_t room = 0;
    for (int i = to; i >= 0 && i != from; i = L->st[i].prev)
        if (L->st[i].kind == K_FIFO)
            room += in_fork_values(&L->st[i], 2 * L->st[i].chunk, E);
    return room;
}

/* The fork a skip path starts from: follow prev from its last stage to the main lane. */
static int fork_of(const lw *L, int skip_last)
{
    int i = skip_last;
    while (i >= 0 && L->st[i].lane)
        i = L->st[i].prev;
    return i;
}

static ts_status check_joins(const lw *L)
{
    for (size_t j = 0; j < L->n; j++) {
        const lw_stage *s = &L->st[j];
        if (s->kind != K_JOIN && s->kind != K_CONCAT)
            continue;
        int f = fork_of(L, s->prev2);
        if (f < 0)
            continue;
        uint64_t lag = ts_lww_lag(L, f, s->prev), room = ts_lww_room(L, f, s->prev2);
        if (room < lag) {
            char a[200], b[200];
            stage_name(L, (int)j, a, sizeof a);
            stage_name(L, f, b, sizeof b);
            return ts_err_set(L->err, TS_EINPUT,
                              "%s and %s would wait on each other: the main path reads %llu values ahead of what it "
                              "gives out, the skip path holds %llu (a deadlock)", a, b,
                              (unsigned long long)lag, (unsigned long long)room);
        }
    }
    return TS_OK;
}

/* ---- stages: prev and prev2 form an acyclic graph ---- */

static ts_status check_stages(const lw *L)
{
    /* every stage reads stages before it in the array (the chain is built in stream order), so a
     * back or self edge is the only way to a cycle */
    for (size_t i = 0; i < L->n; i++)
        for (int q = 0; q < 2; q++) {
            int p = q ? L->st[i].prev2 : L->st[i].prev;
            if (p >= (int)i) {
                char a[200], b[200];
                stage_name(L, (int)i, a, sizeof a);
                stage_name(L, p, b, sizeof b);
                return ts_err_set(L->err, TS_EINTERNAL, "%s and %s wait on each other's output (a cycle of stages)",
                                  a, b);
            }
        }
    return TS_OK;
}

/* ---- routes ---- */

typedef struct rt {
    uint32_t pe, colour;
    int rx, tx;
} rt;

static int rt_cmp(const void *a, const void *b)
{
    const rt *x = a, *y = b;
    if (x->pe != y->pe)
        return x->pe < y->pe ? -1 : 1;
    return x->colour < y->colour ? -1 : x->colour > y->colour;
}

static const rt *rt_find(const rt *v, size_t n, uint32_t pe, uint32_t colour)
{
    rt key = {.pe = pe, .colour = colour};
    return bsearch(&key, v, n, sizeof *v, rt_cmp);
}

/* The stage whose rectangle holds PE (x, y), -1 for a PE that only passes colours through. */
static int owner(const lw *L, uint32_t x, uint32_t y)
{
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        if (x >= s->x && x < s->x + s->w && y >= s->y0 && y < s->y0 + s->h)
            return (int)i;
    }
    return -1;
}

static ts_status route_err(const lw *L, uint32_t pe, uint32_t colour, const char *what)
{
    const uint32_t W = L->t->width;
    int o = owner(L, pe % W, pe / W);
    char a[200] = "a pass-through PE";
    if (o >= 0)
        stage_name(L, o, a, sizeof a);
    return ts_err_set(L->err, TS_EINTERNAL, "colour %u at PE (%u, %u) of %s: %s", colour, pe % W, pe / W, a, what);
}

/* Follow colour c from r through its sends; a PE seen on the current path again is a cycle. */
static ts_status route_walk(const lw *L, const rt *v, size_t n, size_t at, uint8_t *mark)
{
    static const int dirs[4][3] = {{P_N, 0, -1}, {P_S, 0, 1}, {P_E, 1, 0}, {P_W, -1, 0}};
    static const int facing[4] = {P_S, P_N, P_W, P_E};
    size_t *stk = ts_malloc(n * sizeof *stk), *it = ts_calloc(n, sizeof *it), top = 0;
    if (!stk || !it) {
        ts_free(stk);
        ts_free(it);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    ts_status rc = TS_OK;
    stk[top++] = at;
    mark[at] = 1;
    while (top && !rc) {
        size_t cur = stk[top - 1];
        if (it[cur] >= 4) {
            mark[cur] = 2;
            top--;
            continue;
        }
        int d = (int)it[cur]++;
        if (!(v[cur].tx & dirs[d][0]))
            continue;
        const uint32_t W = L->t->width, x = v[cur].pe % W, y = v[cur].pe / W;
        int64_t nx = (int64_t)x + dirs[d][1], ny = (int64_t)y + dirs[d][2];
        if (nx < 0 || ny < 0 || nx >= W || ny >= L->t->height) {
            rc = route_err(L, v[cur].pe, v[cur].colour, "sent off the mesh");
            break;
        }
        const rt *nb = rt_find(v, n, (uint32_t)(ny * W + nx), v[cur].colour);
        if (!nb || !(nb->rx & facing[d])) {
            rc = route_err(L, v[cur].pe, v[cur].colour, "sent to a neighbour that does not take it from that side");
            break;
        }
        size_t ni = (size_t)(nb - v);
        if (mark[ni] == 1)
            rc = route_err(L, v[cur].pe, v[cur].colour, "its routes come back to it (a cycle of routes)");
        else if (!mark[ni]) {
            mark[ni] = 1;
            stk[top++] = ni;
        }
    }
    ts_free(stk);
    ts_free(it);
    return rc;
}

static ts_status check_routes(const lw *L, const ts_program *P)
{
    size_t n = 0, cap = 0;
    rt *v = NULL;
    ts_status rc = TS_OK;
    for (size_t i = 0; i < P->nstreams && !rc; i++) {
        const ts_stream *s = &P->streams[i];
        for (uint32_t k = 0; k < s->n && !rc; k++) {
            const ts_insn *in = &s->insn[k];
            if (in->op != WSE_OP_ROUTE)
                continue;
            if (ts_grow((void **)&v, &cap, n + 1, sizeof *v))
                rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
            else
                v[n++] = (rt){.pe = s->index, .colour = (uint32_t)in->a[0], .rx = (int)in->a[1], .tx = (int)in->a[2]};
        }
    }
    if (!rc && n)
        qsort(v, n, sizeof *v, rt_cmp);
    for (size_t i = 1; i < n && !rc; i++)
        if (!rt_cmp(&v[i - 1], &v[i]))
            rc = route_err(L, v[i].pe, v[i].colour, "two routes for one colour (two stages would share its queue)");
    uint8_t *mark = rc || !n ? NULL : ts_calloc(n, 1);
    if (!rc && n && !mark)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++)
        if (!mark[i])
            rc = route_walk(L, v, n, i, mark);
    ts_free(mark);
    ts_free(v);
    return rc;
}

/* ---- memory: every stage's PEs within their SRAM ---- */

/* A stage whose PEs were placed past their memory is the placement's error (it refuses what does
 * not fit before): an internal error naming the operator, not a program that reads past SRAM. */
static ts_status check_memory(const lw *L)
{
    for (size_t i = 0; i < L->n; i++)
        if (L->st[i].mem > L->t->sram_bytes) {
            char a[200];
            stage_name(L, (int)i, a, sizeof a);
            return ts_err_set(L->err, TS_EINTERNAL, "%s: placed on PEs of %llu bytes each, past their %llu bytes of SRAM", a,
                              (unsigned long long)L->st[i].mem, (unsigned long long)L->t->sram_bytes);
        }
    return TS_OK;
}

ts_status ts_lww_check(const lw *L, const ts_program *P)
{
    ts_status rc = P ? TS_OK : check_memory(L);
    if (!rc)
        rc = check_stages(L);
    if (!rc)
        rc = check_joins(L);
    if (!rc && P)
        rc = check_routes(L, P);
    return rc;
}
