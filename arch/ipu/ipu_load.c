/* arch/ipu/ipu_load.c — loading a program: every stream is checked (opcodes, operand classes,
 * branch targets, bundles, repeat bodies, code size) and predecoded once into ipu_insn arrays the
 * executor only indexes; the per-op counters superstep_events needs are laid out, and the data
 * segments are written to tile memory.
 */
#include <inttypes.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"
#include "core/sim.h"

static bool is_body_op(uint8_t unit, uint8_t op)
{
    return (unit == IPU_U_ALU || unit == IPU_U_MEM || unit == IPU_U_FPU || unit == IPU_U_AMP ||
            op == IPU_OP_NOP || op == IPU_OP_BUNDLE || op == IPU_OP_BUNDLE_END);
}

/* Whether register number v is one that operand class ch allows: 'm' an $m register, 'a' an $a
 * register, 'p' an even $a register (a pair), 'q' an $a register that is a multiple of 4 (a quad),
 * any other class any register. */
static bool reg_fits(char ch, int32_t v)
{
    if (v < 0 || v >= IPU_NREGS)
        return false;
    if (ch == 'm')
        return v < IPU_AREG0;
    if (ch == 'a' || ch == 'p' || ch == 'q')
        return v >= IPU_AREG0 && (v - IPU_AREG0) % (ch == 'p' ? 2 : ch == 'q' ? 4 : 1) == 0;
    return true;
}

/* The contexts op may run in, as ipu_insn.ctx_ok: bit 0 the supervisor, bit 1 a worker. */
static uint8_t ctx_ok_of(int op)
{
    const char cx = ts_ipu_opfacts[op].ctx;
    return (uint8_t)((cx != 'W' ? 1 : 0) | (cx != 'S' ? 2 : 0));
}

static ts_status decode_one(const ts_insn *in, uint32_t pc, uint32_t n, uint32_t tile, ipu_insn *out, ts_err *err)
{
    if (in->op >= IPU_OP_COUNT)
        return ts_err_sim(err, tile, -1, "pc %u: opcode %u is not an ipu instruction", pc, in->op);
    const ts_opinfo *oi = &ts_ipu_isa.ops[in->op];
    const char *cls = ts_ipu_opfacts[in->op].classes;
    memset(out, 0, sizeof *out);
    out->op = (uint8_t)in->op;
    out->ctx_ok = ctx_ok_of(in->op);
    int nreg = 0, nimm = 0;
    for (int k = 0; cls[k]; k++) {
        int32_t v = in->a[k];
        char ch = cls[k];
        if (ch == 'i' || ch == 'f') {
            if (nimm++ == 0)
                out->imm = v;
            else
                out->imm2 = v;
            continue;
        }
        if (ch == 'l') {
            if (v < 0 || (uint32_t)v > n)
                return ts_err_sim(err, tile, -1, "pc %u: %s target %d is outside the stream", pc, oi->mnemonic, v);
            out->tgt = (uint32_t)v;
            continue;
        }
        if (!reg_fits(ch, v)) {
            const char *want = ch == 'm' ? "an $m register" : ch == 'a' ? "an $a register" :
                               ch == 'p' ? "an even $a register (a pair)" :
                               ch == 'q' ? "an $a register that is a multiple of 4 (a quad)" : "a register";
            return ts_err_sim(err, tile, -1, "pc %u: %s operand %d must be %s", pc, oi->mnemonic, k + 1, want);
        }
        uint8_t r = (uint8_t)v;
        if (nreg == 0)
            out->r0 = r;
        else if (nreg == 1)
            out->r1 = r;
        else if (nreg == 2)
            out->r2 = r;
        else if (nreg == 3)
            out->r3 = r;
        else
            out->r4 = r;
        nreg++;
    }
    return TS_OK;
}

/* decode_one's work per op, laid out once per load: each operand's place in the ipu_insn (a
 * register field, the first or the second immediate, the target) and, for a register, the
 * numbers its class allows as a bit mask. An instruction whose operands all pass is decoded so
 * (plan_decode); one that fails goes through decode_one, which words the error. */
enum { PD_R0, PD_R1, PD_R2, PD_R3, PD_R4, PD_IMM, PD_IMM2, PD_TGT };

typedef struct op_plan {
    uint8_t n;                 /* operands in the class string */
    uint8_t ctx_ok;            /* as decode_one sets it */
    uint8_t dst[TS_MAX_OPNDS]; /* PD_* */
    uint32_t ok[TS_MAX_OPNDS]; /* a register's allowed numbers */
} op_plan;

_Static_assert(IPU_NREGS == 32, "a class's registers are a 32-bit mask");

static void plans_make(op_plan *pl)
{
    for (int op = 0; op < IPU_OP_COUNT; op++) {
        const char *cls = ts_ipu_opfacts[op].classes;
        op_plan *o = &pl[op];
        memset(o, 0, sizeof *o);
        o->ctx_ok = ctx_ok_of(op);
        int nreg = 0, nimm = 0;
        for (int k = 0; cls[k] && k < TS_MAX_OPNDS; k++) {
            const char ch = cls[k];
            o->n = (uint8_t)(k + 1);
            if (ch == 'i' || ch == 'f') {
                o->dst[k] = nimm++ == 0 ? PD_IMM : PD_IMM2;
                continue;
            }
            if (ch == 'l') {
                o->dst[k] = PD_TGT;
                continue;
            }
            o->dst[k] = (uint8_t)(nreg < 4 ? PD_R0 + nreg : PD_R4);
            nreg++;
            uint32_t ok = 0;
            for (int32_t v = 0; v < IPU_NREGS; v++)
                ok |= (uint32_t)reg_fits(ch, v) << v;
            o->ok[k] = ok;
        }
    }
}

/* decode_one by the op's plan: false when an operand fails (decode_one then says which). */
static inline bool plan_decode(const op_plan *pl, const ts_insn *in, uint32_t n, ipu_insn *out)
{
    const op_plan *o = &pl[in->op];
    ipu_insn d;
    memset(&d, 0, sizeof d);
    d.op = (uint8_t)in->op;
    d.ctx_ok = o->ctx_ok & 3;
    uint8_t r[5] = {0};
    for (int k = 0; k < o->n; k++) {
        const int32_t v = in->a[k];
        switch (o->dst[k]) {
        case PD_IMM: d.imm = v; break;
        case PD_IMM2: d.imm2 = v; break;
        case PD_TGT:
            if (v < 0 || (uint32_t)v > n)
                return false;
            d.tgt = (uint32_t)v;
            break;
        default:
            if ((uint32_t)v >= IPU_NREGS || !(o->ok[k] >> v & 1))
                return false;
            r[o->dst[k]] = (uint8_t)v;
            break;
        }
    }
    d.r0 = r[0];
    d.r1 = r[1];
    d.r2 = r[2];
    d.r3 = r[3];
    d.r4 = r[4];
    *out = d;
    return true;
}

/* Registers an instruction reads and writes, as bit masks over the 32 registers (pairs and quads
 * cover 2 and 4). */
static void reg_masks(const ts_insn *in, uint32_t *rd, uint32_t *wr)
{
    const ts_opinfo *oi = &ts_ipu_isa.ops[in->op];
    const char *cls = ts_ipu_opfacts[in->op].classes;
    *rd = *wr = 0;
    for (int k = 0; cls[k]; k++) {
        char ch = cls[k];
        if (ch == 'i' || ch == 'f' || ch == 'l')
            continue;
        uint32_t w = ch == 'p' ? 2 : ch == 'q' ? 4 : 1;
        uint32_t bits = (uint32_t)((1ull << w) - 1) << (in->a[k] & 31);
        if (oi->opnd[k] & TS_OR_READ)
            *rd |= bits;
        if (oi->opnd[k] & TS_OR_WRITE)
            *wr |= bits;
    }
}

/* Bundles (`{` main aux `}`): the shape, the pipelines, and that the two instructions cannot see
 * each other within the issue: the auxiliary one runs first on the registers as they were, so
 * the main one may not read or write a register the auxiliary one writes. No branch enters a
 * bundle. Marks the members. */
static ts_status check_bundles(const ts_stream *s, const ts_insn *insn, ipu_insn *code, ts_err *err)
{
    for (uint32_t pc = 0; pc < s->n; pc++) {
        if (code[pc].op == IPU_OP_BUNDLE_END && !code[pc].member)
            return ts_err_sim(err, s->index, -1, "pc %u: } without {", pc);
        if (code[pc].op != IPU_OP_BUNDLE)
            continue;
        if (pc + 3 >= s->n || code[pc + 3].op != IPU_OP_BUNDLE_END)
            return ts_err_sim(err, s->index, -1, "pc %u: a bundle is {, one main-pipeline instruction, one auxiliary "
                              "one and }", pc);
        uint8_t mo = code[pc + 1].op, ao = code[pc + 2].op;
        uint8_t mu = ts_ipu_opfacts[mo].unit, au = ts_ipu_opfacts[ao].unit;
        if (!(mu == IPU_U_ALU || mu == IPU_U_MEM || mo == IPU_OP_NOP))
            return ts_err_sim(err, s->index, -1, "pc %u: %s cannot lead a bundle: the first instruction must be an integer, "
                              "load, store or nop (main pipeline)", pc + 1, ts_ipu_isa.ops[mo].mnemonic);
        if (!((au == IPU_U_FPU || au == IPU_U_AMP) && ao != IPU_OP_LD128PUTCS && ao != IPU_OP_LD128PUTCSSTEP) && ao != IPU_OP_NOP)
            return ts_err_sim(err, s->index, -1, "pc %u: %s cannot be the second instruction of a bundle: it must be a "
                              "float, AMP or nop instruction (auxiliary pipeline)", pc + 2, ts_ipu_isa.ops[ao].mnemonic);
        uint32_t mr, mw, ar, aw;
        reg_masks(&insn[pc + 1], &mr, &mw);
        reg_masks(&insn[pc + 2], &ar, &aw);
        if ((mr | mw) & aw)
            return ts_err_sim(err, s->index, -1, "pc %u: %s uses a register that %s in the same bundle writes",
                              pc + 1, ts_ipu_isa.ops[mo].mnemonic, ts_ipu_isa.ops[ao].mnemonic);
        code[pc + 1].member = code[pc + 2].member = code[pc + 3].member = 1;
        pc += 3;
    }
    for (uint32_t pc = 0; pc < s->n; pc++) /* (tgt is 0, never a member, for an op without a target: the
                                            * class string is read only for a target inside a bundle) */
        if (code[pc].tgt < s->n && code[code[pc].tgt].member && strchr(ts_ipu_opfacts[code[pc].op].classes, 'l'))
            return ts_err_sim(err, s->index, -1, "pc %u: %s target %u is inside a bundle", pc,
                              ts_ipu_isa.ops[code[pc].op].mnemonic, code[pc].tgt);
    return TS_OK;
}

/* Decodes every stream into m->code (total instructions), stream by stream. */
static ts_status load_streams(ts_model *m, const ts_program *p, ts_program *own, ts_insn *scratch, size_t total,
                              ts_err *err)
{
    m->code = ts_calloc(total ? total : 1, sizeof *m->code);
    if (!m->code)
        return ts_err_set(err, TS_ENOMEM, "out of memory decoding the program");
    op_plan plans[IPU_OP_COUNT];
    plans_make(plans);
    size_t off = 0;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        ipu_tile *t = &m->t[s->index];
        if (t->code)
            return ts_err_set(err, TS_EINPUT, "program has two streams for tile %u", s->index);
        ipu_insn *code = m->code + off;
        const ts_insn *insn = s->insn;
        if (s->packed) {
            ts_status urc = ts_stream_unpack(s, scratch, err);
            if (urc != TS_OK)
                return urc;
            insn = scratch;
        }
        for (uint32_t pc = 0; pc < s->n; pc++) {
            if (insn[pc].op < IPU_OP_COUNT && plan_decode(plans, &insn[pc], s->n, &code[pc]))
                continue;
            ts_status rc = decode_one(&insn[pc], pc, s->n, s->index, &code[pc], err);
            if (rc != TS_OK)
                return rc;
        }
        ts_status brc = check_bundles(s, insn, code, err);
        if (brc != TS_OK)
            return brc;
        for (uint32_t pc = 0; pc < s->n; pc++)
            code[pc].fast = ts_ipu_fast_code(&code[pc]);
        for (uint32_t pc = 0; pc < s->n; pc++) { /* repeat bodies: straight-line work only */
            if (code[pc].op != IPU_OP_RPT && code[pc].op != IPU_OP_RPTI)
                continue;
            int32_t len = code[pc].op == IPU_OP_RPT ? code[pc].imm : code[pc].imm2;
            if (len < 1 || pc + 1 + (uint32_t)len > s->n)
                return ts_err_sim(err, s->index, -1, "pc %u: repeat body of %d instructions does not fit the stream",
                                  pc, len);
            if (pc + 1 + (uint32_t)len < s->n && code[pc + 1 + len].member)
                return ts_err_sim(err, s->index, -1, "pc %u: repeat body of %d instructions ends inside a bundle", pc, len);
            code[pc].pure = 1;
            for (uint32_t k = pc + 1; k <= pc + (uint32_t)len; k++) {
                uint8_t op = code[k].op;
                code[pc].bundled |= op == IPU_OP_BUNDLE;
                if (!is_body_op(ts_ipu_opfacts[op].unit, op))
                    return ts_err_sim(err, s->index, -1, "pc %u: %s inside the repeat body at pc %u is not allowed",
                                      k, ts_ipu_isa.ops[op].mnemonic, pc);
                if (ts_ipu_opfacts[op].memwr > 0 || op == IPU_OP_LD128PUTCS || op == IPU_OP_LD128PUTCSSTEP) /* a store, or coefficients */
                    code[pc].pure = 0;
            }
        }
        uint32_t ncode = 0;
        uint64_t nsync = 0;
        for (uint32_t pc = 0; pc < s->n; pc++) {
            ncode += code[pc].op != IPU_OP_BUNDLE && code[pc].op != IPU_OP_BUNDLE_END;
            nsync += code[pc].op == IPU_OP_SYNC && code[pc].imm == 1;
        }
        if (nsync > m->sync_texts)
            m->sync_texts = nsync;
        if ((uint64_t)ncode * m->c.insn_bytes > m->c.sram_bytes)
            return ts_err_set(err, TS_EINPUT, "tile %u: code of %u instructions does not fit its memory", s->index, ncode);
        t->code = code;
        t->n = s->n;
        t->ncode = ncode;
        t->sup = s->n ? SUP_RUN : SUP_DONE;
        ipu_sup_op(t);
        t->rx_park_n = SIZE_MAX;
        off += s->n;
        if (own)
            ts_stream_release(&own->streams[i]);
    }
    return TS_OK;
}

/* The per-op counters and the data segments. */
static ts_status load_rest(ts_model *m, const ts_program *p, ts_program *own, ts_err *err)
{
    /* per tile: counters per op (the run's instruction counts, and the endless-loop check's sum
     * over the ops with an effect), with phase_events their values at the last sync, and the list
     * of ops its code holds (the syncs diff only those) */
    size_t ncnt = m->phase_events ? 2 : 1;
    size_t cnt_bytes = (size_t)m->ntiles * ncnt * IPU_OP_COUNT * sizeof(uint64_t);
    if (!(m->op_block = ts_calloc(1, cnt_bytes + (size_t)m->ntiles * IPU_OP_COUNT)))
        return ts_err_set(err, TS_ENOMEM, "out of memory for the op counters");
    for (uint32_t i = 0; i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        t->opcnt = (uint64_t *)m->op_block + (size_t)i * ncnt * IPU_OP_COUNT;
        t->opseen = m->phase_events ? t->opcnt + IPU_OP_COUNT : NULL;
        uint8_t *ops = (uint8_t *)m->op_block + cnt_bytes + (size_t)i * IPU_OP_COUNT;
        bool has[IPU_OP_COUNT] = {false};
        for (uint32_t pc = 0; pc < t->n; pc++)
            has[t->code[pc].op] = true;
        for (int op = 0; op < IPU_OP_COUNT; op++) /* those with an effect first (tile_effects) */
            if (has[op] && ts_ipu_opfacts[op].effect)
                ops[t->nops++] = (uint8_t)op;
        t->neffops = t->nops;
        for (int op = 0; op < IPU_OP_COUNT; op++)
            if (has[op] && !ts_ipu_opfacts[op].effect)
                ops[t->nops++] = (uint8_t)op;
        t->ops = ops;
    }
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        if (g->kind != 0 || g->index >= m->ntiles || g->addr + g->len > m->c.sram_bytes)
            return ts_err_set(err, TS_EINPUT, "data segment for tile %u at 0x%" PRIx64 " (%u bytes) does not fit its memory",
                              g->index, g->addr, g->len);
        ts_status rc = ts_ipu_mem_write_bytes(m, &m->t[g->index], g->addr, g->bytes, g->len, err);
        if (rc != TS_OK)
            return rc;
    }
    for (size_t i = 0; own && i < own->nsegs; i++) /* written: freed (equal bytes are shared, so not before) */
        if (!own->segs[i].shared) {
            ts_free(own->segs[i].bytes);
            own->segs[i].bytes = NULL;
            own->segs[i].len = 0;
        }
    m->loaded = true;
    return TS_OK;
}

/* Streams held packed are unpacked one at a time into a scratch array. With `own` (p itself,
 * when the loader owns the program) each stream and segment is freed once decoded or written, so
 * the program and its decoded copy are not held whole together. */
static ts_status load_program(ts_model *m, const ts_program *p, ts_program *own, ts_err *err)
{
    size_t total = 0, most = 0;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->kind != 0)
            return ts_err_set(err, TS_EINPUT, "program stream kind %u is not 'tile'", s->kind);
        if (s->index >= m->ntiles)
            return ts_err_set(err, TS_EINPUT, "program has a stream for tile %u, but the config has %u tiles",
                              s->index, m->ntiles);
        total += s->n;
        most = s->packed && s->n > most ? s->n : most;
    }
    ts_insn *scratch = NULL;
    if (most && !(scratch = ts_malloc(most * sizeof *scratch)))
        return ts_err_set(err, TS_ENOMEM, "out of memory decoding the program");
    ts_status rc = load_streams(m, p, own, scratch, total, err);
    ts_free(scratch);
    return rc != TS_OK ? rc : load_rest(m, p, own, err);
}

/* A program the loader refuses is bad input (exit 2), though its message names a tile as a run's
 * errors do. */
static ts_status load_fix(ts_status rc, ts_err *err)
{
    if (rc == TS_ESIM) {
        err->status = TS_EINPUT;
        rc = TS_EINPUT;
    }
    return rc;
}

ts_status ts_ipu_load(ts_model *m, const ts_program *p, ts_err *err)
{
    return load_fix(load_program(m, p, NULL, err), err);
}

ts_status ts_ipu_load_owned(ts_model *m, ts_program *p, ts_err *err)
{
    return load_fix(load_program(m, p, p, err), err);
}
