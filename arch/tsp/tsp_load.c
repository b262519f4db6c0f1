/* arch/tsp/tsp_load.c — a TSP model's life: create it from a typed config (floorplan, stream
 * registers, results wheel, slices, host threads, activity layout), validate and predecode a
 * program at load (every operand against its class, every instruction against its queue's
 * unit) and place its data segments, and destroy it. */
#include "arch/tsp/tsp_model.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "arch/tsp/tsp_target.h"
#include "core/trace.h"

/* ---- create, destroy --------------------------------------------------------------------- */

static void latch_free(tsp_latch *l)
{
    ts_free(l->data);
    ts_free(l->tag);
    ts_free(l->birth);
    ts_free(l->prod);
    ts_free(l->type);
}

static int latch_init(tsp_latch *l, size_t n, uint32_t L)
{
    l->data = ts_calloc(n, 4 * (size_t)L);
    l->tag = ts_calloc(n, sizeof *l->tag);
    l->birth = ts_malloc(n * sizeof *l->birth);
    l->prod = ts_calloc(n, sizeof *l->prod);
    l->type = ts_calloc(n, 1);
    if (!l->data || !l->tag || !l->birth || !l->prod || !l->type)
        return -1;
    for (size_t i = 0; i < n; i++)
        l->birth[i] = -1;
    return 0;
}

void ts_tsp_destroy(ts_model *m)
{
    if (!m)
        return;
    ts_tsp_pool_stop(m);
    ts_free(m->act_upto);
    ts_free(m->act_park);
    ts_free(m->jobs);
    ts_free(m->sr_mem);
    ts_free(m->sr_prod);
    if (m->wheel)
        for (uint32_t i = 0; i <= m->wmask; i++) {
            ts_free(m->wheel[i].w);
            ts_free(m->wheel[i].bytes);
        }
    ts_free(m->wheel);
    for (size_t i = 0; i < m->nfl; i++)
        ts_free(m->fl[i].buf);
    ts_free(m->fl);
    ts_free(m->due);
    if (m->q)
        for (uint32_t i = 0; i < m->nq; i++)
            ts_free(m->q[i].dec);
    ts_free(m->q);
    ts_free(m->slice_busy);
    ts_free(m->slice_last);
    if (m->mem && m->lay)
        for (uint32_t i = 0; i < m->lay->nmem; i++)
            ts_free(m->mem[i]);
    ts_free(m->mem);
    ts_free(m->bank);
    latch_free(&m->alu);
    if (m->plane && m->lay)
        for (uint32_t i = 0; i < m->lay->nmxm; i++) {
            ts_free(m->plane[i].w8);
            ts_free(m->plane[i].b8);
            ts_free(m->plane[i].nz8);
            ts_free(m->plane[i].bnz8);
            ts_free(m->plane[i].wf);
            ts_free(m->plane[i].bf);
            latch_free(&m->plane[i].acc);
        }
    ts_free(m->plane);
    if (m->link)
        for (uint64_t i = 0; i < m->cfg.c2c_links; i++) {
            ts_free(m->link[i].data);
            ts_free(m->link[i].ready);
            ts_free(m->link[i].prod);
        }
    ts_free(m->link);
    ts_free(m->transposes);
    ts_free(m->releases);
    ts_free(m->mem_rd);
    ts_free(m->mem_wr);
    ts_free(m->hzrow);
    ts_free(m->scratch);
    for (size_t i = 0; i < m->nxin; i++)
        ts_free(m->xin[i].bytes);
    for (size_t i = 0; i < m->nxout; i++)
        ts_free(m->xout[i].bytes);
    ts_free(m->xin);
    ts_free(m->xout);
    ts_free(m->mem_last);
    ts_free(m->mem_first);
    ts_free(m->lay);
    ts_free(m);
}

ts_status ts_tsp_create(ts_model **out, const ts_config *config, const ts_run_opts *opts, ts_err *err)
{
    *out = NULL;
    ts_model *m = ts_calloc(1, sizeof *m);
    if (!m)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    m->cfg = *(const ts_tsp_cfg *)ts_config_data(config);
    m->cfg.floorplan = (ts_strlist){NULL, 0}; /* borrowed lists are not kept past create */
    m->cfg.sr_map = (ts_intlist){NULL, 0};
    m->lockstep = opts && opts->lockstep;
    m->warn = opts && opts->warn;
    m->trace = opts ? opts->trace : NULL;
    m->lay = ts_malloc(sizeof *m->lay);
    ts_status rc;
    if (!m->lay) {
        ts_tsp_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    if ((rc = ts_tsp_layout(ts_config_data(config), m->lay, err)) != TS_OK) {
        ts_tsp_destroy(m);
        return rc;
    }
    const tsp_layout *l = m->lay;
    m->S = (uint32_t)m->cfg.superlanes;
    m->L = (uint32_t)m->cfg.lanes;
    m->VL = m->S * m->L;
    m->P = l->npos;
    m->NS = (uint32_t)m->cfg.streams;
    m->D = (uint32_t)m->cfg.mxm_dim;
    m->words = (uint32_t)(m->cfg.mem_slice_bytes / m->VL);
    m->bank_words = (uint32_t)(m->words / m->cfg.mem_banks);
    m->bank_shift = -1;
    for (int sh = 0; sh < 32 && m->bank_words; sh++)
        if (m->bank_words == 1u << sh)
            m->bank_shift = sh;
    m->nq = l->nqueues;
    m->powered = (int)m->S;
    m->nslots = 2 * (size_t)m->NS * m->P * m->S;
    uint64_t maxd = 0;
    for (int i = 0; i < TSP_OP_COUNT; i++)
        if (m->cfg.d_func[i] > maxd)
            maxd = m->cfg.d_func[i];
    uint64_t span = maxd + m->S + 2, w = 1;
    while (w < span)
        w <<= 1;
    m->wmask = (uint32_t)(w - 1);
    m->sr_stride = sizeof(tsp_slot) + (m->L + 15) / 16 * 16;
    m->sr_mem = m->nslots * m->sr_stride / m->sr_stride == m->nslots ? ts_malloc(m->nslots * m->sr_stride + 63) : NULL;
    m->sr = m->sr_mem ? m->sr_mem + (64 - (uintptr_t)m->sr_mem % 64) % 64 : NULL;
    m->sr_prod = ts_calloc(m->nslots, sizeof *m->sr_prod);
    m->wheel = ts_calloc(w, sizeof *m->wheel);
    m->q = ts_calloc(m->nq ? m->nq : 1, sizeof *m->q);
    m->slice_busy = ts_calloc(l->nslices, sizeof *m->slice_busy);
    m->slice_last = ts_calloc(l->nslices, sizeof *m->slice_last);
    m->mem = ts_calloc(l->nmem ? l->nmem : 1, sizeof *m->mem);
    m->bank = ts_calloc((size_t)(l->nmem ? l->nmem : 1) * m->S, sizeof *m->bank);
    m->plane = ts_calloc(l->nmxm ? l->nmxm : 1, sizeof *m->plane);
    m->link = ts_calloc(m->cfg.c2c_links ? m->cfg.c2c_links : 1, sizeof *m->link);
    m->transposes = ts_calloc(l->nsxm ? l->nsxm : 1, sizeof *m->transposes);
    m->mem_rd = ts_calloc(l->nmem ? l->nmem : 1, sizeof *m->mem_rd);
    m->mem_wr = ts_calloc(l->nmem ? l->nmem : 1, sizeof *m->mem_wr);
    m->scratch = ts_malloc((size_t)m->NS * m->L * 4);
    bool ok = m->sr && m->sr_prod && m->wheel && m->q &&
              m->slice_busy && m->slice_last && m->mem && m->bank && m->plane && m->link && m->transposes &&
              m->mem_rd && m->mem_wr && m->scratch && !latch_init(&m->alu, (size_t)m->cfg.vxm_alus * m->S, m->L);
    for (uint32_t i = 0; ok && i < l->nmxm; i++) {
        m->plane[i].type = m->plane[i].buf_type = -1;
        m->plane[i].inst_start = -1;
        ok = !latch_init(&m->plane[i].acc, m->S, m->L);
    }
    if (!ok) {
        ts_tsp_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory creating a tsp model");
    }
    memset(m->sr, 0, m->nslots * m->sr_stride);
    for (size_t i = 0; i < m->nslots; i++)
        sr_slot(m, i)->birth = -1;
    for (size_t i = 0; i < (size_t)l->nmem * m->S; i++)
        m->bank[i].rd_cycle = m->bank[i].wr_cycle = -1;
    for (uint32_t i = 0; i < m->nq; i++) {
        m->q[i].slice = l->qslice[i];
        m->q[i].state = Q_DONE;
    }
    if (opts && opts->threads > 1 && (rc = ts_tsp_pool_start(m, opts->threads, err)) != TS_OK) {
        ts_tsp_destroy(m);
        return rc;
    }
    m->act = opts ? opts->activity : NULL;
    if (m->act && (rc = ts_tsp_act_layout(m, err)) != TS_OK) {
        ts_tsp_destroy(m);
        return rc;
    }
    *out = m;
    return TS_OK;
}

/* ---- load: validate and predecode -------------------------------------------------------- */

/* tsp_model.h */
const char *const ts_tsp_unit_names[TSP_U_COUNT] = {"icu", "mem", "vxm", "mxm", "sxm", "c2c"};
static const char *const slice_kinds[TSP_S_COUNT] = {"mem", "vxm", "mxm", "sxm"};

/* Check one operand of in against its class (tsp_isa.def CLASSES). */
static const char *check_opnd(const ts_model *m, const ts_insn *in, int j, char cls, char *why, size_t n)
{
    int32_t v = in->a[j];
    bool stream = v >= 0 && v < TSP_REG_ALU && (uint32_t)(v % TSP_MAX_STREAMS) < m->NS;
    switch (cls) {
    case 's':
    case 'o':
        if (!stream)
            snprintf(why, n, "operand %d must be a stream register s0e..s%ue or s0w..s%uw", j + 1, m->NS - 1,
                     m->NS - 1);
        else
            return NULL;
        return why;
    case 'a':
        if (stream || (v >= TSP_REG_ALU && (uint64_t)(v - TSP_REG_ALU) < m->cfg.vxm_alus))
            return NULL;
        snprintf(why, n, "operand %d must be a stream register or alu0..alu%" PRIu64, j + 1, m->cfg.vxm_alus - 1);
        return why;
    case 'd':
    case 'w':
        if (stream || v == TSP_REG_NUL)
            return NULL;
        snprintf(why, n, "operand %d must be a stream register or nul", j + 1);
        return why;
    case 't':
        if (v >= TSP_REG_TYPE && v < TSP_REG_TYPE + TSP_NTYPES)
            return NULL;
        snprintf(why, n, "operand %d must be a type: i8, i16, i32, f16 or f32", j + 1);
        return why;
    default: return NULL;
    }
}

/* The stream group starting at register reg, w streams wide, is aligned and on chip. */
static bool group_ok(const ts_model *m, int32_t reg, uint32_t w)
{
    if (reg < 0 || reg >= TSP_REG_ALU)
        return true;
    uint32_t s = (uint32_t)reg % TSP_MAX_STREAMS;
    return s % w == 0 && s + w <= m->NS;
}

static ts_status check_insn(const ts_model *m, uint32_t qi, uint32_t pc, const ts_insn *in, ts_err *err)
{
    char why[160];
    const char *bad = NULL;
    const tsp_opfacts *f = &ts_tsp_opfacts[in->op];
    const tsp_layout *l = m->lay;
    int skind = l->kind[l->qslice[qi]];
    int need = f->unit == TSP_U_MEM ? TSP_S_MEM : f->unit == TSP_U_VXM ? TSP_S_VXM : f->unit == TSP_U_MXM ? TSP_S_MXM
             : f->unit == TSP_U_ICU ? -1 : TSP_S_SXM;
    const int32_t *a = in->a;
    int nops = ts_isa_nopnds(&ts_tsp_isa.ops[in->op]);
    if (need >= 0 && need != skind) {
        snprintf(why, sizeof why, "a %s instruction cannot issue from a %s queue", ts_tsp_unit_names[f->unit],
                 slice_kinds[skind]);
        bad = why;
    }
    for (int j = 0; !bad && j < nops; j++)
        bad = check_opnd(m, in, j, f->classes[j], why, sizeof why);
    int type = !bad && f->classes[0] == 't' ? a[0] - TSP_REG_TYPE : -1;
    if (!bad && type >= 0 && (f->flags & TSP_F_INT) && is_float(type))
        bad = "it takes integer types only";
    if (!bad && type >= 0 && (f->flags & TSP_F_FLOAT) && !is_float(type))
        bad = "it takes floating-point types only";
    /* tags are small: 0 (untagged / accept any) .. 65535 */
    for (int j = 0; !bad && j < nops; j++)
        if (f->classes[j] == 'i' && j >= nops - 2 && f->unit != TSP_U_ICU && in->op != TSP_OP_LW &&
            in->op != TSP_OP_IW && in->op != TSP_OP_SHIFT && in->op != TSP_OP_ROTATE && in->op != TSP_OP_MASK &&
            in->op != TSP_OP_ABC && (a[j] < 0 || a[j] > 65535))
            bad = "a tag must be 0..65535";
    if (!bad) {
        switch (in->op) {
        case TSP_OP_NOP:
            if (a[0] < 1 || a[0] > 65535)
                bad = "nop takes 1..65535 cycles";
            break;
        case TSP_OP_REPEAT:
            if (pc == 0 || in[-1].op == TSP_OP_REPEAT)
                bad = "repeat must follow an instruction that is not a repeat";
            else if (a[0] < 0 || a[1] < 1)
                bad = "repeat takes n >= 0 copies, d >= 1 cycles apart";
            else if (in[-1].op == TSP_OP_SYNC || in[-1].op == TSP_OP_NOTIFY)
                bad = "sync and notify cannot be repeated";
            break;
        case TSP_OP_IFETCH:
            if (!group_ok(m, a[0], 2))
                bad = "ifetch reads an aligned stream pair";
            break;
        case TSP_OP_CONFIG:
            if (a[0] < 1 || (uint64_t)a[0] > m->cfg.superlanes)
                bad = "config takes 1..superlanes powered superlanes";
            break;
        case TSP_OP_READ:
        case TSP_OP_WRITE:
            if (a[0] < 0 || (uint32_t)a[0] >= m->words) {
                snprintf(why, sizeof why, "address %d is past the slice's %u words", a[0], m->words);
                bad = why;
            }
            break;
        case TSP_OP_CVT:
            if (!group_ok(m, a[2], tsp_type_width(a[0] - TSP_REG_TYPE)) ||
                !group_ok(m, a[3], tsp_type_width(a[1] - TSP_REG_TYPE)))
                bad = "a type wider than a byte needs an aligned group of streams";
            break;
        case TSP_OP_LW:
        case TSP_OP_IW:
        case TSP_OP_ABC:
            if (type != TSP_I8 && type != TSP_F16)
                bad = "the MXM takes i8 or f16";
            else if (in->op != TSP_OP_ABC && a[1] != TSP_REG_NUL &&
                     (a[2] < 1 || a[2] % (int32_t)tsp_type_width(type) ||
                      (uint32_t)(a[1] % TSP_MAX_STREAMS) + (uint32_t)a[2] > m->NS || !group_ok(m, a[1], tsp_type_width(type))))
                bad = "n must be a whole number of rows of aligned streams on chip";
            else if (in->op == TSP_OP_ABC && (a[2] < 0 || a[2] > 1))
                bad = "abc mode is 0 (replace) or 1 (accumulate)";
            else if (in->op == TSP_OP_ABC && !group_ok(m, a[1], tsp_type_width(type)))
                bad = "a type wider than a byte needs an aligned group of streams";
            else if (in->op == TSP_OP_ABC && (a[3] < 0 || a[3] > 65535 || a[4] < 0 || a[4] > 65535))
                bad = "a tag must be 0..65535";
            break;
        case TSP_OP_ACC:
            if (!group_ok(m, a[0], 4))
                bad = "acc writes an aligned group of 4 streams";
            break;
        case TSP_OP_PERMUTE:
            if (!group_ok(m, a[2], 2))
                bad = "the permute map is an aligned stream pair";
            break;
        case TSP_OP_TRANSPOSE:
            if (m->L != 16)
                bad = "transpose needs 16 lanes per superlane";
            else if (!group_ok(m, a[0], 16) || !group_ok(m, a[1], 16))
                bad = "transpose reads and writes aligned groups of 16 streams";
            break;
        case TSP_OP_SEND:
        case TSP_OP_RECEIVE:
            if (a[0] < 0 || (uint64_t)a[0] >= m->cfg.c2c_links)
                bad = "no such c2c link";
            break;
        default:
            if (f->unit == TSP_U_VXM && type >= 0) {
                uint32_t w = tsp_type_width(type);
                for (int j = 1; j < nops && !bad; j++)
                    if (strchr("da", f->classes[j]) && !group_ok(m, a[j], w))
                        bad = "a type wider than a byte needs an aligned group of streams";
            }
            break;
        }
    }
    if (!bad)
        return TS_OK;
    if (in->line)
        return ts_err_set(err, TS_EINPUT, "queue %u pc %u (line %u): '%s': %s", qi, pc, in->line,
                          ts_tsp_isa.ops[in->op].mnemonic, bad);
    return ts_err_set(err, TS_EINPUT, "queue %u pc %u: '%s': %s", qi, pc, ts_tsp_isa.ops[in->op].mnemonic, bad);
}

/* The most bytes of a batch's outputs kept over all its runs (every run's are kept for read_output):
 * a program that would keep more is refused, not run into gigabytes of host memory. */
#define TSP_HOST_COPIES_MAX (UINT64_C(1) << 30)

/* A batch run once per sample (tsp_target.h): the runs from its symbol, the host's
 * transfers from the segments of kind input and output, each checked against the MEM. */
static ts_status load_batch(ts_model *m, const ts_program *p, ts_err *err)
{
    uint64_t sb = m->cfg.mem_slice_bytes;
    m->runs = 1;
    for (size_t i = 0; i < p->nsyms; i++) {
        const ts_symbol *y = &p->syms[i];
        if (y->kind != TS_SYM_CONST)
            continue;
        if (!strcmp(y->name, TS_TSP_SYM_RUNS)) {
            if (y->value < 1 || y->value > 1000000)
                return ts_err_set(err, TS_EINPUT, "program runs %" PRId64 " times; 1 to 1000000 are accepted",
                                  y->value);
            m->runs = (uint32_t)y->value;
        }
    }
    size_t nin = 0, nout = 0;
    uint64_t outb = 0; /* bytes read back after each run */
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        if (g->kind != TSP_KIND_INPUT && g->kind != TSP_KIND_OUTPUT)
            continue;
        uint64_t a = g->kind == TSP_KIND_INPUT ? g->addr % sb : g->addr, s = g->kind == TSP_KIND_INPUT ? g->addr / sb : 0;
        if (g->index >= m->lay->nmem || a + g->len > sb || (g->kind == TSP_KIND_INPUT && (s == 0 || s >= m->runs)))
            return ts_err_set(err, TS_EINPUT, "%s segment for slice %u at 0x%" PRIx64 " (%u bytes) does not fit: %u MEM "
                              "slices of %" PRIu64 " bytes, inputs for runs 1 to %u", g->kind == TSP_KIND_INPUT ? "input"
                              : "output", g->index, g->addr, g->len, m->lay->nmem, sb, m->runs - 1);
        nin += g->kind == TSP_KIND_INPUT;
        nout += g->kind == TSP_KIND_OUTPUT;
        outb += g->kind == TSP_KIND_OUTPUT ? g->len : 0;
    }
    if (outb * m->runs > TSP_HOST_COPIES_MAX) /* every run's outputs are kept for read_output */
        return ts_err_set(err, TS_EINPUT, "program reads back %" PRIu64 " bytes after each of its %u runs: %" PRIu64
                          " bytes of copies, more than the %" PRIu64 " accepted", outb, m->runs, outb * m->runs,
                          (uint64_t)TSP_HOST_COPIES_MAX);
    if ((nin || nout) && m->runs < 2)
        return ts_err_set(err, TS_EINPUT, "program has host transfers but runs once (no symbol " TS_TSP_SYM_RUNS ")");
    m->xin = ts_calloc(nin + 1, sizeof *m->xin);
    m->xout = ts_calloc(nout + 1, sizeof *m->xout);
    if (m->runs > 1) {
        m->mem_last = ts_calloc((size_t)m->lay->nmem * m->words, sizeof *m->mem_last);
        m->mem_first = ts_calloc((size_t)m->lay->nmem * m->words, sizeof *m->mem_first);
    }
    if (!m->xin || !m->xout || (m->runs > 1 && (!m->mem_last || !m->mem_first)))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        bool in = g->kind == TSP_KIND_INPUT;
        if (!in && g->kind != TSP_KIND_OUTPUT)
            continue;
        tsp_xfer *x = in ? &m->xin[m->nxin++] : &m->xout[m->nxout++];
        *x = (tsp_xfer){.slice = g->index, .sample = in ? (uint32_t)(g->addr / sb) : 0, .addr = in ? g->addr % sb
                        : g->addr, .len = g->len};
        x->bytes = ts_malloc(in ? (size_t)g->len + 1 : (size_t)g->len * m->runs + 1);
        if (!x->bytes)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        if (in)
            memcpy(x->bytes, g->bytes, g->len);
    }
    return TS_OK;
}

ts_status ts_tsp_load(ts_model *m, const ts_program *p, ts_err *err)
{
    ts_status rc;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->kind != TSP_KIND_QUEUE)
            return ts_err_set(err, TS_EINPUT, "program has a stream of kind %u; tsp programs have 'queue' streams only",
                              s->kind);
        if (s->index >= m->nq)
            return ts_err_set(err, TS_EINPUT, "program has a stream for queue %u, but the config has %u queues",
                              s->index, m->nq);
        for (uint32_t pc = 0; pc < s->n; pc++) {
            if (s->insn[pc].op >= TSP_OP_COUNT)
                return ts_err_set(err, TS_EINPUT, "queue %u pc %u: opcode %u is not a tsp instruction", s->index, pc,
                                  s->insn[pc].op);
            if ((rc = check_insn(m, s->index, pc, &s->insn[pc], err)) != TS_OK)
                return rc;
        }
        tsp_queue *q = &m->q[s->index];
        ts_free(q->dec);
        if (!(q->dec = ts_calloc(s->n ? s->n : 1, sizeof *q->dec)))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        for (uint32_t pc = 0; pc < s->n; pc++) {
            const tsp_opfacts *fa = &ts_tsp_opfacts[s->insn[pc].op];
            tsp_dec *d = &q->dec[pc];
            d->unit = fa->unit;
            d->flags = fa->flags;
            d->ev = !fa->energy ? 0 : strcmp(fa->energy, "mul") ? 1 : 2;
            d->binary = fa->unit == TSP_U_VXM && fa->classes[3] == 'a';
            d->dfunc = (uint32_t)m->cfg.d_func[s->insn[pc].op];
            d->skew = (uint32_t)m->cfg.d_skew[fa->unit];
        }
        q->code = s->insn;
        q->n = s->n;
        q->pc = 0;
        q->fetched = s->n < m->cfg.icu_capacity ? s->n : (uint32_t)m->cfg.icu_capacity;
        q->state = s->n ? Q_RUN : Q_DONE;
    }
    if (m->trace) {
        m->trace_merge = ts_tsp_trace_plan(m);
        ts_trace_process(m->trace, 0, "tsp");
        for (uint32_t qi = 0; qi < m->nq; qi++)
            if (m->q[qi].n) {
                char name[64], sl[32];
                ts_tsp_slice_name(m->lay, m->q[qi].slice, sl, sizeof sl);
                snprintf(name, sizeof name, "queue %u (%s)", qi, sl);
                ts_trace_thread(m->trace, 0, (int)qi + 1, name);
            }
    }
    if ((rc = load_batch(m, p, err)) != TS_OK)
        return rc;
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        if (g->kind == TSP_KIND_INPUT || g->kind == TSP_KIND_OUTPUT)
            continue; /* load_batch */
        if (g->kind != TSP_KIND_MEM || g->index >= m->lay->nmem || g->addr + g->len > m->cfg.mem_slice_bytes)
            return ts_err_set(err, TS_EINPUT, "data segment for %s %u at 0x%" PRIx64 " (%u bytes) does not fit a MEM "
                              "slice: %u slices of %" PRIu64 " bytes", g->kind == TSP_KIND_MEM ? "mem" : "kind",
                              g->index, g->addr, g->len, m->lay->nmem, m->cfg.mem_slice_bytes);
        uint8_t *mem = ts_tsp_mem_of(m, g->index, err);
        if (!mem)
            return TS_ENOMEM;
        memcpy(mem + g->addr, g->bytes, g->len);
    }
    return TS_OK;
}

