/* arch/tsp/tsp_mem.c — the MEM slices: SRAM allocated on first touch, the bank-conflict check
 * (one read and one write per slice and superlane per cycle, on different banks), and the
 * superlane step of read, write, gather and scatter. */
#include "arch/tsp/tsp_model.h"

#include <string.h>

#include "core/alloc.h"

uint8_t *ts_tsp_mem_of(ts_model *m, uint32_t ms, ts_err *err)
{
    if (!m->mem[ms] && !(m->mem[ms] = ts_calloc(1, m->cfg.mem_slice_bytes)))
        ts_err_set(err, TS_ENOMEM, "out of memory allocating MEM slice %u", ms);
    return m->mem[ms];
}

/* Record a bank access of MEM slice ms in superlane k this cycle; a second read or write, or a
 * read and a write on one bank, is a conflict (ISCA20 §III-B; research §1.4, §2.5). */
ts_status ts_tsp_bank_access(ts_model *m, uint32_t ms, uint32_t k, uint32_t bank, bool write, uint64_t prod,
                             ts_err *err)
{
    tsp_bank_rec *r = &m->bank[(size_t)ms * m->S + k];
    int64_t now = (int64_t)m->now;
    uint32_t slice = m->lay->mem_slice[ms];
    if (write) {
        if (r->wr_cycle == now)
            return ts_tsp_hazard(m, err, HZ_BANK, k, slice, -1, r->wr_prod, prod,
                                 "bank conflict: two writes to one slice");
        if (r->rd_cycle == now && r->rd_bank == bank)
            return ts_tsp_hazard(m, err, HZ_BANK, k, slice, -1, r->rd_prod, prod,
                                 "bank conflict: a read and a write on bank %u", bank);
        r->wr_cycle = now;
        r->wr_bank = bank;
        r->wr_prod = prod;
    } else {
        if (r->rd_cycle == now)
            return ts_tsp_hazard(m, err, HZ_BANK, k, slice, -1, r->rd_prod, prod,
                                 "bank conflict: two reads from one slice");
        if (r->wr_cycle == now && r->wr_bank == bank)
            return ts_tsp_hazard(m, err, HZ_BANK, k, slice, -1, r->wr_prod, prod,
                                 "bank conflict: a read and a write on bank %u", bank);
        r->rd_cycle = now;
        r->rd_bank = bank;
        r->rd_prod = prod;
    }
    return TS_OK;
}

ts_status ts_tsp_step_mem(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in.a;
    uint32_t ms = f->num, k = f->k;
    uint64_t prod = PROD(f->q, f->pc);
    uint8_t buf[64], map[64];
    ts_status rc;
    uint32_t addr;
    switch (f->in.op) {
    case TSP_OP_READ:
    case TSP_OP_GATHER: {
        if (f->in.op == TSP_OP_READ) {
            addr = (uint32_t)o[0];
        } else {
            if ((rc = ts_tsp_sr_read(m, f, o[0], k, (uint32_t)o[2], map, err)) != TS_OK)
                return rc;
            addr = (uint32_t)map[0] | (uint32_t)map[1] << 8;
            if (addr >= m->words)
                return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                  "gather address %u in superlane %u is past the slice's %u words", addr, k, m->words);
        }
        uint32_t bank = tsp_bank_of(m, addr);
        if ((rc = ts_tsp_bank_access(m, ms, k, bank, false, prod, err)) != TS_OK)
            return rc;
        const uint8_t *mem = ts_tsp_mem_of(m, ms, err);
        if (!mem)
            return TS_ENOMEM;
        tsp_lanes_copy(m, buf, mem + (size_t)addr * m->VL + (size_t)k * m->L, m->L);
        if (f->in.op == TSP_OP_READ && k + 4 < m->S) /* the word's superlanes are read in turn */
            __builtin_prefetch(mem + (size_t)addr * m->VL + (size_t)(k + 4) * m->L, 0);
        m->mem_rd[ms] += m->L;
        m->cyc_bytes += m->L;
        if (m->mem_last) /* a batch run once per sample (tsp_issue.c) */
            tsp_mem_touch(m, ms, addr);
        uint32_t tag = (uint32_t)(f->in.op == TSP_OP_READ ? o[2] : o[3]);
        return ts_tsp_sr_schedule(m, f->t0 + f->dfunc + k, o[1], f->pos, k, tag, prod, buf, err);
    }
    case TSP_OP_WRITE:
    case TSP_OP_SCATTER: {
        if (f->in.op == TSP_OP_WRITE) {
            addr = (uint32_t)o[0];
            if ((rc = ts_tsp_sr_read(m, f, o[1], k, (uint32_t)o[2], buf, err)) != TS_OK)
                return rc;
        } else {
            if ((rc = ts_tsp_sr_read(m, f, o[0], k, (uint32_t)o[2], map, err)) != TS_OK ||
                (rc = ts_tsp_sr_read(m, f, o[1], k, (uint32_t)o[2], buf, err)) != TS_OK)
                return rc;
            addr = (uint32_t)map[0] | (uint32_t)map[1] << 8;
            if (addr >= m->words)
                return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                  "scatter address %u in superlane %u is past the slice's %u words", addr, k, m->words);
        }
        tsp_pw w = {.kind = PW_BANK, .k = (uint16_t)k, .a = ms, .b = addr, .prod = prod, .len = m->L};
        return ts_tsp_pw_add(m, f->t0 + f->dfunc + k, &w, buf, err);
    }
    default: return ts_tsp_no_case(m, f, err);
    }
}

