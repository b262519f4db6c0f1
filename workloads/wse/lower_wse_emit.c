/* workloads/wse/lower_wse_emit.c — emission: the instruction helpers every stage's code uses,
 * each PE's stream with its pass-through routes, the sources and sinks, the joins, and the pass
 * that emits every stage (the other kinds: lower_wse_emit_mm.c, _lb.c, _pe.c).
 */
#include <stdarg.h>

#include "workloads/wse/lower_wse_int.h"

void ts_lww_op(lw_gen *G, int code, int n, ...)
{
    ts_insn *in = ts_stream_emit(G->s, (uint16_t)code);
    if (!in) {
        G->oom = true;
        return;
    }
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        in->a[i] = va_arg(ap, int);
    va_end(ap);
}

int ts_lww_pc(const lw_gen *G) { return (int)G->s->n; }

void ts_lww_in_to_mem(lw_gen *G, uint32_t cin, uint64_t addr, uint64_t n, int stride)
{
    while (n) {
        int k = n > PIECE ? PIECE : (int)n;
        ts_lww_op(G, WSE_OP_DSDIN, 3, 12, (int)cin, k);
        ts_lww_op(G, WSE_OP_DSDM, 4, 13, (int)addr, k, stride);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        addr += (uint64_t)(k * stride) * 4;
        n -= (uint64_t)k;
    }
}

void ts_lww_in_part(lw_gen *G, uint32_t cin, uint64_t junk, uint64_t addr, uint64_t lo, uint64_t hi, uint64_t n)
{
    ts_lww_in_to_mem(G, cin, junk, lo, 0);
    ts_lww_in_to_mem(G, cin, addr, hi - lo, 1);
    ts_lww_in_to_mem(G, cin, junk, n - hi, 0);
}

void ts_lww_in_to_out(lw_gen *G, uint32_t cin, uint32_t cout, uint64_t n)
{
    while (n) {
        int k = n > PIECE ? PIECE : (int)n;
        ts_lww_op(G, WSE_OP_DSDIN, 3, 12, (int)cin, k);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 13, (int)cout, k, 0);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        n -= (uint64_t)k;
    }
}

void ts_lww_mem_to_out(lw_gen *G, uint64_t addr, uint64_t n, uint32_t cout)
{
    while (n) {
        int k = n > PIECE ? PIECE : (int)n;
        ts_lww_op(G, WSE_OP_DSDM, 4, 12, (int)addr, k, 1);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 13, (int)cout, k, 0);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        addr += (uint64_t)k * 4;
        n -= (uint64_t)k;
    }
}

int ts_lww_loop_head(lw_gen *G, int rc, int64_t n)
{
    ts_lww_op(G, WSE_OP_LI, 2, rc, (int)n);
    return ts_lww_pc(G);
}

void ts_lww_loop_end(lw_gen *G, int rc, int head)
{
    ts_lww_op(G, WSE_OP_ADDI, 3, rc, rc, -1);
    ts_lww_op(G, WSE_OP_BNZ, 2, rc, head);
}

void ts_lww_relu_mem(lw_gen *G, int addr, int64_t n)
{
    ts_lww_op(G, WSE_OP_LI, 2, 6, addr);
    int rl = ts_lww_loop_head(G, 7, n);
    ts_lww_op(G, WSE_OP_LD, 3, 5, 6, 0);
    ts_lww_op(G, WSE_OP_BLT, 3, 5, 15, rl + 3);
    ts_lww_op(G, WSE_OP_BR, 1, rl + 4);
    ts_lww_op(G, WSE_OP_ST, 3, 15, 6, 0);
    ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 4);
    ts_lww_loop_end(G, 7, rl);
}

ts_stream *ts_lww_pe_stream(ts_program *P, const ts_wse_target *t, uint32_t x, uint32_t y, lw_gen *G)
{
    uint32_t id = y * t->width + x;
    G->s = ts_program_stream(P, WSE_KIND_PE, id);
    if (!G->s) {
        G->oom = true;
        return NULL;
    }
    size_t lo = 0, hi = G->npass;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (G->pass[mid].pe < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < G->npass && G->pass[lo].pe == id; lo++) {
        ts_lww_op(G, WSE_OP_ROUTE, 3, G->pass[lo].colour, G->pass[lo].rx, G->pass[lo].tx);
        G->pass[lo].done = true;
    }
    return G->s;
}

/* Source PE j and sink PE j: a chain along the row. A source PE passes on the chunks of the PEs
 * west of it, then sends its own (a data segment); a sink PE stores its chunk from address 0,
 * then passes the rest east. */
static ts_status emit_io(lw *L, ts_program *P, size_t si, lw_gen *G)
{
    const lw_stage *s = &L->st[si];
    for (uint32_t j = 0; j < s->w; j++) {
        uint64_t a = j * s->chunk, b = a + s->chunk < s->in_n ? a + s->chunk : s->in_n;
        if (!ts_lww_pe_stream(P, L->t, s->x + j, s->y0, G))
            return TS_ENOMEM;
        uint32_t ci = j ? lw_gcol(s, j - 1) : s->cin, co = lw_gcol(s, j);
        bool last = j + 1 == s->w;
        if (s->kind == K_SOURCE) {
            if (j)
                ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, lw_outp(s, last));
            ts_lww_in_to_out(G, ci, co, a);
            ts_lww_mem_to_out(G, 0, b - a, co);
            if (ts_program_add_segment(P, WSE_KIND_PE, s->x + j, 0, s->vals + a, (uint32_t)((b - a) * 4), L->err))
                return L->err->status;
        } else {
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
            if (!last)
                ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, P_E);
            ts_lww_in_to_mem(G, ci, 0, b - a, 1);
            if (!last)
                ts_lww_in_to_out(G, ci, co, s->in_n - b);
        }
    }
    return TS_OK;
}

/* A decode's join on one PE (lw_join_streams): per row one op of the main stream
 * from the west and the skip path from the south, element by element, its results straight out
 * east (and down to a skip path when it forks), in pieces of at most PIECE. Keeping the skip row
 * (lw_join_keeps_skip): the row of the skip path into memory from 0 first, then the op of the
 * main stream and memory. */
static void join_stream(const lw *L, lw_gen *G, const lw_stage *s)
{
    const bool keep = lw_join_keeps_skip(L, s);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cskip, P_S, P_R);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_R, lw_outp(s, true));
    const int a = s->swap ? 1 : 0, b = s->swap ? 0 : 1; /* d = main op skip, or skip op main */
    int px = ts_lww_loop_head(G, 10, s->M);
    if (keep)
        ts_lww_in_to_mem(G, s->cskip, 0, (uint64_t)s->C, 1);
    for (int64_t c = 0; c < s->C; c += PIECE) {
        const int len = (int)(s->C - c < PIECE ? s->C - c : PIECE);
        ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, len);
        if (keep)
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, (int)(c * 4), len, 1);
        else
            ts_lww_op(G, WSE_OP_DSDIN, 3, 1, (int)s->cskip, len);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, len, 0);
        ts_lww_op(G, s->vop, 5, 2, a, b, -1, -1);
    }
    ts_lww_loop_end(G, 10, px);
}

/* A decode's join of a spread product's parts (lw_join_spread): PE q on row q kstep takes its
 * slice of the skip row from the multicast up its column (the rest into a junk word after it),
 * then adds part q as it comes from the west (the product's group of that part), its sums east on
 * its row into the RMSNormalization's PE of that part. A join that forks adds into memory and
 * sends each chunk east from there, then passes the parts of the PEs above it down the column and
 * its own after them (R(q) from PE q - 1 to PE q), the bottom PE on the join's output colour into
 * the skip path, the row in order. */
static ts_status join_spread(lw *L, ts_program *P, const lw_stage *s, lw_gen *G)
{
    enum { CHUNK = 64 }; /* a fork's sums: added into memory and sent east a chunk at a time */
    const uint32_t east = lw_join_east(s);
    for (uint32_t q = 0; q < s->ko; q++) {
        const int64_t c0 = s->cols[q], c1 = s->cols[q + 1], n = c1 - c0;
        const bool bottom = q + 1 == s->ko;
        const uint32_t down = bottom ? s->cout : lw_rcol(s, q + 1); /* the fork's row down the column */
        if (!ts_lww_pe_stream(P, L->t, s->x, s->y0 + q * s->kstep, G))
            return TS_ENOMEM;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cskip, P_S, P_R | (q ? P_N : 0));
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)east, P_R, P_E);
        if (s->fork && q)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, q), P_N, P_R);
        if (s->fork)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)down, P_R, P_S);
        const int a = s->swap ? 1 : 0, b = s->swap ? 0 : 1; /* d = main op skip, or skip op main */
        const int JA = (int)(4 * n);
        int px = ts_lww_loop_head(G, 10, s->M);
        ts_lww_in_part(G, s->cskip, (uint64_t)JA, 0, (uint64_t)c0, (uint64_t)c1, (uint64_t)s->C);
        for (int64_t c = 0; c < n; c += s->fork ? CHUNK : PIECE) {
            const int64_t most = s->fork ? CHUNK : PIECE;
            const int len = (int)(n - c < most ? n - c : most);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, len);
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, (int)(c * 4), len, 1);
            if (!s->fork) {
                ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)east, len, 0);
                ts_lww_op(G, s->vop, 5, 2, a, b, -1, -1);
                continue;
            }
            ts_lww_op(G, s->vop, 5, 1, a, b, -1, -1); /* in place, then east on microthread 0 */
            ts_lww_op(G, WSE_OP_DSDM, 4, 12, (int)(c * 4), len, 1);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 13, (int)east, len, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, 0, -1);
        }
        if (s->fork) { /* a one-word move on microthread 0 waits for the sends; then the row down in
                        * order: the parts above it as they come, then its own */
            ts_lww_op(G, WSE_OP_DSDM, 4, 12, JA, 1, 0);
            ts_lww_op(G, WSE_OP_DSDM, 4, 13, JA, 1, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, 0, -1);
            if (q)
                ts_lww_in_to_out(G, lw_rcol(s, q), down, (uint64_t)c0);
            ts_lww_mem_to_out(G, 0, (uint64_t)n, down);
        }
        ts_lww_loop_end(G, 10, px);
    }
    return TS_OK;
}

/* The join: G PEs along row 0, the main stream from the west and the skip path from the south
 * (up the first PE's column), both multicast east along the row. Every PE takes both streams
 * element by element (so no PE waits on one stream while another PE waits on the other): the
 * channels before and after its slice into a junk word, its slice into memory; then the fused
 * Relu, and the row chain. */
static ts_status emit_join(lw *L, ts_program *P, size_t si, lw_gen *G)
{
    const lw_stage *s = &L->st[si];
    if (lw_join_spread(s))
        return join_spread(L, P, s, G);
    if (lw_join_streams(L, s)) { /* one PE (ts_lww_place) */
        if (!ts_lww_pe_stream(P, L->t, s->x, 0, G))
            return TS_ENOMEM;
        join_stream(L, G, s);
        return TS_OK;
    }
    for (uint32_t g = 0; g < s->G; g++) {
        const int64_t c0 = g * s->C / s->G, c1 = (g + 1) * s->C / s->G, cg = c1 - c0;
        const int AA = 0, JUNK = (int)cg * 4;
        const bool more = g + 1 < s->G;
        if (!ts_lww_pe_stream(P, L->t, s->x + g, 0, G))
            return TS_ENOMEM;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R | (more ? P_E : 0));
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cskip, g ? P_W : P_S, P_R | (more ? P_E : 0));
        if (g)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_gcol(s, g - 1), P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_gcol(s, g), P_R, lw_outp(s, !more));
        ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
        int a = s->swap ? 1 : 0, b = s->swap ? 0 : 1; /* d = main op skip, or skip op main */
        int px = ts_lww_loop_head(G, 10, s->M);
        const int64_t part[3][2] = {{0, c0}, {c0, c1}, {c1, s->C}};
        for (int q = 0; q < 3; q++) {
            int len = (int)(part[q][1] - part[q][0]);
            if (!len)
                continue;
            ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, len);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 1, (int)s->cskip, len);
            ts_lww_op(G, WSE_OP_DSDM, 4, 2, q == 1 ? AA : JUNK, len, q == 1 ? 1 : 0);
            ts_lww_op(G, s->vop, 5, 2, a, b, -1, -1);
        }
        if (s->relu)
            ts_lww_relu_mem(G, AA, cg);
        if (s->clip)
            ts_lww_clip_mem(G, AA, cg, s->lo, s->hi);
        ts_lww_in_to_out(G, lw_gcol(s, g - 1), lw_gcol(s, g), (uint64_t)c0);
        ts_lww_mem_to_out(G, AA, (uint64_t)cg, lw_gcol(s, g));
        ts_lww_loop_end(G, 10, px);
    }
    return TS_OK;
}

ts_status ts_lww_emit(lw *L, ts_program *P, lw_gen *G)
{
    const ts_wse_target *t = L->t;
    ts_err *err = L->err;
    ts_status rc = TS_OK;
    for (size_t i = 0; !rc && i < L->n; i++) {
        int k = L->st[i].kind;
        rc = k == K_SOURCE || k == K_SINK    ? emit_io(L, P, i, G)
             : k == K_MM                     ? ts_lww_emit_mm(L, P, i, G)
             : k == K_FEED || k == K_MAXPOOL ? ts_lww_emit_lb(L, P, i, G)
             : k == K_JOIN                   ? emit_join(L, P, i, G)
             : k == K_CONCAT                 ? ts_lww_emit_concat(L, P, i, G)
             : k == K_ATTN                   ? ts_lww_emit_attn(L, P, i, G)
                                             : ts_lww_emit_single(L, P, i, G);
        if (!rc && G->oom)
            rc = TS_ENOMEM;
        if (rc == TS_ENOMEM && !err->status)
            ts_err_set(err, TS_ENOMEM, "out of memory emitting the program");
    }
    for (size_t i = 0; !rc && i < G->npass; i++) /* PEs that only pass colours through */
        if (!G->pass[i].done && !ts_lww_pe_stream(P, t, G->pass[i].pe % t->width, G->pass[i].pe / t->width, G))
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    if (!rc && G->oom)
        rc = ts_err_set(err, TS_ENOMEM, "out of memory emitting the program");
    return rc;
}
