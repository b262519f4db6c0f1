/* core/disasm.c — canonical assembly text from a program.
 *
 * The text reassembles to the same binary: streams, segments, symbols and marks come out in
 * canonical order; every value is printed so that it reads back exactly (floats with the fewest
 * digits that round-trip, NaNs with their payload); label operands use the first label symbol at
 * the target pc, or a local ".L<pc>" label that the assembler does not keep as a symbol; and the
 * source line recorded in each instruction is kept with ".line" directives, emitted only where
 * the line the assembler would count differs from the recorded one.
 */
#include "core/program.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

typedef struct dis {
    ts_buf *out;
    long next;  /* logical line number the assembler gives the next output line */
    bool zero;  /* the assembler is in ".line 0" mode */
} dis;

/* Every output line goes through here so the line count stays exact. */
static void emit(dis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(dis *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_buf_vprintf(d->out, fmt, ap);
    va_end(ap);
    ts_buf_putc(d->out, '\n');
    d->next++;
}

/* Before an instruction that recorded `line`: make the assembler record the same. */
static void sync_line(dis *d, uint16_t line)
{
    if (line == 0) {
        if (!d->zero && (d->next & 0xffff) != 0) {
            emit(d, ".line 0");
            d->zero = true;
        }
        return;
    }
    if (!d->zero && (d->next & 0xffff) == line)
        return;
    emit(d, ".line %u", line);
    d->zero = false;
    d->next = line;
}

static void put_string(ts_buf *b, const char *s)
{
    ts_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': ts_buf_puts(b, "\\\""); break;
        case '\\': ts_buf_puts(b, "\\\\"); break;
        case '\n': ts_buf_puts(b, "\\n"); break;
        case '\t': ts_buf_puts(b, "\\t"); break;
        case '\r': ts_buf_puts(b, "\\r"); break;
        default:
            if (*p < 0x20 || *p >= 0x7f)
                ts_buf_printf(b, "\\x%02x", *p);
            else
                ts_buf_putc(b, (char)*p);
        }
    }
    ts_buf_putc(b, '"');
}

/* binary32 bits as a literal the assembler reads back to the same bits. */
static void put_float(ts_buf *b, uint32_t bits)
{
    const char *sign = bits >> 31 ? "-" : "";
    uint32_t mag = bits & 0x7fffffffu;
    if (mag == 0x7f800000u) {
        ts_buf_printf(b, "%sinf", sign);
        return;
    }
    if (mag > 0x7f800000u) {
        if (mag == 0x7fc00000u)
            ts_buf_printf(b, "%snan", sign);
        else
            ts_buf_printf(b, "%snan(0x%" PRIx32 ")", sign, mag & 0x7fffffu);
        return;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    char tmp[48];
    /* Shortest of 1..9 significant digits that reads back exactly; 9 always does for binary32. */
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
        float g = strtof(tmp, NULL);
        if (!memcmp(&g, &f, sizeof f))
            break;
    }
    ts_buf_puts(b, tmp);
}

static ts_status bad_prog(ts_err *err, const ts_isa *isa, const ts_stream *s, uint32_t pc,
                          const char *what, long v)
{
    const char *kn = s->kind < isa->nstream_kinds ? isa->stream_kinds[s->kind] : "?";
    return ts_err_set(err, TS_EINPUT, "cannot disassemble stream %s %" PRIu32 ", pc %" PRIu32
                      ": %s %ld", kn, s->index, pc, what, v);
}

/* s as a stream of instructions in *one: s itself, or, when s is packed, a copy whose instructions
 * are unpacked into an array the caller frees (one->insn, when s->packed). */
static ts_status unpacked(const ts_stream *s, ts_stream *one, ts_err *err)
{
    *one = *s;
    if (!s->packed)
        return TS_OK;
    one->packed = NULL;
    if (!(one->insn = ts_malloc((s->n ? s->n : 1) * sizeof *one->insn)))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_status st = ts_stream_unpack(s, one->insn, err);
    if (st) {
        ts_free(one->insn);
        one->insn = NULL;
    }
    return st;
}

/* The instructions of s (an insn stream, or a packed one unpacked into one). */
static ts_status check_insns(const ts_stream *s, const ts_isa *isa, ts_err *err)
{
    for (uint32_t pc = 0; pc < s->n; pc++) {
        const ts_insn *in = &s->insn[pc];
        if (in->op >= isa->nops)
            return bad_prog(err, isa, s, pc, "unknown op", in->op);
        const ts_opinfo *oi = &isa->ops[in->op];
        int no = ts_isa_nopnds(oi);
        for (int j = 0; j < no; j++) {
            int k = oi->opnd[j] & TS_OK_KIND_MASK;
            int32_t a = in->a[j];
            if (k == TS_OK_REG && (a < 0 || (size_t)a >= isa->nregs))
                return bad_prog(err, isa, s, pc, "bad register", a);
            if (k == TS_OK_LABEL && (a < 0 || (uint32_t)a >= s->n))
                return bad_prog(err, isa, s, pc, "branch target outside the stream", a);
        }
    }
    return TS_OK;
}

static ts_status check(const ts_program *p, const ts_isa *isa, ts_err *err)
{
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->kind >= isa->nstream_kinds)
            return ts_err_set(err, TS_EINPUT, "cannot disassemble: stream kind %" PRIu32 " is not "
                              "a %s stream kind", s->kind, isa->arch);
        ts_stream one;
        ts_status cst = unpacked(s, &one, err);
        if (!cst)
            cst = check_insns(&one, isa, err);
        if (s->packed)
            ts_free(one.insn);
        if (cst)
            return cst;
    }
    for (size_t i = 0; i < p->nsegs; i++)
        if (p->segs[i].kind >= isa->nstream_kinds)
            return ts_err_set(err, TS_EINPUT, "cannot disassemble: data segment kind %" PRIu32
                              " is not a %s stream kind", p->segs[i].kind, isa->arch);
    for (size_t i = 0; i < p->nsyms; i++) {
        const ts_symbol *y = &p->syms[i];
        if (y->kind == TS_SYM_LABEL && (y->stream >= p->nstreams || y->value < 0 ||
                                        y->value > p->streams[y->stream].n))
            return ts_err_set(err, TS_EINPUT, "cannot disassemble: label '%s' is outside its "
                              "stream", y->name);
    }
    for (size_t i = 0; i < p->nmarks; i++)
        if (p->marks[i].stream >= p->nstreams || p->marks[i].pc > p->streams[p->marks[i].stream].n)
            return ts_err_set(err, TS_EINPUT, "cannot disassemble: superstep mark %" PRIu32
                              " is outside its stream", p->marks[i].id);
    return TS_OK;
}

/* One stream: marks, labels and instructions in pc order. syms/marks point at this stream's run
 * in the canonical tables. */
static ts_status stream_text(dis *d, const ts_isa *isa, const ts_stream *s, const ts_symbol *syms,
                             size_t nsyms, const ts_mark *marks, size_t nmarks)
{
    /* name[pc]: the label printed for a branch to pc; gen[pc]: a local label is needed there. */
    const char **name = ts_calloc((size_t)s->n + 1, sizeof *name);
    bool *gen = ts_calloc((size_t)s->n + 1, sizeof *gen);
    if (!name || !gen) {
        ts_free(name);
        ts_free(gen);
        return TS_ENOMEM;
    }
    for (size_t i = 0; i < nsyms; i++)
        if (syms[i].kind == TS_SYM_LABEL && !name[syms[i].value])
            name[syms[i].value] = syms[i].name;
    for (uint32_t pc = 0; pc < s->n; pc++) {
        const ts_opinfo *oi = &isa->ops[s->insn[pc].op];
        for (int j = 0; j < TS_MAX_OPNDS && oi->opnd[j]; j++)
            if ((oi->opnd[j] & TS_OK_KIND_MASK) == TS_OK_LABEL && !name[s->insn[pc].a[j]])
                gen[s->insn[pc].a[j]] = true;
    }
    emit(d, ".stream %s %" PRIu32, isa->stream_kinds[s->kind], s->index);
    size_t ys = 0, ms = 0;
    for (uint32_t pc = 0; pc <= s->n; pc++) {
        for (; ms < nmarks && marks[ms].pc == pc; ms++)
            emit(d, ".superstep %" PRIu32, marks[ms].id);
        /* Sorted by value: anything below pc still unread is a constant. */
        for (; ys < nsyms && syms[ys].value <= pc; ys++)
            if (syms[ys].kind == TS_SYM_LABEL && syms[ys].value == pc)
                emit(d, "%s:", syms[ys].name);
        if (gen[pc])
            emit(d, ".L%" PRIu32 ":", pc);
        if (pc == s->n)
            break;
        const ts_insn *in = &s->insn[pc];
        const ts_opinfo *oi = &isa->ops[in->op];
        sync_line(d, in->line);
        ts_buf_printf(d->out, "    %s", oi->mnemonic);
        for (int j = 0; j < TS_MAX_OPNDS && oi->opnd[j]; j++) {
            ts_buf_puts(d->out, j ? ", " : " ");
            int32_t a = in->a[j];
            switch (oi->opnd[j] & TS_OK_KIND_MASK) {
            case TS_OK_REG: ts_buf_puts(d->out, isa->regs[a]); break;
            case TS_OK_FIMM: put_float(d->out, (uint32_t)a); break;
            case TS_OK_LABEL:
                if (name[a])
                    ts_buf_puts(d->out, name[a]);
                else
                    ts_buf_printf(d->out, ".L%" PRId32, a);
                break;
            default: ts_buf_printf(d->out, "%" PRId32, a); break;
            }
        }
        emit(d, "%s", "");
    }
    ts_free(name);
    ts_free(gen);
    return TS_OK;
}

ts_status ts_disasm(const ts_program *p, const ts_isa *isa, ts_buf *out, ts_err *err)
{
    ts_status st = check(p, isa, err);
    if (st)
        return st;
    /* Canonical order on a copy of the tables; the pointed-to data is shared, not copied. */
    ts_program c = *p;
    c.streams = p->nstreams ? ts_malloc(p->nstreams * sizeof *c.streams) : NULL;
    c.segs = p->nsegs ? ts_malloc(p->nsegs * sizeof *c.segs) : NULL;
    c.syms = p->nsyms ? ts_malloc(p->nsyms * sizeof *c.syms) : NULL;
    c.marks = p->nmarks ? ts_malloc(p->nmarks * sizeof *c.marks) : NULL;
    if ((p->nstreams && !c.streams) || (p->nsegs && !c.segs) || (p->nsyms && !c.syms) ||
        (p->nmarks && !c.marks)) {
        st = TS_ENOMEM;
        goto done;
    }
    if (p->nstreams)
        memcpy(c.streams, p->streams, p->nstreams * sizeof *c.streams);
    if (p->nsegs)
        memcpy(c.segs, p->segs, p->nsegs * sizeof *c.segs);
    if (p->nsyms)
        memcpy(c.syms, p->syms, p->nsyms * sizeof *c.syms);
    if (p->nmarks)
        memcpy(c.marks, p->marks, p->nmarks * sizeof *c.marks);
    ts_program_canonicalize(&c);

    dis d = {.out = out, .next = 1};
    emit(&d, ".arch %s", c.arch);
    if (c.config_fp)
        emit(&d, ".config 0x%016" PRIx64, c.config_fp);
    if (c.workload) {
        ts_buf_puts(out, ".workload ");
        put_string(out, c.workload);
        emit(&d, "%s", "");
    }
    for (size_t i = 0; i < c.nsyms; i++)
        if (c.syms[i].kind == TS_SYM_CONST)
            emit(&d, ".equ %s, %" PRId64, c.syms[i].name, c.syms[i].value);
    size_t ys = 0, ms = 0;
    for (size_t i = 0; i < c.nstreams && !st; i++) {
        /* Constants sort with stream 0's labels; stream_text skips them. */
        size_t y0 = ys, m0 = ms;
        while (ys < c.nsyms && c.syms[ys].stream == i)
            ys++;
        while (ms < c.nmarks && c.marks[ms].stream == i)
            ms++;
        ts_stream one; /* a packed stream unpacked for the text, one at a time */
        st = unpacked(&c.streams[i], &one, err);
        if (!st)
            st = stream_text(&d, isa, &one, c.syms ? c.syms + y0 : NULL, ys - y0, c.marks ? c.marks + m0 : NULL,
                             ms - m0);
        if (c.streams[i].packed)
            ts_free(one.insn);
    }
    for (size_t i = 0; i < c.nsegs && !st; i++) {
        const ts_segment *g = &c.segs[i];
        emit(&d, ".data %s %" PRIu32 " 0x%" PRIx64, isa->stream_kinds[g->kind], g->index, g->addr);
        for (uint32_t k = 0; k < g->len; k += 16) {
            ts_buf_puts(out, "    .byte ");
            for (uint32_t j = k; j < g->len && j < k + 16; j++)
                ts_buf_printf(out, j > k ? ", 0x%02x" : "0x%02x", g->bytes[j]);
            emit(&d, "%s", "");
        }
    }
    if (!st && out->oom)
        st = TS_ENOMEM;
done:
    if (st == TS_ENOMEM)
        ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_free(c.streams);
    ts_free(c.segs);
    ts_free(c.syms);
    ts_free(c.marks);
    return st;
}
