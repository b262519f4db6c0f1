/* workloads/ipu/lower_ipu_exchange.c — moving a tensor's elements to the tiles that need them.
 *
 * Where an element lies (lwi_pl_run), the sends and receives of the compiled exchange (lwi_send,
 * lwi_recv), and the gather every operator starts with (lwi_gather): a tile's ranges are used in
 * place when it holds them itself at the offsets asked for; otherwise gathered into one buffer.
 * Pieces held by other tiles travel in exchange rounds, one chip-wide superstep each, in which
 * every receiver takes one transfer (consecutive pieces of one sender, landing one after the other)
 * and a sender serves its receivers in turn, so no two senders ever meet at a receiver; pieces a
 * tile holds itself are copied by its supervisor at the start of the next superstep. The gather
 * runs in passes: what each tile needs and whether it holds it (gather_need), the pieces of each
 * receiver and its transfers (gather_pieces, gather_transfers), then the rounds (gather_rounds)
 * and the local copies (gather_local).
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"

uint64_t lwi_pl_run(const lw_place *P, uint64_t e, uint32_t *tile, uint64_t *off)
{
    if (!P->inner) {
        *tile = P->t0 + (uint32_t)(e / P->chunk);
        *off = e % P->chunk;
        return P->chunk - *off;
    }
    uint64_t c = e / P->inner, px = e % P->inner;
    *tile = P->t0 + (uint32_t)((c / P->cb) * P->nrb + px / P->pb);
    *off = (c % P->cb) * P->pb + px % P->pb;
    uint64_t end = (px / P->pb + 1) * P->pb;
    return (end < P->inner ? end : P->inner) - px;
}

/* The record of one send or receive (not in the first pass, which emits no program), just emitted
 * on tile src (a send) or dst (a receive). */
static void xrecord(lw *L, uint32_t src, uint32_t dst, int64_t words)
{
    if (L->measure || L->code_cut)
        return;
    if (ts_grow((void **)&L->xr, &L->capxr, L->nxr + 1, sizeof *L->xr)) {
        L->oom = true;
        return;
    }
    uint32_t pc = (uint32_t)L->tiles[words < 0 ? src : dst].sup.n - 1;
    L->xr[L->nxr++] = (lw_xrec){L->step, src, dst, words, L->cur, pc};
}

/* Whether tile t's (as named, toff added) supervisor register k (0: $m6, a receive's sender; 1:
 * $m8, a send's receiver) still holds v, set by the exchange before: no instruction naming the
 * register since (another setzi, a copy loop, a broadcast's $m6 := -1; code cut or host memory
 * short make it unknown); and from now it does (the setzi that follows a false sets it). Only in
 * the code spread's last pass (a plan's code past a tile's memory, whose starts the measuring
 * passes chose with every setzi in place, so that no tile's code grows past what they saw), where
 * a send's receiver is in $m8, apart from a receive's sender, and only in a ring's shifts
 * (L->xring): there each step a tile receives from its successor and sends to its predecessor, so
 * the two are set once (ViT-B/16's in-projections, 48 steps), and every tile that sends armed its
 * receive first, two or three issues, before its send, so that no receiver arms later than its
 * sender sends (lwi_check_exchange). Elsewhere a sender that receives nothing in the superstep
 * would send one issue earlier than a receiver that sets both registers arms (ViT-B/16's
 * Transpose_4: 'the program would drop words'). Every other pass: false, each setzi emitted. */
static bool xset(lw *L, uint32_t t, int k, int32_t v)
{
    if (!L->cspread || L->measure || !L->xring || L->code_cut || L->oom)
        return false;
    if (!L->xreg && !(L->xreg = ts_calloc(L->T, sizeof *L->xreg))) {
        L->oom = true;
        return false;
    }
    struct lw_xreg *x = &L->xreg[t + L->toff];
    const lw_code *c = &LWT(t).sup;
    const int32_t r = k ? RM(8) : RM(6);
    bool ok = x->ok[k] && x->v[k] == v && x->at[k] <= c->n;
    for (size_t i = x->at[k]; ok && i < c->n; i++) {
        const lw_insn *in = &c->v[i];
        ok = in->op == LW_SEND || in->op == LW_RECV || in->op == LW_RXWAIT || in->op == LW_SYNC ||
             (in->a[0] != r && in->a[1] != r && in->a[2] != r);
    }
    /* set from the next entry on: a false's setzi is emitted there */
    x->v[k] = v, x->ok[k] = true, x->at[k] = c->n + !ok;
    return ok;
}

void lwi_recv(lw *L, uint32_t t, uint64_t to, uint32_t src, uint64_t words)
{
    S(t, SETZI, RM(5), (int32_t)to, 0);
    if (!xset(L, t, 0, (int32_t)(src + L->toff)))
        S(t, SETZI, RM(6), (int32_t)(src + L->toff), 0);
    S(t, RECV, RM(5), RM(6), (int32_t)words);
    xrecord(L, src + L->toff, t + L->toff, (int64_t)words);
}

/* The supervisor register a send names its receiver in: $m6, or $m8 in the code spread's last
 * pass (xset), apart from a receive's sender. Every send of a transfer names the same one, so the
 * sends after its first (L->onedst) find the receiver where the first, a run or not, left it. */
static int32_t send_reg(const lw *L)
{
    return L->cspread && !L->measure ? RM(8) : RM(6);
}

/* lwi_send, where dst_set leaves out the setting of the receiver's register to dst (a send before
 * it set it; send_reg). */
static void send_words(lw *L, uint32_t t, uint64_t from, uint32_t dst, uint64_t words, bool dst_set)
{
    const int32_t rd = send_reg(L);
    S(t, SETZI, RM(5), (int32_t)from, 0);
    if (!dst_set && !xset(L, t, 1, (int32_t)(dst + L->toff)))
        S(t, SETZI, rd, (int32_t)(dst + L->toff), 0);
    S(t, SEND, RM(5), rd, (int32_t)words);
    xrecord(L, t + L->toff, dst + L->toff, -(int64_t)words);
}

void lwi_send(lw *L, uint32_t t, uint64_t from, uint32_t dst, uint64_t words)
{
    send_words(L, t, from, dst, words, false);
}

static int xrec_cmp(const void *a, const void *b)
{
    const lw_xrec *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->pc != y->pc) /* sends and receives are told apart by the sign of words: equal pcs are on two tiles */
        return x->pc < y->pc ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* The issue cycles of tile t's supervisor code [start, end), at least: setzi, stores and other
 * instructions one each, loads the load latency, rpt loops their count (set by a setzi of the run)
 * times their body; *exact false when the run holds anything else (a send, a worker run: its time
 * is not known here, one cycle counted). -2 at an rxwait: what follows waits for a receive. */
static int64_t run_issues(const lw *L, uint32_t t, size_t start, size_t end, bool *exact)
{
    const lw_code *c = &L->tiles[t].sup;
    int64_t r = 0, lat = L->p && L->p->target.load_latency > 1 ? L->p->target.load_latency : 1;
    int64_t mval[32] = {0};
    bool mset[32] = {false};
    for (size_t i = start; i < end; i++) {
        const lw_insn *in = &c->v[i];
        int32_t m = in->a[0] - RM(0);
        bool reg = m >= 0 && m < 32;
        switch (in->op) {
        case LW_RXWAIT:
            return -2;
        case LW_SETZI:
            if (reg)
                mset[m] = true, mval[m] = in->a[1];
            r++;
            break;
        case LW_RPT: {
            size_t len = (size_t)in->a[1];
            if (!reg || !mset[m] || i + 1 + len > end) {
                *exact = false;
                r++;
                break;
            }
            int64_t body = run_issues(L, t, i + 1, i + 1 + len, exact);
            if (body < 0)
                return body;
            r += 1 + mval[m] * body;
            i += len;
            break;
        }
        case LW_LD32STEP:
        case LW_LD32:
            r += lat;
            break;
        case LW_ST32STEP:
        case LW_ST32:
        case LW_MOV:
        case LW_ADD:
        case LW_ADDI:
            r++;
            break;
        default:
            *exact = false;
            r++;
            break;
        }
    }
    return r;
}

/* The issue cycles of tile t's supervisor in superstep `step` before its pc-th instruction
 * (run_issues). */
static int64_t issues_before(const lw *L, uint32_t t, uint32_t step, size_t pc, bool *exact)
{
    *exact = true;
    return run_issues(L, t, L->marks[(size_t)step * L->T + t].pc, pc, exact);
}

bool lwi_late(const lw *L, uint32_t r, uint32_t s)
{
    if (L->measure)
        return false;
    bool er, es;
    r += L->toff;
    s += L->toff;
    int64_t nr = issues_before(L, r, L->step, L->tiles[r].sup.n, &er);
    int64_t ns = issues_before(L, s, L->step, L->tiles[s].sup.n, &es);
    return nr != -2 && (!er || (ns != -2 && nr > ns));
}

/* Records xr[i..j) of one superstep, sender and receiver: the first receive armed in time for the
 * first send (lwi_check_exchange); TS_EINTERNAL otherwise. */
static ts_status check_in_time(lw *L, size_t i, size_t j)
{
    const lw_xrec *r = NULL, *s = NULL;
    for (size_t k = i; k < j; k++) {
        const lw_xrec *q = &L->xr[k];
        if (q->words > 0 && (!r || q->pc < r->pc))
            r = q;
        if (q->words < 0 && (!s || q->pc < s->pc))
            s = q;
    }
    if (!r || !s)
        return TS_OK;
    bool er, es;
    r += L->toff;
    s += L->toff;
    int64_t nr = issues_before(L, r->dst, r->step, r->pc, &er), ns = issues_before(L, s->src, s->step, s->pc, &es);
    if (nr == -2 || (er && (ns == -2 || nr <= ns)))
        return TS_OK;
    const ts_graph_node *a = ts_graph_get_node(L->g, r->node);
    return ts_err_set(L->err, TS_EINTERNAL,
                      "the program would drop words: in superstep %u tile %u arms its receive from tile %u after %s "
                      "(%s '%s')", r->step, r->dst, r->src,
                      !er ? "code of unknown length" : "more cycles than the sender issues before its send",
                      ts_graph_op_name(a->op), a->name);
}

ts_status lwi_check_exchange(lw *L)
{
    if (L->nxr) /* qsort takes no null array, even of no elements */
        qsort(L->xr, L->nxr, sizeof *L->xr, xrec_cmp);
    for (size_t i = 0, j; i < L->nxr; i = j) {
        int64_t sum = 0, sent = 0;
        for (j = i; j < L->nxr && L->xr[j].step == L->xr[i].step && L->xr[j].src == L->xr[i].src &&
                    L->xr[j].dst == L->xr[i].dst; j++) {
            sum += L->xr[j].words;
            sent -= L->xr[j].words < 0 ? L->xr[j].words : 0;
        }
        const lw_xrec *q = &L->xr[i];
        if (sum == 0 && q->src < L->used && q->dst < L->used) {
            ts_status rc = check_in_time(L, i, j);
            if (rc != TS_OK)
                return rc;
            continue;
        }
        const ts_graph_node *a = ts_graph_get_node(L->g, q->node), *b = ts_graph_get_node(L->g, L->xr[j - 1].node);
        if (sum > 0)
            return ts_err_set(L->err, TS_EINTERNAL,
                              "the program would hang: in superstep %u tile %u waits for %lld more words from tile "
                              "%u than it sends (%s '%s'%s%s)", q->step, q->dst, (long long)sum, q->src,
                              ts_graph_op_name(a->op), a->name, a == b ? "" : ", ", a == b ? "" : b->name);
        return ts_err_set(L->err, TS_EINTERNAL,
                          "the program would hang: in superstep %u tile %u sends %lld words to tile %u that %s (%s "
                          "'%s'%s%s)", q->step, q->src, (long long)(sum ? -sum : sent), q->dst,
                          sum ? "it does not wait for" : "has no stream", ts_graph_op_name(a->op), a->name,
                          a == b ? "" : ", ", a == b ? "" : b->name);
    }
    return TS_OK;
}

/* ---- the gather ---- */

/* A run of words from tile src's `from` to tile dst's `to`. */
typedef struct lw_piece { uint32_t src, dst; uint64_t from, to, words; } lw_piece;
/* A receiver's transfer: pieces p0..p1-1 of one sender, received at `to` (staged: into the staging
 * buffer, then copied to their places). */
typedef struct lw_xfer {
    uint32_t src, dst;
    uint64_t to, words;
    size_t p0, p1;
    bool staged;
    uint32_t round;
    bool bc;      /* broadcast (L->bcast): sent once to every transfer of its group (grp) in its round */
    uint32_t grp;
} lw_xfer;

/* One gather of tensor x. */
typedef struct gx {
    lw *L;
    const lw_place *P;  /* x's placement */
    const char *xname;
    uint64_t es;        /* bytes per element */
    lw_piece *pc;       /* the pieces, by receiver, each receiver's by sender; owned */
    size_t npc, cap;
    lw_xfer *xf;        /* the transfers, by receiver; owned */
    size_t nxf, capx;
    uint32_t rounds;    /* the most transfers of one receiver */
    uint64_t stage;     /* words of the largest staged transfer */
    uint32_t *count;    /* per receiver tile (all L->T of them), owned */
    bool bcast;         /* the rounds are gather_bcast's (xf[].round), its groups broadcast */
} gx;

static ts_status gather_oom(const gx *G)
{
    return ts_err_set(G->L->err, TS_ENOMEM, "out of memory gathering '%s'", G->xname);
}

/* Which tiles hold their ranges themselves at the offsets asked for (where[t] then set; not
 * unless force), which need them gathered (remote[t]); the gather buffer's bytes. */
static uint64_t gather_need(const gx *G, uint32_t tn, const uint64_t *lo, const uint64_t *hi, const uint32_t *nr,
                            uint64_t sst, uint64_t dstr, bool force, uint64_t *where, bool *remote)
{
    uint64_t need = 0;
    for (uint32_t t = 0; t < tn; t++) {
        uint32_t n = nr ? nr[t] : 1;
        uint64_t len = hi[t] - lo[t], off0 = 0;
        where[t] = 0;
        if (!len || !n)
            continue;
        bool local = !force;
        for (uint32_t j = 0; j < n && local; j++) {
            uint32_t s;
            uint64_t off, run = lwi_pl_run(G->P, lo[t] + j * sst, &s, &off);
            if (!j)
                off0 = off;
            local = s == G->L->base + t && run >= len && off == off0 + j * dstr;
        }
        if (local) {
            where[t] = G->P->addr + off0 * G->es;
            continue;
        }
        remote[t] = true;
        if (((n - 1) * dstr + len) * G->es > need)
            need = ((n - 1) * dstr + len) * G->es;
    }
    return need;
}

/* Receiver t's pieces of its n ranges [lo + j*sst, hi + j*sst), landing at g + j*dstr elements. */
static ts_status gather_pieces(gx *G, uint32_t t, uint64_t lo, uint64_t hi, uint32_t n, uint64_t sst,
                               uint64_t dstr, uint64_t g)
{
    const lw_place *P = G->P;
    uint64_t es = G->es;
    for (uint32_t j = 0; j < n; j++)
        for (uint64_t e = lo + j * sst, end = hi + j * sst; e < end;) {
            uint32_t s;
            uint64_t off, run = lwi_pl_run(P, e, &s, &off);
            uint64_t b = e + run < end ? e + run : end;
            uint64_t to = g + (j * dstr + (e - lo - j * sst)) * es;
            if ((off * es) % 4 || ((b - e) * es) % 4 || to % 4) /* whole 32-bit words only */
                return ts_err_set(G->L->err, TS_EINPUT, "'%s': f16 slices must start and end on 32-bit words",
                                  G->xname);
            if (ts_grow((void **)&G->pc, &G->cap, G->npc + 1, sizeof *G->pc))
                return gather_oom(G);
            G->pc[G->npc++] = (lw_piece){s, t, P->addr + off * es, to, (b - e) * es / 4};
            e = b;
        }
    return TS_OK;
}

/* Receiver t's pieces from pt0 on, by sender (stable; its own first). */
static void sort_by_sender(gx *G, uint32_t t, size_t pt0)
{
    lw_piece *pc = G->pc;
    for (size_t i = pt0 + 1; i < G->npc; i++) {
        lw_piece v = pc[i];
        size_t k = i;
        while (k > pt0 && (pc[k - 1].src == t ? 0 : pc[k - 1].src + 1) > (v.src == t ? 0 : v.src + 1)) {
            pc[k] = pc[k - 1];
            k--;
        }
        pc[k] = v;
    }
}

/* Pieces pc[0..n) (one sender's to one receiver) cut to the rows the reader reads (L->rows_st > 1:
 * of each range rows_span words apart from L->into, the rows of rows_w words r = 0 mod rows_st, a
 * strided 1x1 Conv's input rows) into *out (owned, *nout of them); *out NULL (nothing cut) unless
 * every piece lands in whole 32-bit words of its ranges. */
static ts_status rows_read_only(gx *G, const lw_piece *pc, size_t n, lw_piece **out, size_t *nout)
{
    const lw *L = G->L;
    uint64_t rw = L->rows_w, span = L->rows_span;
    size_t cap = 0;
    *out = NULL, *nout = 0;
    if (L->rows_st < 2 || !rw || !span || !L->into)
        return TS_OK;
    for (size_t p = 0; p < n; p++)
        if (pc[p].to < L->into || (pc[p].to - L->into) % 4)
            return TS_OK;
    lw_piece *v = ts_malloc(sizeof *v); /* not NULL even where no row is read */
    if (!v)
        return gather_oom(G);
    cap = 1;
    for (size_t p = 0; p < n; p++) {
        const lw_piece *q = &pc[p];
        uint64_t c = (q->to - L->into) / 4 % span; /* the piece's first word in its range */
        for (uint64_t w = 0; w < q->words;) {
            uint64_t row = (c + w) / rw, end = (row + 1) * rw - c;
            uint64_t b = end < q->words ? end : q->words;
            if (row % L->rows_st == 0) {
                if (ts_grow((void **)&v, &cap, *nout + 1, sizeof *v)) {
                    ts_free(v);
                    return gather_oom(G);
                }
                v[(*nout)++] = (lw_piece){q->src, q->dst, q->from + 4 * w, q->to + 4 * w, b - w};
            }
            w = b;
        }
    }
    *out = v;
    return TS_OK;
}

/* Pieces i..k-1 of G->pc (one sender's) replaced by the n of v. */
static ts_status splice_pieces(gx *G, size_t i, size_t k, const lw_piece *v, size_t n)
{
    size_t tail = G->npc - k;
    if (n > k - i && ts_grow((void **)&G->pc, &G->cap, G->npc + n - (k - i), sizeof *G->pc))
        return gather_oom(G);
    memmove(&G->pc[i + n], &G->pc[k], tail * sizeof *G->pc);
    if (n)
        memcpy(&G->pc[i], v, n * sizeof *v);
    G->npc = i + n + tail;
    return TS_OK;
}

/* Whether pieces pc[0..n) follow on from each other where they land. */
static bool follow_on(const lw_piece *pc, size_t n)
{
    for (size_t p = 1; p < n; p++)
        if (pc[p].to != pc[p - 1].to + 4 * pc[p - 1].words)
            return false;
    return true;
}

static uint64_t run_cost(const lw *L, int64_t sf, uint32_t n, uint32_t w);

/* The issues a worker of copying pieces pc[0..n) in runs of equal length equally far apart where
 * they come from and where they land (copy_run_workers a run). */
static uint64_t runs_cost(const lw *L, const lw_piece *pc, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0, j; i < n; i = j) {
        int64_t sf = i + 1 < n ? (int64_t)(pc[i + 1].from - pc[i].from) : 0;
        int64_t st = i + 1 < n ? (int64_t)(pc[i + 1].to - pc[i].to) : 0;
        for (j = i + 1; j < n && pc[j].words == pc[i].words && (int64_t)(pc[j].from - pc[j - 1].from) == sf &&
                        (int64_t)(pc[j].to - pc[j - 1].to) == st;
             j++)
            ;
        c += run_cost(L, sf, (uint32_t)(j - i), (uint32_t)pc[i].words);
    }
    return c;
}

/* The issues a worker of copying pieces pc[0..n) that a tile holds itself as gather_local_workers
 * does (runs of equal length equally far apart where they come from and where they land);
 * UINT64_MAX where its supervisor would copy them (a piece not whole pairs at 8-byte places). */
static uint64_t local_cost(const lw *L, const lw_piece *pc, size_t n)
{
    for (size_t p = 0; p < n; p++)
        if (pc[p].from % 8 || pc[p].to % 8 || pc[p].words % 2)
            return UINT64_MAX;
    return runs_cost(L, pc, n);
}

/* Receiver t's remote pieces from pt0 on: one transfer per sender, received in place when its
 * pieces follow on from each other, else into a staging buffer and copied. A strided 1x1's
 * transfer sends only the rows the Conv reads (rows_read_only: layer4.0.downsample of
 * resnet50:batch=4 on ipu_mk2 received each holder's two rows of which it reads one) where it was
 * staged anyway or stays in place (one received in place is not made staged: its copies would cost
 * about what the rows left out save), and none where it reads none of them. */
static ts_status gather_transfers(gx *G, uint32_t t, size_t pt0)
{
    for (size_t i = pt0; i < G->npc;) {
        const lw_piece *pc = G->pc;
        size_t k = i + 1;
        bool direct = !G->L->staged;
        uint64_t words = pc[i].words;
        while (k < G->npc && pc[k].src == pc[i].src) {
            direct &= pc[k].to == pc[k - 1].to + 4 * pc[k - 1].words;
            words += pc[k].words;
            k++;
        }
        if (pc[i].src == t && G->L->rows_st > 1 && G->L->wlocal) {
            /* the pieces a tile holds itself: only the rows read, where their copies so issue fewer
             * instructions a worker (the rows of one range are runs of their own) */
            lw_piece *v;
            size_t n;
            ts_status rc = rows_read_only(G, &pc[i], k - i, &v, &n);
            if (rc == TS_OK && v) {
                uint64_t before = local_cost(G->L, &pc[i], k - i), after = n ? local_cost(G->L, v, n) : 0;
                if (after < before || (after == before && after == UINT64_MAX)) {
                    rc = splice_pieces(G, i, k, v, n);
                    k = i + n;
                }
            }
            ts_free(v);
            if (rc != TS_OK)
                return rc;
            i = k;
            continue;
        }
        if (pc[i].src != t && G->L->rows_st > 1) {
            lw_piece *v;
            size_t n;
            ts_status rc = rows_read_only(G, &pc[i], k - i, &v, &n);
            bool in_place = v && !G->L->staged && follow_on(v, n);
            if (rc == TS_OK && v && (!direct || in_place || !n)) {
                rc = splice_pieces(G, i, k, v, n);
                k = i + n, direct = in_place, words = 0;
                for (size_t p = 0; p < n; p++)
                    words += v[p].words;
            }
            ts_free(v);
            if (rc != TS_OK)
                return rc;
            pc = G->pc;
            if (k == i) /* no row of this sender's is read */
                continue;
        }
        if (pc[i].src != t) {
            if (ts_grow((void **)&G->xf, &G->capx, G->nxf + 1, sizeof *G->xf))
                return gather_oom(G);
            G->xf[G->nxf++] = (lw_xfer){pc[i].src, t, direct ? pc[i].to : 0, words, i, k, !direct, 0, false, 0};
            if (!direct && words > G->stage)
                G->stage = words;
            if (++G->count[t] > G->rounds)
                G->rounds = G->count[t];
        }
        i = k;
    }
    return TS_OK;
}

/* Staggered: receiver t starts with its (t mod n)-th sender (its transfers from x0 on), so that
 * receivers that read the same senders meet different ones in a round. */
static void stagger(gx *G, uint32_t t, size_t x0)
{
    for (size_t r = 0, nx = G->nxf - x0; nx > 1 && r < t % nx; r++) {
        lw_xfer first = G->xf[x0];
        memmove(&G->xf[x0], &G->xf[x0 + 1], (nx - 1) * sizeof *G->xf);
        G->xf[G->nxf - 1] = first;
    }
}

/* Balanced stagger (L->balance): receiver by receiver (t its index among the gather's), its n
 * transfers rotated by the s that makes the most words a sender of them sends in the round it falls
 * in fewest (of the 64 from the stagger's on), counting the receivers before (ties: s = t mod n, the
 * stagger's), so that the readers
 * of one holder spread over the rounds even where they share t mod n (a Conv's readers of one
 * channel block in the rings of a rotating A: every reader of a holder took it in the same round). */
static ts_status gather_balance(gx *G)
{
    lw *L = G->L;
    uint32_t R = G->rounds ? G->rounds : 1;
    uint64_t *load = ts_calloc((size_t)L->T * R, sizeof *load);
    lw_xfer *tmp = ts_calloc(R, sizeof *tmp);
    if (!load || !tmp) {
        ts_free(load);
        ts_free(tmp);
        return gather_oom(G);
    }
    for (size_t x0 = 0, x1; x0 < G->nxf; x0 = x1) {
        for (x1 = x0 + 1; x1 < G->nxf && G->xf[x1].dst == G->xf[x0].dst; x1++)
            ;
        size_t n = x1 - x0, best = (G->xf[x0].dst - L->base) % n;
        uint64_t most = UINT64_MAX;
        for (size_t k = 0; k < n && k < 64; k++) { /* 64 tried at most: n^2 work a receiver */
            size_t s = (best + k) % n; /* from the stagger's on, so that it wins ties */
            uint64_t m = 0;
            for (size_t i = 0; i < n; i++) {
                const lw_xfer *q = &G->xf[x0 + i];
                uint64_t v = load[(size_t)q->src * R + (i + n - s) % n] + q->words;
                m = v > m ? v : m;
            }
            if (m < most)
                most = m, best = s;
        }
        for (size_t i = 0; i < n; i++)
            tmp[(i + n - best) % n] = G->xf[x0 + i];
        memcpy(&G->xf[x0], tmp, n * sizeof *tmp);
        for (size_t r = 0; r < n; r++)
            load[(size_t)G->xf[x0 + r].src * R + r] += G->xf[x0 + r].words;
    }
    ts_free(load);
    ts_free(tmp);
    return TS_OK;
}

/* A run of n pieces of w words (w even), the i-th from `from` + i * sf to `to` + i * st (bytes,
 * 8-byte aligned), copied by tile t's workers, 64 bits a load, in whichever way issues fewer
 * instructions a worker: each piece's pairs over the workers (ceil(w / 2 / workers) pairs a worker
 * a piece, 4 issues more a piece, none for a run of one), or the pieces over the workers
 * (ceil(n / workers) whole pieces a worker, 3 issues more a piece; a staged transfer of
 * layer4.0.downsample in resnet50:batch=4 is 32 pieces of 28 words: 320 issues a worker the first
 * way, 192 the second). Overlapping blocks copy the same values. */
static void copy_issues(const lw *L, int64_t sf, uint32_t n, uint32_t w, uint64_t *by_pairs, uint64_t *by_pieces)
{
    uint32_t nw = L->workers, pp = (uint32_t)ts_geom_cdiv(w / 2, nw), nb = (uint32_t)ts_geom_cdiv(n, nw);
    bool gap = sf != 4 * (int64_t)w; /* the pieces do not lie one after another where they come from */
    *by_pairs = n == 1 ? 14 + 2 * (uint64_t)pp : 14 + (uint64_t)n * (4 + 2 * (uint64_t)pp);
    *by_pieces = 15 + (uint64_t)nb * (3 + gap + (uint64_t)w);
}

/* The issues a worker of copy_run_workers. */
static uint64_t run_cost(const lw *L, int64_t sf, uint32_t n, uint32_t w)
{
    uint64_t a, b;
    copy_issues(L, sf, n, w, &a, &b);
    return a < b ? a : b;
}

static void copy_run_workers(lw *L, uint32_t t, uint64_t from, int64_t sf, uint64_t to, int64_t st, uint32_t n,
                             uint32_t w)
{
    uint32_t nw = L->workers, pp = (uint32_t)ts_geom_cdiv(w / 2, nw), nb = (uint32_t)ts_geom_cdiv(n, nw);
    bool gap = sf != 4 * (int64_t)w;
    uint64_t by_pairs, by_pieces;
    copy_issues(L, sf, n, w, &by_pairs, &by_pieces);
    if (by_pieces < by_pairs) {
        lwi_emit_start_row(L, t, n, nb); /* $m1: the worker's first piece */
        W(t, MULI, RM(2), RM(1), (int32_t)sf);
        W(t, SETZI, RM(4), (int32_t)from, 0);
        W(t, ADD, RM(2), RM(2), RM(4));
        W(t, MULI, RM(3), RM(1), (int32_t)st);
        W(t, SETZI, RM(4), (int32_t)to, 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(5), (int32_t)(w / 2), 0);
        W(t, SETZI, RM(6), (int32_t)nb - 1, 0);
        size_t loop = W(t, RPT, RM(5), 2, 0);
        W(t, LD64STEP, RA(0), RM(2), 8);
        W(t, ST64STEP, RA(0), RM(3), 8);
        if (gap)
            W(t, ADDI, RM(2), RM(2), (int32_t)(sf - 4 * (int64_t)w));
        W(t, ADDI, RM(3), RM(3), (int32_t)(st - 4 * (int64_t)w));
        W(t, BRNZDEC, RM(6), (int32_t)loop, 0);
        return;
    }
    lwi_emit_start_row(L, t, w / 2, pp); /* $m1: the worker's first pair of each piece */
    W(t, SHLI, RM(1), RM(1), 3);
    W(t, SETZI, RM(2), (int32_t)from, 0);
    W(t, ADD, RM(2), RM(2), RM(1));
    W(t, SETZI, RM(3), (int32_t)to, 0);
    W(t, ADD, RM(3), RM(3), RM(1));
    W(t, SETZI, RM(5), (int32_t)pp, 0);
    if (n == 1) { /* no loop over the pieces */
        W(t, RPT, RM(5), 2, 0);
        W(t, LD64STEP, RA(0), RM(2), 8);
        W(t, ST64STEP, RA(0), RM(3), 8);
        return;
    }
    W(t, SETZI, RM(6), (int32_t)n - 1, 0);
    size_t loop = W(t, RPT, RM(5), 2, 0);
    W(t, LD64STEP, RA(0), RM(2), 8);
    W(t, ST64STEP, RA(0), RM(3), 8);
    W(t, ADDI, RM(2), RM(2), (int32_t)(sf - 8 * (int64_t)pp));
    W(t, ADDI, RM(3), RM(3), (int32_t)(st - 8 * (int64_t)pp));
    W(t, BRNZDEC, RM(6), (int32_t)loop, 0);
}

/* copy_staged_workers where only some rows of each range are read (L->rows_st > 1: a strided 1x1
 * Conv's input rows, L->rows_w words each, the ranges L->rows_span words apart from L->into): only
 * the rows r = 0 mod rows_st of the pieces are copied, in runs of rows of equal length equally far
 * apart where they come from and where they land (copy_run_workers); false (nothing emitted) unless
 * every such row is whole pairs at 8-byte aligned places. */
static bool copy_staged_rows(const gx *G, const lw_xfer *q)
{
    lw *L = G->L;
    const lw_piece *pc = G->pc;
    uint64_t rw = L->rows_w, span = L->rows_span;
    if (L->rows_st < 2 || !rw || !span || !L->into || q->to % 8)
        return false;
    size_t n = 0, cap = 0;
    lw_piece *sg = NULL; /* the rows copied: from (staging), to, words */
    bool ok = true;
    for (size_t i = q->p0, at = q->to; i < q->p1 && ok; at += 4 * pc[i].words, i++) {
        if (pc[i].to < L->into || (pc[i].to - L->into) % 4) {
            ok = false;
            break;
        }
        uint64_t e0 = (pc[i].to - L->into) / 4, c = e0 % span; /* the piece's first element in its range */
        for (uint64_t k = 0; k < pc[i].words && ok;) {
            uint64_t row = (c + k) / rw, end = (row + 1) * rw - c;
            uint64_t b = end < pc[i].words ? end : pc[i].words;
            if (row % L->rows_st == 0) {
                uint64_t from = at + 4 * k, to = pc[i].to + 4 * k, w = b - k;
                ok = from % 8 == 0 && to % 8 == 0 && w % 2 == 0 && !ts_grow((void **)&sg, &cap, n + 1, sizeof *sg);
                if (ok)
                    sg[n++] = (lw_piece){0, 0, from, to, w};
            }
            k = b;
        }
    }
    /* the rows alone only where they cost fewer issues than all the pieces (runs of rows of
     * different lengths can cost more: layer4.0.downsample of resnet50 on ipu_mk1) */
    uint64_t all = 0, rows = 0;
    for (size_t i = q->p0, j; ok && i < q->p1; i = j) {
        int64_t st = i + 1 < q->p1 ? (int64_t)(pc[i + 1].to - pc[i].to) : 0;
        for (j = i + 1; j < q->p1 && pc[j].words == pc[i].words && (int64_t)(pc[j].to - pc[j - 1].to) == st; j++)
            ;
        all += run_cost(L, 4 * (int64_t)pc[i].words, (uint32_t)(j - i), (uint32_t)pc[i].words);
    }
    if (ok)
        rows = runs_cost(L, sg, n);
    if (!ok || rows >= all) {
        ts_free(sg);
        return false;
    }
    uint32_t t = q->dst;
    size_t entry = L->tiles[t].wrk.n;
    for (size_t i = 0, j; i < n; i = j) {
        int64_t sf = i + 1 < n ? (int64_t)(sg[i + 1].from - sg[i].from) : 0;
        int64_t st = i + 1 < n ? (int64_t)(sg[i + 1].to - sg[i].to) : 0;
        for (j = i + 1; j < n && sg[j].words == sg[i].words && (int64_t)(sg[j].from - sg[j - 1].from) == sf &&
                        (int64_t)(sg[j].to - sg[j - 1].to) == st;
             j++)
            ;
        copy_run_workers(L, t, sg[i].from, sf, sg[i].to, st, (uint32_t)(j - i), (uint32_t)sg[i].words);
    }
    ts_free(sg);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
    return true;
}

/* copy_staged by the receiver's workers (L->wlocal), 64 bits a load: per run of pieces of equal
 * length equally far apart, copy_run_workers; false (nothing emitted) unless every piece is whole
 * pairs at 8-byte aligned places. */
static bool copy_staged_workers(const gx *G, const lw_xfer *q)
{
    lw *L = G->L;
    const lw_piece *pc = G->pc;
    if (q->to % 8)
        return false;
    for (size_t i = q->p0; i < q->p1; i++)
        if (pc[i].words % 2 || pc[i].to % 8)
            return false;
    size_t entry = L->tiles[q->dst].wrk.n;
    uint32_t t = q->dst;
    for (size_t i = q->p0, j, at = q->to; i < q->p1; i = j) {
        int64_t st = i + 1 < q->p1 ? (int64_t)(pc[i + 1].to - pc[i].to) : 0;
        for (j = i + 1; j < q->p1 && pc[j].words == pc[i].words && (int64_t)(pc[j].to - pc[j - 1].to) == st; j++)
            ;
        copy_run_workers(L, t, at, 4 * (int64_t)pc[i].words, pc[i].to, st, (uint32_t)(j - i), (uint32_t)pc[i].words);
        at += 4 * (size_t)pc[i].words * (j - i);
    }
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
    return true;
}

/* A staged transfer, received: its pieces copied from the staging buffer to their places (by the
 * receiver's supervisor, or its workers: copy_staged_workers). */
static void copy_staged(const gx *G, const lw_xfer *q)
{
    lw *L = G->L;
    const lw_piece *pc = G->pc;
    if (L->wlocal && (copy_staged_rows(G, q) || copy_staged_workers(G, q)))
        return;
    for (size_t i = q->p0, j, at = q->to; i < q->p1; i = j) {
        /* coalesce: a run of pieces of equal length whose places are equally far apart is copied
         * in one loop */
        int64_t st = i + 1 < q->p1 ? (int64_t)(pc[i + 1].to - pc[i].to) : 0;
        for (j = i + 1; L->coalesce && j < q->p1 && pc[j].words == pc[i].words &&
                        (int64_t)(pc[j].to - pc[j - 1].to) == st; j++)
            ;
        if (!L->coalesce)
            j = i + 1;
        S(q->dst, SETZI, RM(1), (int32_t)at, 0);
        S(q->dst, SETZI, RM(2), (int32_t)pc[i].to, 0);
        S(q->dst, SETZI, RM(3), (int32_t)pc[i].words, 0);
        if (j - i > 1)
            S(q->dst, SETZI, RM(7), (int32_t)(j - i - 1), 0);
        size_t loop = S(q->dst, RPT, RM(3), 2, 0);
        S(q->dst, LD32STEP, RM(4), RM(1), 4);
        S(q->dst, ST32STEP, RM(4), RM(2), 4);
        if (j - i > 1) {
            S(q->dst, ADDI, RM(2), RM(2), (int32_t)(st - 4 * (int64_t)pc[i].words));
            S(q->dst, BRNZDEC, RM(7), (int32_t)loop, 0);
        }
        at += 4 * pc[i].words * (j - i);
    }
}

/* Rounds by (sender - receiver) mod n, n the widest span of tile numbers among a receiver's senders
 * and a sender's receivers: a receiver's senders then fall in distinct rounds, and so do a
 * sender's receivers. Into xf[].round and *used; false (rounds unset) when a round would hold two
 * transfers of one tile after all. */
static bool pack_modular(gx *G, uint32_t cap, uint8_t *sbusy, uint8_t *rbusy, uint32_t *lo, uint32_t *hi,
                         uint32_t *used)
{
    lw *L = G->L;
    uint32_t n = 1;
    for (int side = 0; side < 2; side++) {
        for (uint32_t t = 0; t < L->T; t++)
            lo[t] = UINT32_MAX, hi[t] = 0;
        for (size_t i = 0; i < G->nxf; i++) {
            uint32_t k = side ? G->xf[i].src : G->xf[i].dst, v = side ? G->xf[i].dst : G->xf[i].src;
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
        for (uint32_t t = 0; t < L->T; t++)
            if (lo[t] <= hi[t] && hi[t] - lo[t] + 1 > n)
                n = hi[t] - lo[t] + 1;
    }
    if (n > cap)
        return false;
    memset(sbusy, 0, (size_t)L->T * cap);
    memset(rbusy, 0, (size_t)L->T * cap);
    *used = 0;
    for (size_t i = 0; i < G->nxf; i++) {
        lw_xfer *q = &G->xf[i];
        uint32_t r = (uint32_t)(((int64_t)q->src - (int64_t)q->dst) % (int64_t)n + n) % n;
        if (sbusy[(size_t)q->src * cap + r] || rbusy[(size_t)q->dst * cap + r])
            return false;
        sbusy[(size_t)q->src * cap + r] = rbusy[(size_t)q->dst * cap + r] = 1;
        q->round = r;
        *used = r + 1 > *used ? r + 1 : *used;
    }
    return true;
}

/* The cycles the rounds of xf[].round (or, with `count`, "the r-th transfer of every receiver") take
 * by an estimate: per round the most words one sender sends at the exchange's rate, plus a round's
 * fixed cost (a sync, and about 60 cycles of latency and arming: assumed); with `copies`, the
 * staged words a receiver copies after the round, the most of one receiver at a cycle a word (its
 * workers, 64 bits a load and a store) and 200 cycles to start them (assumed). */
static uint64_t rounds_cost_copies(gx *G, bool count, uint32_t rounds, uint64_t *words, bool copies)
{
    lw *L = G->L;
    uint64_t xw = L->p->target.xbytes >= 4 ? L->p->target.xbytes / 4 : 1, total = 0;
    uint32_t *k = G->count;
    for (uint32_t r = 0; r < rounds; r++) {
        uint64_t most = 0, staged = 0;
        memset(words, 0, L->T * sizeof *words);
        memset(k, 0, L->T * sizeof *k);
        for (size_t i = 0; i < G->nxf; i++) {
            const lw_xfer *q = &G->xf[i];
            if (count ? k[q->dst]++ == r : q->round == r) {
                staged = copies && q->staged && q->words > staged ? q->words : staged;
                words[q->src] = q->bc && G->bcast ? q->words : words[q->src] + q->words; /* a broadcast: once */
                most = words[q->src] > most ? words[q->src] : most;
            }
        }
        total += ts_geom_cdiv(most, xw) + (L->p->target.sync_cycles ? L->p->target.sync_cycles : 90) + 60 +
                 (staged ? staged + 200 : 0);
    }
    return total;
}

static uint64_t rounds_cost(gx *G, bool count, uint32_t rounds, uint64_t *words)
{
    return rounds_cost_copies(G, count, rounds, words, false);
}

/* Packed rounds (L->pack): the p-th transfer of every receiver, p = 0, 1, .., in the first round in
 * which neither its receiver nor its sender has one, so that a sender serves one receiver a round
 * (a receiver may idle in one) where "the r-th transfer of every receiver" would have a sender
 * serve several at once; or, where it takes fewer rounds, pack_modular's. G->rounds becomes the
 * rounds used. Where the rounds unpacked cost less by rounds_cost (a sender with many receivers
 * and few rounds: more rounds cost more syncs), they stay (L->pack cleared). */
static ts_status gather_pack(gx *G)
{
    lw *L = G->L;
    uint32_t *sends = ts_calloc(L->T, sizeof *sends), most = 0;
    size_t *first = ts_calloc((size_t)L->T + 1, sizeof *first);
    if (!sends || !first) {
        ts_free(sends);
        ts_free(first);
        return gather_oom(G);
    }
    for (size_t i = 0; i < G->nxf; i++)
        if (++sends[G->xf[i].src] > most)
            most = sends[G->xf[i].src];
    for (size_t i = G->nxf; i-- > 0;) /* each receiver's first transfer (they are by receiver) */
        first[G->xf[i].dst] = i + 1;
    uint32_t cap = G->rounds + most; /* a greedy colouring needs fewer */
    uint8_t *sbusy = ts_calloc((size_t)L->T * cap, 1), *rbusy = ts_calloc((size_t)L->T * cap, 1);
    uint32_t *greedy = ts_calloc(G->nxf ? G->nxf : 1, sizeof *greedy);
    uint32_t *lo = ts_calloc(L->T, sizeof *lo), *hi = ts_calloc(L->T, sizeof *hi);
    ts_status rc = sbusy && rbusy && greedy && lo && hi ? TS_OK : gather_oom(G);
    uint32_t used = 0, mused = 0;
    for (uint32_t p = 0; p < G->rounds && rc == TS_OK; p++)
        for (uint32_t t = 0; t < L->T; t++) {
            size_t i = first[t] ? first[t] - 1 + p : G->nxf;
            if (i >= G->nxf || G->xf[i].dst != t)
                continue;
            lw_xfer *q = &G->xf[i];
            uint8_t *sb = &sbusy[(size_t)q->src * cap], *rb = &rbusy[(size_t)t * cap];
            uint32_t r = 0;
            while (r + 1 < cap && (rb[r] || sb[r]))
                r++;
            greedy[i] = r;
            rb[r] = sb[r] = 1;
            if (r + 1 > used)
                used = r + 1;
        }
    if (rc == TS_OK && !(pack_modular(G, cap, sbusy, rbusy, lo, hi, &mused) && mused < used)) {
        for (size_t i = 0; i < G->nxf; i++)
            G->xf[i].round = greedy[i];
        mused = used;
    }
    uint64_t *words = rc == TS_OK ? ts_calloc(L->T, sizeof *words) : NULL;
    if (rc == TS_OK && !words)
        rc = gather_oom(G);
    if (rc == TS_OK && rounds_cost(G, true, G->rounds, words) <= rounds_cost(G, false, mused, words))
        L->pack = false;
    else if (rc == TS_OK)
        G->rounds = mused;
    ts_free(words);
    ts_free(sends);
    ts_free(first);
    ts_free(sbusy);
    ts_free(rbusy);
    ts_free(greedy);
    ts_free(lo);
    ts_free(hi);
    return rc;
}

/* Transfers i and j send the same words (the same sender, pieces of the same places and lengths). */
static bool same_sends(const gx *G, const lw_xfer *a, const lw_xfer *b)
{
    if (a->src != b->src || a->words != b->words || a->p1 - a->p0 != b->p1 - b->p0)
        return false;
    for (size_t i = 0; i < a->p1 - a->p0; i++)
        if (G->pc[a->p0 + i].from != G->pc[b->p0 + i].from || G->pc[a->p0 + i].words != G->pc[b->p0 + i].words)
            return false;
    return true;
}

typedef struct bc_key { uint64_t h; size_t i; } bc_key;

static int bc_key_cmp(const void *a, const void *b)
{
    const bc_key *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Broadcast rounds (L->bcast): the transfers that send the same words from one sender (the readers
 * of one holder's block) form a group, sent once with the broadcast destination while every
 * receiver of the group listens (a sender that broadcasts in a round sends nothing else in it: its
 * other receivers would take the words). Groups, the largest first, take the first round in which
 * their sender and receivers are free; a lone transfer the round (receiver free, its sender not
 * broadcasting) in which its sender sends the fewest words. Where these rounds cost less than the
 * rounds as they stand (rounds_cost_copies: the busiest sender of each round, a broadcast counted
 * once, and the staged words copied after it),
 * they are taken (G->bcast) and G->rounds becomes theirs; else nothing changes. */
static ts_status gather_bcast(gx *G)
{
    lw *L = G->L;
    size_t n = G->nxf, T = L->T;
    if (n < 2)
        return TS_OK;
    bc_key *key = ts_calloc(n, sizeof *key);
    size_t *order = ts_calloc(n, sizeof *order), *gsz = ts_calloc(n, sizeof *gsz), *gfirst = ts_calloc(n, sizeof *gfirst);
    uint32_t *round = ts_calloc(n, sizeof *round);
    uint64_t *words = ts_calloc(T, sizeof *words);
    uint64_t *sload = NULL; /* per round and sender: words it sends (UINT64_MAX: it broadcasts) */
    uint8_t *rbusy = NULL;  /* per round and receiver */
    size_t cap = 0, nr = 0;
    ts_status rc = key && order && gsz && gfirst && round && words ? TS_OK : gather_oom(G);
    for (size_t i = 0; rc == TS_OK && i < n; i++) {
        const lw_xfer *q = &G->xf[i];
        uint64_t h = 0xcbf29ce484222325ull ^ q->src;
        for (size_t k = q->p0; k < q->p1; k++)
            h = ((h ^ G->pc[k].from) * 0x100000001b3ull ^ G->pc[k].words) * 0x100000001b3ull;
        key[i] = (bc_key){h, i};
    }
    if (rc == TS_OK)
        qsort(key, n, sizeof *key, bc_key_cmp);
    /* groups: runs of equal hashes whose sends are the same as the run's first (else alone) */
    size_t ng = 0;
    for (size_t a = 0, b; rc == TS_OK && a < n; a = b) {
        for (b = a + 1; b < n && key[b].h == key[a].h; b++)
            ;
        size_t g0 = ng++;
        gfirst[g0] = key[a].i, gsz[g0] = 0;
        for (size_t k = a; k < b; k++) {
            lw_xfer *q = &G->xf[key[k].i];
            size_t g = same_sends(G, q, &G->xf[key[a].i]) ? g0 : ng++;
            if (g != g0)
                gfirst[g] = key[k].i, gsz[g] = 0;
            q->grp = (uint32_t)g;
            gsz[g]++;
        }
    }
    for (size_t g = 0; g < ng; g++)
        order[g] = g;
    /* the largest groups first (then by their first transfer: the same order on every run) */
    for (size_t a = 1; rc == TS_OK && a < ng; a++) {
        size_t v = order[a], k = a;
        while (k > 0 && (gsz[order[k - 1]] < gsz[v] || (gsz[order[k - 1]] == gsz[v] && gfirst[order[k - 1]] > gfirst[v]))) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = v;
    }
    /* members of each group, by transfer index: a pass over the transfers per group would be n x ng */
    size_t *mstart = rc == TS_OK ? ts_calloc(ng + 1, sizeof *mstart) : NULL, *mem = rc == TS_OK ? ts_calloc(n, sizeof *mem) : NULL;
    if (rc == TS_OK && (!mstart || !mem))
        rc = gather_oom(G);
    for (size_t i = 0; rc == TS_OK && i < n; i++)
        mstart[G->xf[i].grp + 1]++;
    for (size_t g = 0; rc == TS_OK && g < ng; g++)
        mstart[g + 1] += mstart[g];
    for (size_t i = 0, *fill = gfirst; rc == TS_OK && i < n; i++) { /* gfirst reused as fill pointers */
        if (i == 0)
            for (size_t g = 0; g < ng; g++)
                fill[g] = mstart[g];
        mem[fill[G->xf[i].grp]++] = i;
    }
    for (size_t o = 0; rc == TS_OK && o < ng; o++) {
        size_t g = order[o], m0 = mstart[g], m1 = mstart[g + 1];
        const lw_xfer *q0 = &G->xf[mem[m0]];
        bool bc = m1 - m0 > 1;
        size_t best = SIZE_MAX;
        uint64_t bl = UINT64_MAX;
        for (size_t r = 0; r <= nr && rc == TS_OK; r++) {
            if (r == cap) { /* room for another round */
                size_t nc = cap ? 2 * cap : 8;
                uint64_t *s2 = ts_calloc(nc * T, sizeof *s2);
                uint8_t *r2 = ts_calloc(nc * T, 1);
                if (!s2 || !r2) {
                    ts_free(s2);
                    ts_free(r2);
                    rc = gather_oom(G);
                    break;
                }
                if (cap) {
                    memcpy(s2, sload, cap * T * sizeof *s2);
                    memcpy(r2, rbusy, cap * T);
                }
                ts_free(sload);
                ts_free(rbusy);
                sload = s2, rbusy = r2, cap = nc;
            }
            uint64_t sl = sload[r * T + q0->src];
            bool ok = bc ? sl == 0 : sl != UINT64_MAX;
            for (size_t k = m0; ok && k < m1; k++)
                ok = !rbusy[r * T + G->xf[mem[k]].dst];
            if (!ok)
                continue;
            if (bc) {
                best = r;
                break;
            }
            if (sl + q0->words < bl)
                bl = sl + q0->words, best = r;
        }
        if (rc != TS_OK)
            break;
        if (best == nr)
            nr++;
        sload[best * T + q0->src] = bc ? UINT64_MAX : sload[best * T + q0->src] + q0->words;
        for (size_t k = m0; k < m1; k++) {
            round[mem[k]] = (uint32_t)best;
            rbusy[best * T + G->xf[mem[k]].dst] = 1;
        }
    }
    if (rc == TS_OK) {
        uint64_t before = rounds_cost_copies(G, !L->pack, G->rounds, words, true);
        for (size_t i = 0; i < n; i++) {
            lw_xfer *q = &G->xf[i];
            uint32_t r0 = q->round;
            q->round = round[i];
            round[i] = r0;
            q->bc = mstart[q->grp + 1] - mstart[q->grp] > 1;
        }
        G->bcast = true;
        uint64_t after = rounds_cost_copies(G, false, (uint32_t)nr, words, true);
        if (after < before)
            G->rounds = (uint32_t)nr;
        else { /* as they stood */
            G->bcast = false;
            for (size_t i = 0; i < n; i++)
                G->xf[i].round = round[i], G->xf[i].bc = false;
        }
    }
    ts_free(mstart);
    ts_free(mem);
    ts_free(key);
    ts_free(order);
    ts_free(gsz);
    ts_free(gfirst);
    ts_free(round);
    ts_free(words);
    ts_free(sload);
    ts_free(rbusy);
    return rc;
}

/* Under planner split, and under the code spread (L->cspread) of any: pieces pc[i..) of transfer q,
 * 3 or more of equal words equally far apart in the sender (not following on where L->coalesce
 * joins those), sent by one loop over the send and the step of its address (5 instructions, where
 * each piece took 2; a repeat body takes no send): a holder of BERT-base's fc1 output sent each of
 * its 128 rows to 77 tiles, 9,856 sends and 29,568 instructions on one tile for each layer's
 * linear2. A cycle more a piece (the step and the branch, where the address was set). The end of
 * the run, i where there is none. */
static size_t send_run(lw *L, const lw_xfer *q, const lw_piece *pc, size_t i)
{
    size_t j = i + 1;
    int64_t st = j < q->p1 ? (int64_t)pc[j].from - (int64_t)pc[i].from : 0;
    while (j < q->p1 && pc[j].words == pc[i].words && (int64_t)pc[j].from - (int64_t)pc[j - 1].from == st)
        j++;
    if ((!L->cspread && L->p->planner != TS_LOWER_PLANNER_SPLIT) || j - i < 3 ||
        (L->coalesce && st == 4 * (int64_t)pc[i].words) || st > INT32_MAX || st < INT32_MIN)
        return i;
    const int32_t rd = send_reg(L);
    S(q->src, SETZI, RM(5), (int32_t)pc[i].from, 0);
    if (!L->onedst || i == q->p0) /* with onedst, rd holds q->dst since the transfer's first send */
        S(q->src, SETZI, rd, (int32_t)(q->dst + L->toff), 0);
    S(q->src, SETZI, RM(7), (int32_t)(j - i - 1), 0);
    size_t loop = S(q->src, SEND, RM(5), rd, (int32_t)pc[i].words);
    xrecord(L, q->src + L->toff, q->dst + L->toff, -(int64_t)((j - i) * pc[i].words));
    S(q->src, ADDI, RM(5), RM(5), (int32_t)st);
    S(q->src, BRNZDEC, RM(7), (int32_t)loop, 0);
    return j;
}

/* One exchange round: the transfers sel[0..nsel) (one per receiver, by receiver). A transfer staged
 * in this round is copied out in the next, while that round's words arrive in the other staging
 * buffer (pend[t]: tile t's transfer staged in the round before; SIZE_MAX none). */
static void gather_round(const gx *G, const size_t *sel, size_t nsel, size_t *pend)
{
    lw *L = G->L;
    const lw_piece *pc = G->pc;
    for (size_t k = 0; k < nsel; k++) { /* receivers arm first */
        const lw_xfer *q = &G->xf[sel[k]];
        lwi_recv(L, q->dst, q->to, q->src, q->words);
    }
    /* senders, receivers in ascending order (sel is sorted by receiver); a broadcast group's at its
     * first transfer, once, recorded for each of its receivers */
    for (size_t k = 0; k < nsel; k++) {
        const lw_xfer *q = &G->xf[sel[k]];
        if (G->bcast && q->bc) {
            bool first = true;
            for (size_t m = 0; m < k && first; m++)
                first = !(G->xf[sel[m]].bc && G->xf[sel[m]].grp == q->grp);
            if (!first)
                continue;
            for (size_t i = q->p0, j; i < q->p1; i = j) {
                uint64_t words = pc[i].words;
                for (j = i + 1; L->coalesce && j < q->p1 && pc[j].from == pc[j - 1].from + 4 * pc[j - 1].words; j++)
                    words += pc[j].words;
                S(q->src, SETZI, RM(5), (int32_t)pc[i].from, 0);
                if (i == q->p0)
                    S(q->src, SETZI, RM(6), -1, 0); /* every tile listening */
                S(q->src, SEND, RM(5), RM(6), (int32_t)words);
                for (size_t m = k; m < nsel; m++)
                    if (G->xf[sel[m]].bc && G->xf[sel[m]].grp == q->grp)
                        xrecord(L, q->src, G->xf[sel[m]].dst, -(int64_t)words);
            }
            continue;
        }
        for (size_t i = q->p0, j; i < q->p1; i = j) {
            if ((j = send_run(L, q, pc, i)) > i)
                continue;
            uint64_t words = pc[i].words; /* coalesce: pieces that follow on in the sender's memory */
            for (j = i + 1; L->coalesce && j < q->p1 && pc[j].from == pc[j - 1].from + 4 * pc[j - 1].words; j++)
                words += pc[j].words;
            /* with onedst, send_reg holds q->dst since the transfer's first send */
            send_words(L, q->src, pc[i].from, q->dst, words, L->onedst && i > q->p0);
        }
    }
    for (uint32_t t = 0; t < L->T; t++) /* the round before's, while this round's words arrive */
        if (pend[t] != SIZE_MAX) {
            copy_staged(G, &G->xf[pend[t]]);
            pend[t] = SIZE_MAX;
        }
    for (size_t k = 0; k < nsel; k++) {
        const lw_xfer *q = &G->xf[sel[k]];
        S(q->dst, RXWAIT, 0, 0, 0);
        if (q->staged)
            pend[q->dst] = sel[k];
    }
    lwi_sync_all(L);
}

/* The exchange rounds: round r carries the r-th transfer of every receiver. A staged transfer of
 * round r lands in staging buffer sb[r mod 2] (sb[1] 0: one round, one buffer) and is copied out
 * in the next round, the last round's at the start of the superstep after it (with the pieces a
 * tile holds itself, gather_local), where the receiver's workers had held up the round's sync. */
static ts_status gather_rounds(gx *G, const uint64_t sb[2])
{
    size_t *sel = ts_calloc(G->nxf ? G->nxf : 1, sizeof *sel);
    size_t *pend = ts_malloc(G->L->T * sizeof *pend);
    if (!sel || !pend) {
        ts_free(sel);
        ts_free(pend);
        return gather_oom(G);
    }
    for (uint32_t t = 0; t < G->L->T; t++)
        pend[t] = SIZE_MAX;
    for (uint32_t r = 0; r < G->rounds; r++) {
        memset(G->count, 0, G->L->T * sizeof *G->count);
        size_t nsel = 0;
        bool late = false;
        for (size_t i = 0; i < G->nxf; i++)
            if (G->L->pack || G->bcast ? G->xf[i].round == r : G->count[G->xf[i].dst]++ == r) {
                sel[nsel++] = i;
                late = late || (r == 0 && lwi_late(G->L, G->xf[i].dst, G->xf[i].src));
                if (G->xf[i].staged)
                    G->xf[i].to = sb[1] && r % 2 ? sb[1] : sb[0];
            }
        if (late) /* the superstep holds code (a gather's local copies) that would delay a receiver */
            lwi_sync_all(G->L);
        gather_round(G, sel, nsel, pend);
    }
    for (uint32_t t = 0; t < G->L->T; t++)
        if (pend[t] != SIZE_MAX)
            copy_staged(G, &G->xf[pend[t]]);
    ts_free(sel);
    ts_free(pend);
    return TS_OK;
}

/* Tile t's pieces it holds itself copied by its workers (L->wlocal), 64 bits a load: per run of
 * pieces of equal length equally far apart where they come from and where they land,
 * copy_run_workers (each piece had its own 15 issues of set-up a worker); false (nothing emitted)
 * unless every such piece is 8-byte aligned and whole pairs. The pieces: first, then next[first],
 * ... (in the order of the pieces; SIZE_MAX ends). */
static bool gather_local_workers(const gx *G, uint32_t t, size_t first, const size_t *next)
{
    lw *L = G->L;
    for (size_t i = first; i != SIZE_MAX; i = next[i]) {
        const lw_piece *q = &G->pc[i];
        if (q->from % 8 || q->to % 8 || q->words % 2)
            return false;
    }
    if (first == SIZE_MAX)
        return true;
    size_t entry = L->tiles[t].wrk.n;
    for (size_t i = first, j; i != SIZE_MAX; i = j) {
        const lw_piece *q = &G->pc[i];
        j = next[i];
        int64_t sf = j != SIZE_MAX ? (int64_t)(G->pc[j].from - q->from) : 0;
        int64_t st = j != SIZE_MAX ? (int64_t)(G->pc[j].to - q->to) : 0;
        uint32_t n = 1;
        for (size_t k = i; j != SIZE_MAX && G->pc[j].words == q->words &&
                           (int64_t)(G->pc[j].from - G->pc[k].from) == sf && (int64_t)(G->pc[j].to - G->pc[k].to) == st;
             k = j, j = next[j])
            n++;
        copy_run_workers(L, t, q->from, sf, q->to, st, n, (uint32_t)q->words);
    }
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
    return true;
}

/* What a tile holds itself: its supervisor copies it (start of the compute superstep), or its
 * workers (L->wlocal). A tile's own pieces are chained once (first[t], next[i]), so that each
 * tile's are visited alone. */
static void gather_local(const gx *G)
{
    lw *L = G->L;
    uint8_t *how = L->wlocal ? ts_calloc(L->T, 1) : NULL; /* per tile: 0 not yet, 1 its workers, 2 its supervisor */
    size_t *first = how ? ts_malloc((L->T + G->npc) * sizeof *first) : NULL, *next = first ? first + L->T : NULL;
    if (how && !first) { /* no chains: the supervisors copy */
        ts_free(how);
        how = NULL;
    }
    if (how) {
        for (uint32_t t = 0; t < L->T; t++)
            first[t] = SIZE_MAX;
        for (size_t i = G->npc; i-- > 0;)
            if (G->pc[i].src == G->pc[i].dst) {
                next[i] = first[G->pc[i].dst];
                first[G->pc[i].dst] = i;
            }
    }
    for (size_t i = 0; i < G->npc; i++) {
        const lw_piece *q = &G->pc[i];
        if (q->src != q->dst)
            continue;
        if (how && !how[q->dst])
            how[q->dst] = gather_local_workers(G, q->dst, first[q->dst], next) ? 1 : 2;
        if (how && how[q->dst] == 1)
            continue;
        S(q->dst, SETZI, RM(1), (int32_t)q->from, 0);
        S(q->dst, SETZI, RM(2), (int32_t)q->to, 0);
        S(q->dst, SETZI, RM(3), (int32_t)q->words, 0);
        S(q->dst, RPT, RM(3), 2, 0);
        S(q->dst, LD32STEP, RM(4), RM(1), 4);
        S(q->dst, ST32STEP, RM(4), RM(2), 4);
    }
    ts_free(first);
    ts_free(how);
}

/* Tile L->base + t, t < tn, needs nr[t] (NULL: 1) ranges of tensor x, the j-th [lo[t] + j*sst,
 * hi[t] + j*sst), at element offsets j*dstr of one contiguous slice of its memory; where[t] gets the
 * slice's address. In place when every range lies on the tile itself at those offsets (unless force);
 * otherwise gathered into one buffer (same address on every tile, freed with the operator; the
 * caller's when L->into is set), as the top of this file says. */
static ts_status gather(lw *L, int x, uint32_t tn, const uint64_t *lo, const uint64_t *hi, const uint32_t *nr,
                       uint64_t sst, uint64_t dstr, bool force, uint64_t *where)
{
    gx G = {.L = L, .P = &L->pl[x], .xname = ts_graph_get_tensor(L->g, x)->name, .es = L->pl[x].es};
    bool *remote = ts_calloc(tn ? tn : 1, sizeof *remote);
    if (!remote)
        return gather_oom(&G);
    uint64_t need = gather_need(&G, tn, lo, hi, nr, sst, dstr, force, where, remote);
    if (!need) {
        ts_free(remote);
        return TS_OK;
    }
    /* the buffer receives while the tile sends from x's chunk: keep them in different elements */
    uint64_t av[2];
    lwi_elem_span(L, G.P->addr, G.P->chunk * G.es, av);
    uint64_t g = L->into ? L->into : lwi_talloc_avoid(L, need, av[0], av[1]);
    G.count = ts_calloc(L->T, sizeof *G.count);
    ts_status rc = G.count ? TS_OK : gather_oom(&G);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        if (!remote[t])
            continue;
        where[t] = g;
        size_t pt0 = G.npc, x0 = G.nxf;
        uint32_t d = L->base + t; /* the receiver */
        rc = gather_pieces(&G, d, lo[t], hi[t], nr ? nr[t] : 1, sst, dstr, g);
        if (rc != TS_OK)
            break;
        sort_by_sender(&G, d, pt0);
        rc = gather_transfers(&G, d, pt0);
        if (rc == TS_OK && L->stagger && !L->balance)
            stagger(&G, t, x0);
    }
    if (rc == TS_OK && L->stagger && L->balance)
        rc = gather_balance(&G);
    if (rc == TS_OK && L->bcast && !L->pack)
        rc = gather_bcast(&G);
    if (rc == TS_OK && L->pack)
        rc = gather_pack(&G);
    /* the staging buffers: two used in turn where there are rounds after the first (a round's
     * copies out of one then overlap the next round's words into the other) */
    uint64_t sb[2] = {0, 0};
    if (G.stage)
        sb[0] = lwi_talloc_avoid(L, G.stage * 4, av[0], av[1]);
    if (G.stage && G.rounds > 1)
        sb[1] = lwi_talloc_avoid(L, G.stage * 4, av[0], av[1]);
    if (rc == TS_OK)
        rc = gather_rounds(&G, sb);
    if (rc == TS_OK)
        gather_local(&G);
    ts_free(G.pc);
    ts_free(G.xf);
    ts_free(G.count);
    ts_free(remote);
    return rc;
}

ts_status lwi_gather(lw *L, int x, uint32_t tn, const uint64_t *lo, const uint64_t *hi, const uint32_t *nr,
                     uint64_t sst, uint64_t dstr, bool force, uint64_t *where)
{
    uint32_t toff = L->toff;
    L->toff = 0; /* senders and receivers named as they are (the receivers base + t) */
    ts_status rc = gather(L, x, tn, lo, hi, nr, sst, dstr, force, where);
    L->toff = toff;
    return rc;
}
