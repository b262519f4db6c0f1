/* arch/tsp/tsp_streams.c — the stream-register file, the latches and the results wheel: reading
 * operands (a live value, tag checked), scheduling results for later cycles, and committing the
 * results due at the start of each cycle (stream registers, VXM latches, MXM accumulators and
 * weights, bank writes). In lockstep every register an executor touches is checked against the
 * .def's operand roles. */
#include "arch/tsp/tsp_model.h"

#include <inttypes.h>
#include <string.h>

#include "core/alloc.h"

/* ---- operand roles (lockstep) ------------------------------------------------------------ */

/* Lockstep only (house style: invariants checked every cycle in the reference mode): a register
 * the executor reads or writes for queue q's instruction pc must lie in the stream group of an
 * operand the .def gives that role. */
static ts_status role_check(const ts_model *m, uint64_t prod, int reg, int role, ts_err *err)
{
    uint32_t q = (uint32_t)(prod >> 32), pc = (uint32_t)prod;
    const ts_insn *in = &m->q[q].code[pc];
    const ts_opinfo *oi = &ts_tsp_isa.ops[in->op];
    int32_t span = in->op == TSP_OP_LW || in->op == TSP_OP_IW ? in->a[2] : in->op == TSP_OP_TRANSPOSE ? 16 : 4;
    for (int j = 0; j < TS_MAX_OPNDS && oi->opnd[j]; j++) {
        int32_t a = in->a[j];
        if (!(oi->opnd[j] & role) || (oi->opnd[j] & TS_OK_KIND_MASK) != TS_OK_REG)
            continue;
        if (reg == a || (a < TSP_REG_ALU && reg >= a && reg < a + span && reg / TSP_MAX_STREAMS == a / TSP_MAX_STREAMS))
            return TS_OK;
    }
    char rn[16];
    ts_tsp_reg_name(reg, rn, sizeof rn);
    return ts_err_set(err, TS_EINTERNAL, "lockstep check: queue %u pc %u '%s' %s %s, which no operand of its .def row "
                      "marks so", q, pc, oi->mnemonic, role == TS_OR_READ ? "reads" : "writes", rn);
}

/* ---- pending results --------------------------------------------------------------------- */

ts_status ts_tsp_pw_add(ts_model *m, uint64_t cycle, const tsp_pw *w, const void *data, ts_err *err)
{
    tsp_bucket *b = &m->wheel[cycle & m->wmask];
    if (b->n && b->cycle != cycle)
        return ts_err_set(err, TS_EINTERNAL, "tsp: result wheel too small for cycle %" PRIu64, cycle);
    b->cycle = cycle;
    if ((b->n == b->cap && ts_grow((void **)&b->w, &b->cap, b->n + 1, sizeof *b->w)) ||
        (b->nb + w->len > b->capb && ts_grow((void **)&b->bytes, &b->capb, b->nb + w->len, 1)))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    tsp_pw *p = &b->w[b->n++];
    *p = *w;
    p->off = (uint32_t)b->nb;
    if (w->len)
        memcpy(b->bytes + b->nb, data, w->len);
    b->nb += w->len;
    m->npending++;
    return TS_OK;
}

/* *out: the bucket of `cycle`, with room for n more stream-register results (n L bytes). */
static ts_status sr_bucket(ts_model *m, uint64_t cycle, size_t n, tsp_bucket **out, ts_err *err)
{
    tsp_bucket *b = &m->wheel[cycle & m->wmask];
    if (b->n && b->cycle != cycle)
        return ts_err_set(err, TS_EINTERNAL, "tsp: result wheel too small for cycle %" PRIu64, cycle);
    b->cycle = cycle;
    if ((b->n + n > b->cap && ts_grow((void **)&b->w, &b->cap, b->n + n, sizeof *b->w)) ||
        (b->nb + n * m->L > b->capb && ts_grow((void **)&b->bytes, &b->capb, b->nb + n * m->L, 1)))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    *out = b;
    return TS_OK;
}

/* Fill the next record of bucket b (with room for it): L bytes for stream register reg. */
static inline void sr_fill(ts_model *m, tsp_bucket *b, int reg, uint32_t pos, uint32_t k, uint32_t tag,
                           uint64_t prod, const uint8_t *data)
{
    tsp_pw *p = &b->w[b->n++];
    p->kind = PW_SR;
    p->dir = (uint8_t)(reg >= TSP_REG_WEST);
    p->mode = p->type = 0;
    p->k = (uint16_t)k;
    p->a = (uint32_t)reg % TSP_MAX_STREAMS;
    p->b = pos;
    p->tag = tag;
    p->prod = prod;
    p->off = (uint32_t)b->nb;
    p->len = m->L;
    tsp_lanes_copy(m, b->bytes + b->nb, data, m->L);
    b->nb += m->L;
    m->npending++;
}

ts_status ts_tsp_sr_schedule(ts_model *m, uint64_t cycle, int reg, uint32_t pos, uint32_t k, uint32_t tag,
                             uint64_t prod, const uint8_t *data, ts_err *err)
{
    if (m->lockstep && role_check(m, prod, reg, TS_OR_WRITE, err) != TS_OK)
        return TS_EINTERNAL;
    /* ts_tsp_pw_add for the commonest result, the record filled in place */
    tsp_bucket *b = NULL;
    ts_status rc = sr_bucket(m, cycle, 1, &b, err);
    if (rc != TS_OK)
        return rc;
    sr_fill(m, b, reg, pos, k, tag, prod, data);
    return TS_OK;
}

ts_status ts_tsp_commit(ts_model *m, ts_err *err)
{
    tsp_bucket *b = &m->wheel[m->now & m->wmask];
    if (!b->n || b->cycle != m->now)
        return TS_OK;
    ts_status rc = TS_OK;
    for (size_t i = 0; i < b->n && rc == TS_OK; i++) {
        const tsp_pw *w = &b->w[i];
        const uint8_t *d = b->bytes + w->off;
        switch (w->kind) {
        case PW_SR: {
            size_t j = sr_index(m, w->dir, w->a, w->b, m->now, w->k);
            if (w->k + 1u < m->S) /* the producer's next superlane lands in slot j + 1 next cycle */
                __builtin_prefetch(sr_slot(m, j + 1), 1);
            tsp_slot *sl = sr_slot(m, j);
            if (sl->birth == (int64_t)m->now && sl->bpos == w->b) {
                uint32_t at = 0;
                while (at + 1 < m->lay->nslices && m->lay->pos[at] < w->b)
                    at++;
                rc = ts_tsp_hazard(m, err, HZ_COLLISION, w->k, at, (int)(w->dir * TSP_MAX_STREAMS + w->a),
                                   m->sr_prod[j], w->prod,
                                   "stream collision: two results reach one stream register in one cycle");
                if (rc != TS_OK)
                    break;
            }
            if (sr_live(m, j, w->dir, w->b, m->now)) {
                uint64_t exit = (uint64_t)sl->birth + sr_life(m, w->dir, sl->bpos);
                m->occ -= exit - m->now;
                m->sr_over++;
            }
            tsp_lanes_copy(m, sr_bytes(m, j), d, m->L);
            sl->birth = (int64_t)m->now;
            sl->bpos = (uint16_t)w->b;
            sl->tag = w->tag;
            m->sr_prod[j] = w->prod;
            m->occ += sr_life(m, w->dir, w->b);
            m->sr_writes++;
            if (m->act)
                act_stream(m, w->dir);
            break;
        }
        case PW_LATCH:
        case PW_ACC: {
            tsp_latch *l = w->kind == PW_LATCH ? &m->alu : &m->plane[w->a].acc;
            size_t j = w->kind == PW_LATCH ? (size_t)w->a * m->S + w->k : w->k;
            uint8_t *dst = l->data + j * 4 * m->L;
            if (w->kind == PW_ACC && w->mode == 1 && l->birth[j] >= 0) {
                for (uint32_t x = 0; x < m->L; x++) {
                    if (w->type == TSP_F32) {
                        float a, c;
                        memcpy(&a, dst + 4 * x, 4);
                        memcpy(&c, d + 4 * x, 4);
                        a += c;
                        memcpy(dst + 4 * x, &a, 4);
                    } else {
                        uint32_t a, c;
                        memcpy(&a, dst + 4 * x, 4);
                        memcpy(&c, d + 4 * x, 4);
                        a += c;
                        memcpy(dst + 4 * x, &a, 4);
                    }
                }
                m->ev[UK_MXM][w->type][EV_ADD] += m->L;
            } else {
                tsp_lanes_copy(m, dst, d, 4 * (size_t)m->L);
            }
            l->birth[j] = (int64_t)m->now;
            l->tag[j] = w->tag;
            l->prod[j] = w->prod;
            l->type[j] = w->type;
            break;
        }
        case PW_BANK: {
            uint32_t bank = tsp_bank_of(m, w->b);
            rc = ts_tsp_bank_access(m, w->a, w->k, bank, true, w->prod, err);
            uint8_t *mem = rc == TS_OK ? ts_tsp_mem_of(m, w->a, err) : NULL;
            if (!mem) {
                if (rc == TS_OK)
                    rc = TS_ENOMEM;
                break;
            }
            tsp_lanes_copy(m, mem + (size_t)w->b * m->VL + (size_t)w->k * m->L, d, m->L);
            if (w->k + 4u < m->S) /* a write's superlanes land in turn */
                __builtin_prefetch(mem + (size_t)w->b * m->VL + (size_t)(w->k + 4) * m->L, 1);
            m->mem_wr[w->a] += m->L;
            m->cyc_bytes += m->L;
            if (m->mem_last)
                tsp_mem_touch(m, w->a, w->b);
            break;
        }
        case PW_WEIGHTS: {
            tsp_plane *p = &m->plane[w->a];
            uint32_t D = m->D, L = m->L, k = w->k;
            uint32_t nwd = (D + 63) / 64;
            if (w->mode == PWW_COPY) {
                for (uint32_t j = 0; j < D; j++) {
                    if (w->type == TSP_I8)
                        memcpy(p->w8 + (size_t)j * D + k * L, p->b8 + (size_t)j * D + k * L, L);
                    else
                        memcpy(p->wf + (size_t)j * D + k * L, p->bf + (size_t)j * D + k * L, L * sizeof(float));
                }
                if (w->type == TSP_I8)
                    memcpy(p->nz8 + (size_t)k * nwd, p->bnz8 + (size_t)k * nwd, nwd * sizeof *p->nz8);
                p->type = w->type;
                break;
            }
            bool buf = w->mode == PWW_BUFFER;
            for (uint32_t r = 0; r < w->tag; r++) {
                uint32_t j = (w->b + r) % D;
                size_t at = (size_t)j * D + k * L;
                if (w->type == TSP_I8) {
                    const uint8_t *row = d + (size_t)r * L;
                    uint8_t any = 0;
                    for (uint32_t x = 0; x < L; x++)
                        any |= row[x];
                    uint64_t *nz = (buf ? p->bnz8 : p->nz8) + (size_t)k * nwd + j / 64;
                    *nz = any ? *nz | 1ull << (j % 64) : *nz & ~(1ull << (j % 64));
                    memcpy((buf ? p->b8 : p->w8) + at, row, L);
                } else {
                    memcpy((buf ? p->bf : p->wf) + at, d + (size_t)r * L * 4, L * sizeof(float));
                }
            }
            if (buf)
                p->buf_type = w->type;
            else
                p->type = w->type;
            break;
        }
        default: /* an invariant: the unit steps schedule only the kinds above */
            rc = ts_err_set(err, TS_EINTERNAL,
                            "tsp: pending result of unknown kind %u from queue %u pc %u at cycle %" PRIu64, w->kind,
                            (uint32_t)(w->prod >> 32), (uint32_t)w->prod, m->now);
            break;
        }
    }
    m->npending -= b->n;
    b->n = 0;
    b->nb = 0;
    return rc;
}

/* ---- reading operands -------------------------------------------------------------------- */

/* Read L bytes of stream register `reg` at the slice of queue q in superlane k this cycle,
 * checking that a value is there and, when itag != 0, that it carries tag itag. */
ts_status ts_tsp_sr_read(ts_model *m, const tsp_fl *f, int reg, uint32_t k, uint32_t itag, uint8_t *out, ts_err *err)
{
    if (m->lockstep && role_check(m, PROD(f->q, f->pc), reg, TS_OR_READ, err) != TS_OK)
        return TS_EINTERNAL;
    int dir = reg >= TSP_REG_WEST;
    uint32_t s = (uint32_t)reg % TSP_MAX_STREAMS, pos = f->pos;
    size_t j = sr_index(m, dir, s, pos, m->now, k);
    if (k + 1 < m->S) /* the reader reads superlane k + 1 from slot j + 1 next cycle */
        __builtin_prefetch(sr_slot(m, j + 1), 0);
    m->reg_reads += m->L;
    const tsp_slot *sl = sr_slot(m, j);
    if (!sr_live(m, j, dir, pos, m->now)) {
        memset(out, 0, m->L);
        int64_t b = sl->birth;
        return ts_tsp_hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, b >= 0 ? m->sr_prod[j] : NOPROD,
                             PROD(f->q, f->pc), "no value: the reader finds no live value in the stream register (%s)",
                             b >= 0 ? "the first instruction named wrote the last one there"
                                    : "nothing was ever written there");
    }
    if (itag && sl->tag != itag) {
        tsp_lanes_copy(m, out, sr_bytes(m, j), m->L);
        return ts_tsp_hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, m->sr_prod[j], PROD(f->q, f->pc),
                             "no value: the stream register holds a value tagged %u, the reader expects tag %u",
                             sl->tag, itag);
    }
    tsp_lanes_copy(m, out, sr_bytes(m, j), m->L);
    return TS_OK;
}

ts_status ts_tsp_sr_read_rows(ts_model *m, const tsp_fl *f, int reg, uint32_t n, uint32_t k, uint32_t itag,
                              uint8_t *out, ts_err *err)
{
    /* the rows' slots lie P * S apart: one index; a row with no live value (or the wrong tag), and
     * every row in lockstep, goes through ts_tsp_sr_read for its checks and hazard */
    int dir = reg >= TSP_REG_WEST;
    uint32_t s0 = (uint32_t)reg % TSP_MAX_STREAMS;
    bool fast = !m->lockstep && s0 + n <= m->NS;
    size_t j = fast ? sr_index(m, dir, s0, f->pos, m->now, k) : 0, stride = (size_t)m->P * m->S;
    for (uint32_t r = 0; r < n; r++, j += stride) {
        uint8_t *o = out + (size_t)r * m->L;
        if (fast && sr_live(m, j, dir, f->pos, m->now) && (!itag || sr_slot(m, j)->tag == itag)) {
            if (k + 1 < m->S)
                __builtin_prefetch(sr_slot(m, j + 1), 0);
            m->reg_reads += m->L;
            tsp_lanes_copy(m, o, sr_bytes(m, j), m->L);
            continue;
        }
        ts_status rc = ts_tsp_sr_read(m, f, reg + (int)r, k, itag, o, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

ts_status ts_tsp_latch_read(ts_model *m, const tsp_fl *f, tsp_latch *l, size_t j, int reg, uint32_t k,
                            uint32_t itag, uint8_t *out, ts_err *err)
{
    if (m->lockstep && reg >= 0 && role_check(m, PROD(f->q, f->pc), reg, TS_OR_READ, err) != TS_OK)
        return TS_EINTERNAL;
    m->reg_reads += 4 * m->L;
    if (l->birth[j] < 0 || (itag && l->tag[j] != itag)) {
        memset(out, 0, 4 * m->L);
        if (l->birth[j] < 0)
            return ts_tsp_hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, NOPROD, PROD(f->q, f->pc),
                                 "no value: the latch holds no value yet");
        return ts_tsp_hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, l->prod[j], PROD(f->q, f->pc),
                             "no value: the latch holds a value tagged %u, the reader expects tag %u", l->tag[j], itag);
    }
    tsp_lanes_copy(m, out, l->data + j * 4 * m->L, 4 * (size_t)m->L);
    return TS_OK;
}

/* Read a typed vector part (L elements, as 32-bit containers) from a stream group or latch. */
ts_status ts_tsp_read_elems(ts_model *m, const tsp_fl *f, int reg, int type, uint32_t k, uint32_t itag,
                            uint32_t *el, ts_err *err)
{
    uint32_t w = tsp_type_width(type);
    uint8_t tmp[4 * 64];
    ts_status rc;
    if (reg >= TSP_REG_ALU && reg < TSP_REG_NUL) {
        /* the latch holds the elements as 32-bit containers already: copied straight into el */
        return ts_tsp_latch_read(m, f, &m->alu, (size_t)(reg - TSP_REG_ALU) * m->S + k, reg, k, itag,
                                 (uint8_t *)el, err);
    }
    int dir = reg >= TSP_REG_WEST;
    uint32_t s0 = (uint32_t)reg % TSP_MAX_STREAMS, pos = f->pos;
    if (m->L == 16 && !m->lockstep && s0 + w <= m->NS) {
        /* the group's byte planes lie P * S slots apart: one index, and each plane whose value is
         * live (and tagged itag) read straight from its slot; any other plane goes through
         * ts_tsp_sr_read for its hazard, as before */
        size_t j = sr_index(m, dir, s0, pos, m->now, k), stride = (size_t)m->P * m->S;
        uint32_t b = 0;
        for (; b < w; b++, j += stride) {
            const tsp_slot *sl = sr_slot(m, j);
            if (!sr_live(m, j, dir, pos, m->now) || (itag && sl->tag != itag))
                break;
            if (k + 1 < m->S)
                __builtin_prefetch(sr_slot(m, j + 1), 0);
            m->reg_reads += 16;
            const uint8_t *v = sr_bytes(m, j);
            if (b == 0)
                for (uint32_t x = 0; x < 16; x++)
                    el[x] = v[x];
            else
                for (uint32_t x = 0; x < 16; x++)
                    el[x] |= (uint32_t)v[x] << (8 * b);
        }
        if (b == w)
            return TS_OK;
        rc = ts_tsp_sr_read(m, f, reg + (int)b, k, itag, tmp, err); /* the plane's hazard */
        if (b == 0)
            memset(el, 0, m->L * sizeof *el);
        if (rc != TS_OK)
            return rc;
        for (uint32_t x = 0; x < 16; x++)
            el[x] = b == 0 ? tmp[x] : el[x] | (uint32_t)tmp[x] << (8 * b);
        for (b++; b < w; b++) {
            if ((rc = ts_tsp_sr_read(m, f, reg + (int)b, k, itag, tmp, err)) != TS_OK)
                return rc;
            for (uint32_t x = 0; x < 16; x++)
                el[x] |= (uint32_t)tmp[x] << (8 * b);
        }
        return TS_OK;
    }
    for (uint32_t b = 0; b < w; b++) {
        rc = ts_tsp_sr_read(m, f, reg + (int)b, k, itag, tmp, err);
        if (rc != TS_OK) {
            if (b == 0)
                memset(el, 0, m->L * sizeof *el);
            return rc;
        }
        if (b == 0) { /* the low byte sets the element, the others are or-ed in */
            if (m->L == 16) /* the research's 16 lanes: a loop of known length, vectorised */
                for (uint32_t x = 0; x < 16; x++)
                    el[x] = tmp[x];
            else
                for (uint32_t x = 0; x < m->L; x++)
                    el[x] = tmp[x];
        } else if (m->L == 16) {
            for (uint32_t x = 0; x < 16; x++)
                el[x] |= (uint32_t)tmp[x] << (8 * b);
        } else {
            for (uint32_t x = 0; x < m->L; x++)
                el[x] |= (uint32_t)tmp[x] << (8 * b);
        }
    }
    return TS_OK;
}

/* Schedule a typed vector part onto a stream group. */
ts_status ts_tsp_write_elems(ts_model *m, const tsp_fl *f, int reg, int type, uint32_t k, uint32_t tag,
                             const uint32_t *el, ts_err *err)
{
    uint32_t w = tsp_type_width(type);
    uint8_t tmp[64];
    if (m->L == 16 && !m->lockstep) { /* the group's planes into one bucket, its room made once */
        tsp_bucket *bk = NULL;
        ts_status rc = sr_bucket(m, f->t0 + f->dfunc + k, w, &bk, err);
        if (rc != TS_OK)
            return rc;
        for (uint32_t b = 0; b < w; b++) {
            for (uint32_t x = 0; x < 16; x++)
                tmp[x] = (uint8_t)(el[x] >> (8 * b));
            sr_fill(m, bk, reg + (int)b, f->pos, k, tag, PROD(f->q, f->pc), tmp);
        }
        return TS_OK;
    }
    for (uint32_t b = 0; b < w; b++) {
        if (m->L == 16) /* as in ts_tsp_read_elems */
            for (uint32_t x = 0; x < 16; x++)
                tmp[x] = (uint8_t)(el[x] >> (8 * b));
        else
            for (uint32_t x = 0; x < m->L; x++)
                tmp[x] = (uint8_t)(el[x] >> (8 * b));
        ts_status rc = ts_tsp_sr_schedule(m, f->t0 + f->dfunc + k, reg + (int)b, f->pos, k, tag,
                                          PROD(f->q, f->pc), tmp, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

