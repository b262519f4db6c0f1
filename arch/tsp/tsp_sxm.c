/* arch/tsp/tsp_sxm.c — the SXM slices' superlane steps (shift, rotate and permute across the
 * whole vector, distribute and transpose within a superlane) and the chip-to-chip links (send,
 * receive), which issue from the SXM queues. */
#include "arch/tsp/tsp_model.h"

#include <string.h>

#include "core/alloc.h"

ts_status ts_tsp_step_sxm(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in.a;
    uint32_t k = f->k, L = m->L, VL = m->VL;
    uint8_t in[64], mp[64], lo[64], out[64];
    ts_status rc;
    int op = f->in.op;
    switch (op) {
    case TSP_OP_SHIFT:
    case TSP_OP_ROTATE:
    case TSP_OP_PERMUTE: {
        uint32_t itag = (uint32_t)(op == TSP_OP_PERMUTE ? o[3] : o[3]);
        if ((rc = ts_tsp_sr_read(m, f, o[0], k, itag, in, err)) != TS_OK)
            return rc;
        memcpy(f->buf + (size_t)k * L, in, L);
        if (op == TSP_OP_PERMUTE) {
            if ((rc = ts_tsp_sr_read(m, f, o[2], k, itag, lo, err)) != TS_OK ||
                (rc = ts_tsp_sr_read(m, f, o[2] + 1, k, itag, mp, err)) != TS_OK)
                return rc;
            for (uint32_t x = 0; x < L; x++) {
                uint16_t v = (uint16_t)(lo[x] | mp[x] << 8);
                memcpy(f->buf + VL + 2 * ((size_t)k * L + x), &v, 2);
            }
        }
        if (k < m->S - 1)
            return TS_OK;
        uint8_t *res = f->buf + 3 * (size_t)VL;
        if (op == TSP_OP_PERMUTE) {
            uint8_t *seen = res + VL;
            memset(seen, 0, VL);
            for (uint32_t l = 0; l < VL; l++) {
                uint16_t src;
                memcpy(&src, f->buf + VL + 2 * (size_t)l, 2);
                if (src >= VL || seen[src])
                    return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                      "permute map is not a bijection: lane %u takes lane %u%s", l, src,
                                      src >= VL ? ", past the vector" : ", already taken");
                seen[src] = 1;
                res[l] = f->buf[src];
            }
        } else {
            int64_t n = o[2];
            for (uint32_t l = 0; l < VL; l++) {
                int64_t s = (int64_t)l - n;
                if (op == TSP_OP_ROTATE)
                    s = ((s % (int64_t)VL) + (int64_t)VL) % (int64_t)VL;
                res[l] = s >= 0 && s < (int64_t)VL ? f->buf[s] : 0;
            }
        }
        for (uint32_t kk = 0; kk < m->S; kk++)
            if ((rc = ts_tsp_sr_schedule(m, f->t0 + f->dfunc + kk, o[1], f->pos, kk, (uint32_t)o[4],
                                         PROD(f->q, f->pc), res + (size_t)kk * L, err)) != TS_OK)
                return rc;
        return TS_OK;
    }
    case TSP_OP_DISTRIBUTE:
        if ((rc = ts_tsp_sr_read(m, f, o[0], k, (uint32_t)o[3], in, err)) != TS_OK ||
            (rc = ts_tsp_sr_read(m, f, o[2], k, (uint32_t)o[3], mp, err)) != TS_OK)
            return rc;
        for (uint32_t x = 0; x < L; x++)
            out[x] = mp[x] == 0xff ? 0 : in[mp[x] % L];
        return ts_tsp_sr_schedule(m, f->t0 + f->dfunc + k, o[1], f->pos, k, (uint32_t)o[4],
                                  PROD(f->q, f->pc), out, err);
    case TSP_OP_TRANSPOSE: {
        uint8_t blk[16][16];
        for (int i = 0; i < 16; i++) {
            if ((rc = ts_tsp_sr_read(m, f, o[0] + i, k, (uint32_t)o[2], in, err)) != TS_OK)
                return rc;
            memcpy(blk[i], in, 16);
        }
        for (int j = 0; j < 16; j++) {
            for (int i = 0; i < 16; i++)
                out[i] = blk[i][j];
            if ((rc = ts_tsp_sr_schedule(m, f->t0 + f->dfunc + k, o[1] + j, f->pos, k, (uint32_t)o[3],
                                         PROD(f->q, f->pc), out, err)) != TS_OK)
                return rc;
        }
        if (k == m->S - 1)
            m->transposes[f->num]--;
        return TS_OK;
    }
    default: return ts_tsp_no_case(m, f, err);
    }
}

/* ---- chip-to-chip links ------------------------------------------------------------------ */

ts_status ts_tsp_step_c2c(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in.a;
    uint32_t k = f->k, L = m->L;
    tsp_link *lk = &m->link[o[0]];
    ts_status rc;
    if (f->in.op == TSP_OP_SEND) {
        if (k == 0) {
            if (ts_grow((void **)&lk->ready, &lk->cap, lk->head + lk->n + 1, sizeof *lk->ready))
                return ts_err_set(err, TS_ENOMEM, "out of memory");
            size_t cap = lk->cap;
            uint8_t *d = ts_realloc(lk->data, cap * m->VL);
            uint64_t *pr = ts_realloc(lk->prod, cap * sizeof *pr);
            if (d)
                lk->data = d;
            if (pr)
                lk->prod = pr;
            if (!d || !pr)
                return ts_err_set(err, TS_ENOMEM, "out of memory");
            size_t e = lk->head + lk->n++;
            /* it has arrived c2c.latency after its last superlane was sent */
            lk->ready[e] = f->t0 + f->skew + m->S - 1 + m->cfg.c2c_latency;
            lk->prod[e] = PROD(f->q, f->pc);
            m->offchip += m->VL;
        }
        size_t e = lk->head + lk->n - 1;
        return ts_tsp_sr_read(m, f, o[1], k, (uint32_t)o[2], lk->data + e * m->VL + (size_t)k * L, err);
    }
    if (f->in.op == TSP_OP_RECEIVE) {
        if (k == 0) {
            if (!lk->n || lk->ready[lk->head] > m->now) {
                uint64_t pa = lk->n ? lk->prod[lk->head] : NOPROD;
                rc = ts_tsp_hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, o[1], pa, PROD(f->q, f->pc),
                                   "no value: nothing has arrived on link %d", o[0]);
                if (rc != TS_OK)
                    return rc;
                memset(f->buf, 0, m->VL);
            } else {
                memcpy(f->buf, lk->data + lk->head * m->VL, m->VL);
                lk->head++;
                lk->n--;
                if (!lk->n)
                    lk->head = 0;
            }
        }
        return ts_tsp_sr_schedule(m, f->t0 + f->dfunc + k, o[1], f->pos, k, (uint32_t)o[2], PROD(f->q, f->pc),
                                  f->buf + (size_t)k * L, err);
    }
    return ts_tsp_no_case(m, f, err); /* deskew acts at issue (tsp_issue.c) and never gets here */
}

