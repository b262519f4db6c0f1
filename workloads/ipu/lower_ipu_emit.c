/* workloads/ipu/lower_ipu_emit.c — the IPU lowering's instructions: each tile's supervisor and
 * worker code, the workers started and awaited, chip-wide syncs and their superstep marks, and the
 * program the tiles' code becomes (lower_ipu_int.h). */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"

size_t lwi_emit(lw *L, lw_code *c, int op, int32_t a0, int32_t a1, int32_t a2)
{
    if (c->n >= c->cap) { /* grown only when full */
        L->code_cut |= c->ncode > L->code_lim;
        if (L->code_cut && c->cap >= 64)
            c->n = 0;
        else if (ts_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v)) {
            L->oom = true;
            return c->n;
        }
    }
    c->v[c->n] = (lw_insn){.op = (uint16_t)op, .a = {a0, a1, a2}};
    c->ncode += op != LW_BUNDLE && op != LW_BUNDLE_END;
    return c->n++;
}

int32_t lwi_fbits(float f)
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* Operand of instruction i that is a branch target (a wrk index), or -1. */
static int label_operand(const lw_insn *i)
{
    switch (i->op) {
    case LW_BR: return 0;
    case LW_BRZ:
    case LW_BRNZ:
    case LW_BRNEG:
    case LW_BRNZDEC: return 1;
    default: return -1;
    }
}

/* Operand k of instruction i as it compares: a branch target relative to the routine's start. */
static int64_t operand_at(const lw_insn *i, int k, size_t start)
{
    return label_operand(i) == k ? (int64_t)i->a[k] - (int64_t)start : (int64_t)i->a[k];
}

/* A routine's hash, to find its copies: each instruction (branch targets relative to the start)
 * mixed into one word by two independent multiplies, the words summed into a rotated sum (a short
 * dependency chain per instruction; a collision costs one routine_same, never a wrong reuse). */
static uint64_t routine_hash(const lw_insn *v, size_t start, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        const lw_insn *x = &v[start + i];
        const uint64_t a0 = (uint32_t)operand_at(x, 0, start), a1 = (uint32_t)operand_at(x, 1, start),
                       a2 = (uint32_t)operand_at(x, 2, start);
        uint64_t w = (a0 << 32 | a1) * 0x9e3779b97f4a7c15ull + (a2 << 16 | x->op) * 0xc2b2ae3d27d4eb4full;
        h = ((h << 23) | (h >> 41)) + (w ^ (w >> 29));
    }
    return h;
}

static bool routine_same(const lw_insn *v, size_t a, size_t b, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        const lw_insn *x = &v[a + i], *y = &v[b + i];
        if (x->op != y->op)
            return false;
        const int l = label_operand(x);
        for (int k = 0; k < 3; k++)
            if (k == l ? (int64_t)x->a[k] - (int64_t)a != (int64_t)y->a[k] - (int64_t)b : x->a[k] != y->a[k])
                return false;
    }
    return true;
}

size_t lwi_reuse_routine(lw *L, uint32_t t, size_t start, size_t ncode0)
{
    lw_tile *T = &LWT(t);
    size_t len = T->wrk.n - start;
    if (L->oom || L->code_cut || !len)
        return start;
    uint64_t h = routine_hash(T->wrk.v, start, len);
    for (size_t r = 0; r < T->nrout; r++)
        if (T->rout[r].hash == h && T->rout[r].len == len && routine_same(T->wrk.v, T->rout[r].start, start, len)) {
            T->wrk.n = start; /* taken back */
            T->wrk.ncode = ncode0;
            return T->rout[r].start;
        }
    if (ts_grow((void **)&T->rout, &T->caprout, T->nrout + 1, sizeof *T->rout)) {
        L->oom = true;
        return start;
    }
    T->rout[T->nrout++] = (lw_rout){.start = start, .len = len, .hash = h};
    return start;
}

void lwi_mark(lw *L, uint32_t t)
{
    if (L->code_cut)
        return;
    if (ts_grow((void **)&L->marks, &L->capmarks, L->nmarks + 1, sizeof *L->marks)) {
        L->oom = true;
        return;
    }
    L->marks[L->nmarks++] = (lw_mark){t + L->toff, (uint32_t)LWT(t).sup.n, L->step};
}

void lwi_sync_all(lw *L)
{
    uint32_t toff = L->toff;
    L->toff = 0; /* every tile, as it is */
    for (uint32_t t = 0; t < L->T; t++)
        S(t, SYNC, TS_IPU_SYNC_CHIP, 0, 0);
    L->step++;
    for (uint32_t t = 0; t < L->T; t++)
        lwi_mark(L, t);
    L->toff = toff;
}

void lwi_run_all(lw *L, uint32_t t, size_t entry)
{
    S(t, SETZI, RM(1), 0, 0);
    S(t, RUNALL, (int32_t)entry, RM(1), 0);
    S(t, SYNC, TS_IPU_SYNC_WORKERS, 0, 0);
}

void lwi_run_all_m0(lw *L, uint32_t t, size_t entry, uint64_t v)
{
    S(t, SETZI, RM(1), (int32_t)v, 0);
    S(t, RUNALL, (int32_t)entry, RM(1), 0);
    S(t, SYNC, TS_IPU_SYNC_WORKERS, 0, 0);
}

/* $m1 := this worker's first row of `rows` split in blocks of rw = ceil(rows / workers): min(w rw,
 * rows - rw), computed without branches so every worker runs the same instructions (the last
 * blocks overlap and recompute the same rows; they write the same values). */
void lwi_emit_start_row(lw *L, uint32_t t, uint32_t rows, uint32_t rw)
{
    W(t, GET, RM(1), TS_IPU_CSR_WORKER, 0);
    W(t, MULI, RM(1), RM(1), (int32_t)rw);
    W(t, SETZI, RM(2), (int32_t)(rows - rw), 0);
    W(t, CMPSLT, RM(3), RM(1), RM(2));
    W(t, SUB, RM(4), RM(1), RM(2));
    W(t, MUL, RM(4), RM(4), RM(3));
    W(t, ADD, RM(1), RM(2), RM(4));
}

void lwi_use_tiles(lw *L, uint32_t n)
{
    if (L->measure && L->cur >= 0 && n) { /* the tiles its weights may go to (lw_wt) */
        lw_wt *e = &L->w[L->cur];
        uint32_t lo = L->base, hi = L->base + n;
        e->lo = e->lo < e->hi && e->lo < lo ? e->lo : lo;
        e->hi = e->hi > hi ? e->hi : hi;
    }
    if (n > L->optiles)
        L->optiles = n;
    if (L->base + n > L->used)
        L->used = L->base + n;
}

/* FNV-1a over v's n bytes, from h. */
static uint64_t fnv(uint64_t h, const void *v, size_t n)
{
    const unsigned char *c = v;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

/* The current operator's key: its kind, shapes and name without its numbers that follow no letter
 * (a layer's: "layers.3.ln1", ".../encoder_layer_6/..."; "ln1" and "ln2" stay apart, "ln_1" and
 * "ln_2" do not), the same for the same operator of every layer of a model of identical layers. */
static uint64_t op_key(const lw *L)
{
    const ts_graph_node *n = ts_graph_get_node(L->g, L->cur);
    uint64_t h = fnv(0xcbf29ce484222325ull, &n->op, sizeof n->op);
    bool num = true; /* in a number that follows no letter (or at the start) */
    for (const char *c = n->name; c && *c; c++) {
        bool digit = *c >= '0' && *c <= '9';
        num = digit && num;
        if (!num)
            h = fnv(h, c, 1);
        if (!digit)
            num = !((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'));
    }
    for (size_t k = 0; k < n->nin + n->nout; k++) {
        const ts_graph_tensor *x = ts_graph_get_tensor(L->g, k < n->nin ? n->in[k] : n->out[k - n->nin]);
        h = fnv(h, &x->rank, sizeof x->rank);
        h = fnv(h, x->dims, (size_t)(x->rank > 0 ? x->rank : 0) * sizeof *x->dims);
    }
    return h;
}

uint32_t lwi_spread(lw *L, uint32_t tn)
{
    /* few: an eighth of the chip at most (a decode step's rows, a head's Softmax); operators of more
     * tiles start at tile 0 as before */
    L->base = 0;
    if (!tn || (uint64_t)tn * 8 > L->T)
        return 0;
    /* the first tile from the operator's key (op_key): operators of one layer land on different
     * tiles (a layer's two LayerNorms too, whose scale and bias then take the memory of different
     * tiles), while the same operator of every layer of a decoder lands on the same ones, so that
     * identical layers cost the same (--layers-simulated scales them exactly) */
    uint64_t h = op_key(L);
    if (L->measure && L->cur >= 0)
        L->w[L->cur].spread = true;
    if (!L->tload) {
        L->base = (uint32_t)(h % (L->T - tn + 1));
        return L->base;
    }
    /* the runs whose busiest tile holds the fewest weights of the operators of many tiles: the
     * hash picks one of them */
    uint64_t best = UINT64_MAX, nbest = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t b = 0, k = 0; b + tn <= L->T; b++) {
            uint64_t m = 0;
            for (uint32_t t = b; t < b + tn; t++)
                m = L->tload[t] > m ? L->tload[t] : m;
            if (!pass && m < best)
                best = m, nbest = 0;
            if (!pass && m == best)
                nbest++;
            if (pass && m == best && k++ == h % nbest) {
                L->base = b;
                return L->base;
            }
        }
    return L->base;
}

/* The first tile of each run of tn tiles (tn < L->T): wmax[b] the most weights (L->wload) on a tile
 * of the run from b (a window's maximum: the candidates, decreasing, in q). Owned by the caller;
 * NULL: out of host memory. */
static uint64_t *runs_wmax(const lw *L, uint32_t tn)
{
    uint64_t *wmax = ts_malloc((size_t)(L->T - tn + 1) * sizeof *wmax);
    uint32_t *q = ts_malloc((size_t)L->T * sizeof *q), qh = 0, qt = 0;
    if (!wmax || !q) {
        ts_free(wmax);
        ts_free(q);
        return NULL;
    }
    for (uint32_t t = 0; t < L->T; t++) {
        while (qt > qh && L->wload[q[qt - 1]] <= L->wload[t])
            qt--;
        q[qt++] = t;
        if (q[qh] + tn <= t)
            qh++;
        if (t + 1 >= tn)
            wmax[t + 1 - tn] = L->wload[q[qh]];
    }
    ts_free(q);
    return wmax;
}

/* Under the code spread: the first tile for an operator of key k met before, whose last one put
 * prof[j] instructions on its tile j: the run whose fullest tile where the profile is heavy (at
 * least half its most), the code already there and the profile added, is least full, and of those
 * the one whose fullest tile is least full, among the runs whose weights (wmax) are no more than
 * at the keyed start's and a quarter of the tile; that start first, then the runs from tile 0.
 * The heavy tiles come first: a tile of other operators' code on every run would otherwise decide,
 * by the few instructions the operator adds there, and the same operator of every layer stay put. */
static uint32_t code_start(const lw *L, const struct lw_pkey *k, const uint64_t *wmax)
{
    uint32_t tn = k->tn, best = k->t0, peak = 0;
    /* the weights a run may hold more than the keyed start's: a quarter of the tile (ViT-B/16 at
     * batch 4: the keyed start of each layer's in-projection, 144 tiles from tile 0, was the run of
     * the fewest weights, and no other was as light; the data check stays the judge) */
    uint64_t slack = L->p->target.sram_bytes / 4;
    for (uint32_t j = 0; j < tn; j++)
        peak = k->prof[j] > peak ? k->prof[j] : peak;
    uint64_t most = UINT64_MAX, hmost = UINT64_MAX;
    for (uint32_t i = 0; i <= L->T - tn; i++) {
        uint32_t b = i ? i - 1 + (i - 1 >= k->t0) : k->t0; /* the keyed start, then the others */
        if (wmax[b] > wmax[k->t0] + slack)
            continue;
        uint64_t m = 0, h = 0;
        for (uint32_t j = 0; j < tn; j++) {
            uint64_t c = (uint64_t)L->code0[b + j] + k->prof[j];
            m = c > m ? c : m;
            h = (uint64_t)k->prof[j] * 2 >= peak && c > h ? c : h;
        }
        if (h < hmost || (h == hmost && m < most))
            most = m, hmost = h, best = b;
    }
    return best;
}

uint32_t lwi_place_op(lw *L, uint32_t tn, bool keyed)
{
    L->base = L->toff = 0;
    L->pk = -1;
    if (!L->wload || !tn || tn >= L->T || L->cur < 0)
        return 0;
    uint64_t key = op_key(L);
    for (size_t k = 0; k < L->npkeys && keyed; k++)
        if (L->pkeys[k].key == key && L->pkeys[k].tn == tn) {
            uint32_t b = L->pkeys[k].t0;
            lw_wt *e = &L->w[L->cur];
            if (L->cspread && !L->measure && e->cs) { /* the first pass's choice */
                b = e->cs - 1;
            } else if (L->cspread && L->pkeys[k].prof) {
                uint64_t *wmax = runs_wmax(L, tn);
                if (!wmax) {
                    L->oom = true;
                    return 0;
                }
                b = code_start(L, &L->pkeys[k], wmax);
                ts_free(wmax);
            }
            if (L->cspread && L->measure)
                e->cs = b + 1;
            L->pk = (int)k;
            L->pk_t0 = b;
            L->base = L->toff = b;
            return b;
        }
    /* the first run whose fullest tile holds the fewest weights */
    uint64_t *wmax = runs_wmax(L, tn);
    if (!wmax) {
        L->oom = true;
        return 0;
    }
    uint32_t best = 0;
    for (uint32_t b = 1; b + tn <= L->T; b++)
        best = wmax[b] < wmax[best] ? b : best;
    ts_free(wmax);
    if (keyed && ts_grow((void **)&L->pkeys, &L->cappkeys, L->npkeys + 1, sizeof *L->pkeys))
        L->oom = true;
    else if (keyed) {
        L->pk = (int)L->npkeys;
        L->pk_t0 = best;
        L->pkeys[L->npkeys++] = (struct lw_pkey){key, tn, best, NULL};
    }
    L->base = L->toff = best;
    return best;
}

void lwi_code_profile(lw *L)
{
    if (!L->cspread || L->pk < 0)
        return;
    struct lw_pkey *k = &L->pkeys[L->pk];
    if (!k->prof && !(k->prof = ts_calloc(k->tn, sizeof *k->prof))) {
        L->oom = true;
        return;
    }
    for (uint32_t j = 0; j < k->tn; j++) {
        const lw_tile *T = &L->tiles[L->pk_t0 + j];
        size_t now = T->sup.ncode + T->wrk.ncode;
        k->prof[j] = now > L->code0[L->pk_t0 + j] ? (uint32_t)(now - L->code0[L->pk_t0 + j]) : 0;
    }
}

/* Operator `node` put n instructions on a tile whose most are *c: kept among them if among the most. */
static void ctop_add(lw_ctop *c, int node, uint32_t n)
{
    for (int k = 0; k < LW_CODE_TOP && n; k++) {
        if (n <= c->n[k])
            continue;
        for (int j = LW_CODE_TOP - 1; j > k; j--)
            c->node[j] = c->node[j - 1], c->n[j] = c->n[j - 1];
        c->node[k] = node, c->n[k] = n;
        return;
    }
}

ts_status lwi_check_code(lw *L)
{
    uint64_t cap = L->p->target.sram_bytes;
    for (uint32_t t = 0; t < L->T; t++) {
        size_t now = L->tiles[t].sup.ncode + L->tiles[t].wrk.ncode;
        if (now > L->code0[t])
            ctop_add(&L->ctop[t], L->cur, (uint32_t)(now - L->code0[t]));
        L->code0[t] = (uint32_t)now;
        uint64_t bytes = ((uint64_t)now + 1) * LW_INSN_BYTES; /* and its halt */
        if (bytes <= cap || L->measure) /* the first pass's memory is not checked: its code neither */
            continue;
        char most[320] = "";
        size_t k = 0;
        for (int j = 0; j < LW_CODE_TOP && L->ctop[t].n[j] && k < sizeof most; j++) {
            const ts_graph_node *n = ts_graph_get_node(L->g, L->ctop[t].node[j]);
            int w = snprintf(most + k, sizeof most - k, "%s%s '%s' %u", j ? ", " : "", ts_graph_op_name(n->op),
                             n->name, L->ctop[t].n[j]);
            k += w > 0 ? (size_t)w : 0;
        }
        return ts_err_set(L->err, TS_EINPUT,
                          "tile %u: code of %zu instructions (%llu bytes) does not fit its memory of %llu bytes: "
                          "%llu bytes over (the most instructions from %s)", t, now + 1, (unsigned long long)bytes,
                          (unsigned long long)cap, (unsigned long long)(bytes - cap), most);
    }
    return TS_OK;
}

/* Instruction i of tile T's stream (its supervisor code, then its worker code moved by off). */
static void stream_insn(const lw_tile *T, size_t i, int32_t off, ts_insn *d)
{
    bool w = i >= T->sup.n;
    lw_insn in = w ? T->wrk.v[i - T->sup.n] : T->sup.v[i];
    if (in.op == LW_RUN || in.op == LW_RUNALL)
        in.a[0] += off;
    else if (w && (in.op == LW_BR))
        in.a[0] += off;
    else if (w && (in.op == LW_BRZ || in.op == LW_BRNZ || in.op == LW_BRNEG || in.op == LW_BRNZDEC))
        in.a[1] += off;
    memset(d, 0, sizeof *d);
    d->op = in.op;
    memcpy(d->a, in.a, sizeof in.a);
    if (in.op == LW_LD2XST64PACE) /* its pointers packed by LW_PACK3 */
        for (int k = 0; k < 3; k++)
            d->a[2 + k] = in.a[2] >> 8 * k & 0xff;
}

/* Tile t's stream: its supervisor code, then its worker code, the labels of the worker code (run,
 * runall, branches) moved past the supervisor's. The stream is built packed (about 5 bytes an
 * instruction where a ts_insn takes 32): each instruction packed once into *buf (grown as needed,
 * kept by the caller for the next tile), then copied into the stream at its length. */
static ts_status emit_stream(lw *L, uint32_t t, uint8_t **buf, size_t *cap)
{
    ts_stream *s = ts_program_stream(L->prog, 0, t);
    lw_tile *T = &L->tiles[t];
    size_t n = T->sup.n + T->wrk.n;
    if (!s || n > UINT32_MAX / TS_INSN_PACKED_MAX)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
    int32_t off = (int32_t)T->sup.n;
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (bytes + TS_INSN_PACKED_MAX > *cap) {
            void *v = *buf;
            if (ts_grow(&v, cap, bytes + TS_INSN_PACKED_MAX, 1))
                return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
            *buf = v;
        }
        ts_insn d;
        stream_insn(T, i, off, &d);
        bytes += ts_insn_pack(&d, *buf + bytes);
    }
    if (!(s->packed = ts_malloc(bytes ? bytes : 1)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
    if (bytes)
        memcpy(s->packed, *buf, bytes);
    s->packed_len = (uint32_t)bytes;
    s->n = (uint32_t)n;
    s->cap = s->packed_len;
    return TS_OK;
}

ts_status lwi_finish(lw *L, ts_program **out)
{
    for (uint32_t t = 0; t < L->used; t++)
        S(t, HALT, 0, 0, 0);
    if (L->oom)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
    if (L->code_cut) /* the code check of the operator that passed the tile failed before this */
        return ts_err_set(L->err, TS_EINTERNAL, "a tile's code passed its memory and was not refused");
    ts_status xc = lwi_check_exchange(L);
    if (xc != TS_OK)
        return xc;
    ts_free(L->xr); /* checked: the records are not needed again */
    L->xr = NULL;
    L->nxr = L->capxr = 0;
    uint8_t *buf = NULL; /* one tile's packed stream at a time */
    size_t cap = 0;
    for (uint32_t t = 0; t < L->used; t++) {
        ts_status rc = emit_stream(L, t, &buf, &cap);
        if (rc != TS_OK) {
            ts_free(buf);
            return rc;
        }
        ts_free(L->tiles[t].sup.v); /* the tile's code is the stream's now: the host holds one copy */
        ts_free(L->tiles[t].wrk.v);
        L->tiles[t].sup = L->tiles[t].wrk = (lw_code){0};
    }
    ts_free(buf);
    /* the program's marks at their number at once (no room to grow), then the lowering's freed */
    size_t nm = 0;
    for (size_t i = 0; i < L->nmarks; i++)
        nm += L->marks[i].tile < L->used;
    if (nm && !L->prog->marks) {
        if (!(L->prog->marks = ts_calloc(nm, sizeof *L->prog->marks)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
        L->prog->cap_marks = nm;
    }
    /* added tile by tile, each tile's in the order they were taken (its pcs and ids only grow): the
     * program's order (stream, pc, id), so that ts_program_canonicalize finds them sorted */
    size_t *first = ts_calloc((size_t)L->used + 1, sizeof *first); /* a tile's first in ord */
    uint32_t *ord = ts_malloc((nm ? nm : 1) * sizeof *ord);
    if (!first || !ord) {
        ts_free(first);
        ts_free(ord);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
    }
    for (size_t i = 0; i < L->nmarks; i++)
        if (L->marks[i].tile < L->used)
            first[L->marks[i].tile + 1]++;
    for (uint32_t t = 0; t < L->used; t++)
        first[t + 1] += first[t];
    for (size_t i = 0; i < L->nmarks; i++)
        if (L->marks[i].tile < L->used)
            ord[first[L->marks[i].tile]++] = (uint32_t)i;
    ts_status rc = TS_OK;
    for (size_t j = 0, si = 0; j < nm && rc == TS_OK; j++) {
        const lw_mark *k = &L->marks[ord[j]];
        if (!j || k->tile != L->marks[ord[j - 1]].tile)
            si = (size_t)(ts_program_stream(L->prog, 0, k->tile) - L->prog->streams);
        rc = ts_program_add_mark(L->prog, (uint32_t)si, k->pc, k->id, L->err);
    }
    ts_free(first);
    ts_free(ord);
    if (rc != TS_OK)
        return rc;
    ts_free(L->marks);
    L->marks = NULL;
    L->nmarks = L->capmarks = 0;
    ts_program_canonicalize(L->prog);
    *out = L->prog;
    L->prog = NULL;
    return TS_OK;
}
