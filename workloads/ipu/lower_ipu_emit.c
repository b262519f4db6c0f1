/* workloads/ipu/lower_ipu_emit.c — the IPU lowering's instructions: each tile's supervisor and
 * worker code, the workers started and awaited, chip-wide syncs and their superstep marks, and the
 * program the tiles' code becomes (lower_ipu_int.h). */
#include <string.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"

size_t lwi_emit(lw *L, lw_code *c, int op, int32_t a0, int32_t a1, int32_t a2)
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

int32_t lwi_fbits(float f)
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b;
}

void lwi_mark(lw *L, uint32_t t)
{
    if (ts_grow((void **)&L->marks, &L->capmarks, L->nmarks + 1, sizeof *L->marks)) {
        L->oom = true;
        return;
    }
    L->marks[L->nmarks++] = (lw_mark){t, (uint32_t)L->tiles[t].sup.n, L->step};
}

void lwi_sync_all(lw *L)
{
    for (uint32_t t = 0; t < L->T; t++)
        S(t, SYNC, TS_IPU_SYNC_CHIP, 0, 0);
    L->step++;
    for (uint32_t t = 0; t < L->T; t++)
        lwi_mark(L, t);
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
    if (n > L->optiles)
        L->optiles = n;
    if (n > L->used)
        L->used = n;
}

/* Tile t's stream: its supervisor code, then its worker code, the labels of the worker code (run,
 * runall, branches) moved past the supervisor's. */
static ts_status emit_stream(lw *L, uint32_t t)
{
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
    return TS_OK;
}

ts_status lwi_finish(lw *L, ts_program **out)
{
    for (uint32_t t = 0; t < L->used; t++)
        S(t, HALT, 0, 0, 0);
    if (L->oom)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
    ts_status xc = lwi_check_exchange(L);
    if (xc != TS_OK)
        return xc;
    for (uint32_t t = 0; t < L->used; t++) {
        ts_status rc = emit_stream(L, t);
        if (rc != TS_OK)
            return rc;
        ts_free(L->tiles[t].sup.v); /* the tile's code is the stream's now: the host holds one copy */
        ts_free(L->tiles[t].wrk.v);
        L->tiles[t].sup = L->tiles[t].wrk = (lw_code){0};
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
