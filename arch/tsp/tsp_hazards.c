/* arch/tsp/tsp_hazards.c — schedule violations and executor failures: an instruction named for a
 * message, a hazard reported as an error naming the cycle, superlane, slice, stream and both
 * instructions (or under --warn recorded as a row of the report's table and counted), and the
 * error for an instruction that reaches a unit with no case for its op. */
#include "arch/tsp/tsp_model.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"

#define MAX_HZ_ROWS 256 /* violations listed in the report's table under --warn; all are counted */

static void insn_name(const ts_model *m, uint64_t prod, char *buf, size_t n)
{
    if (prod == NOPROD) {
        snprintf(buf, n, "none");
        return;
    }
    uint32_t q = (uint32_t)(prod >> 32), pc = (uint32_t)prod;
    const ts_insn *in = q < m->nq && pc < m->q[q].n ? &m->q[q].code[pc] : NULL;
    if (!in) {
        snprintf(buf, n, "queue %u pc %u", q, pc);
        return;
    }
    if (in->line)
        snprintf(buf, n, "queue %u pc %u '%s' (line %u)", q, pc, ts_tsp_isa.ops[in->op].mnemonic, in->line);
    else
        snprintf(buf, n, "queue %u pc %u '%s'", q, pc, ts_tsp_isa.ops[in->op].mnemonic);
}

/* Report a hazard: an error naming cycle, superlane, slice, stream and both instructions, or in
 * warn mode a recorded row and TS_OK. `what` is the hazard's own sentence. */
ts_status ts_tsp_hazard(ts_model *m, ts_err *err, int kind, uint32_t k, uint32_t slice, int reg, uint64_t pa,
                        uint64_t pb, const char *fmt, ...)
{
    m->hz[kind]++;
    if (m->warn) {
        if (m->nhz < MAX_HZ_ROWS && !ts_grow((void **)&m->hzrow, &m->caphz, m->nhz + 1, sizeof *m->hzrow)) {
            tsp_hz_row *r = &m->hzrow[m->nhz++];
            double v[9] = {(double)m->now, kind, k, slice, reg,
                           pa == NOPROD ? -1 : (double)(pa >> 32), pa == NOPROD ? -1 : (double)(uint32_t)pa,
                           pb == NOPROD ? -1 : (double)(pb >> 32), pb == NOPROD ? -1 : (double)(uint32_t)pb};
            memcpy(r->v, v, sizeof v);
        }
        return TS_OK;
    }
    char what[512], a[128], b[128], sl[32], rn[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    insn_name(m, pa, a, sizeof a);
    insn_name(m, pb, b, sizeof b);
    ts_tsp_slice_name(m->lay, slice, sl, sizeof sl);
    if (reg >= 0)
        ts_tsp_reg_name(reg, rn, sizeof rn);
    else
        snprintf(rn, sizeof rn, "-");
    return ts_err_sim(err, slice, (int64_t)m->now, "%s: cycle %" PRIu64 ", superlane %u, %s, stream %s: %s and %s",
                      what, m->now, k, sl, rn, a, b);
}

/* The loader admits an instruction only on a queue whose unit executes it (ts_tsp_load), and
 * each unit's step has a case for every .def row of its unit, so this is reached only when a
 * .def row has no executor case (or a loaded program's text was changed): a loud failure rather
 * than a step that silently does nothing. */
ts_status ts_tsp_no_case(ts_model *m, const tsp_fl *f, ts_err *err)
{
    char in[128], sl[32], un[16];
    uint32_t slice = m->q[f->q].slice;
    insn_name(m, PROD(f->q, f->pc), in, sizeof in);
    ts_tsp_slice_name(m->lay, slice, sl, sizeof sl);
    if (f->d.unit < TSP_U_COUNT)
        snprintf(un, sizeof un, "%s", ts_tsp_unit_names[f->d.unit]);
    else
        snprintf(un, sizeof un, "unit %u", f->d.unit);
    return ts_err_sim(err, slice, (int64_t)m->now,
                      "the %s executor has no case for %s: %s, superlane %u, cycle %" PRIu64, un, in, sl, f->k,
                      m->now);
}
