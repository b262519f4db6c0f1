/* tests/test_asm.c — the assembler and disassembler, over the toy ISA. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/limit.h"
#include "core/program.h"
#include "tests/toy/toy_isa.h"

static const ts_isa *isa = &ts_toy_isa;

static ts_program *asm_ok(const char *src)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    ts_status st = ts_asm(&p, "t.s", src, strlen(src), isa, &err);
    char msg[1400];
    ts_err_format(&err, msg, sizeof msg);
    ck_assert_msg(st == TS_OK, "assembly failed: %s", msg);
    ck_assert_ptr_nonnull(p);
    ts_err_free(&err);
    return p;
}

/* Assemble src, which must fail, and compare the formatted error. */
static void asm_err(const char *src, const char *want)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = (ts_program *)1;
    ts_status st = ts_asm(&p, "t.s", src, strlen(src), isa, &err);
    ck_assert_int_eq(st, TS_EINPUT);
    ck_assert_ptr_null(p);
    char msg[1400];
    ts_err_format(&err, msg, sizeof msg);
    ck_assert_str_eq(msg, want);
    ts_err_free(&err);
}

static void encode(const ts_program *p, ts_buf *b)
{
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_program_encode(p, b, &err), TS_OK);
}

static void disasm(const ts_program *p, ts_buf *b)
{
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_disasm(p, isa, b, &err), TS_OK);
}

/* encode(asm(disasm(P))) == encode(P) and disasm(asm(disasm(P))) == disasm(P); and the binary
 * decodes back to the same bytes. Returns the disassembly of P (caller frees). */
static char *check_roundtrip(const ts_program *p)
{
    ts_buf b1 = TS_BUF_INIT, t1 = TS_BUF_INIT, b2 = TS_BUF_INIT, t2 = TS_BUF_INIT, b3 = TS_BUF_INIT;
    encode(p, &b1);
    disasm(p, &t1);
    ts_program *q = asm_ok(ts_buf_str(&t1));
    encode(q, &b2);
    disasm(q, &t2);
    ck_assert_uint_eq(b1.len, b2.len);
    ck_assert_msg(!memcmp(b1.data, b2.data, b1.len), "binary differs after asm(disasm(P)):\n%s",
                  ts_buf_str(&t1));
    ck_assert_str_eq(ts_buf_str(&t1), ts_buf_str(&t2));
    ts_err err;
    ts_err_init(&err);
    ts_program *r = NULL;
    ck_assert_int_eq(ts_program_decode(&r, "rt.bin", b1.data, b1.len, isa, &err), TS_OK);
    encode(r, &b3);
    ck_assert_uint_eq(b1.len, b3.len);
    ck_assert(!memcmp(b1.data, b3.data, b1.len));
    char *text = ts_strdup(ts_buf_str(&t1));
    ts_program_destroy(q);
    ts_program_destroy(r);
    ts_buf_free(&b1);
    ts_buf_free(&b2);
    ts_buf_free(&b3);
    ts_buf_free(&t1);
    ts_buf_free(&t2);
    return text;
}

static void roundtrip_src(const char *src)
{
    ts_program *p = asm_ok(src);
    ts_free(check_roundtrip(p));
    ts_program_destroy(p);
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- directives and instructions --------------------------------------------------------- */

START_TEST(test_instructions)
{
    ts_program *p = asm_ok("# a comment\n"
                           ".stream tile 2   ; another\n"
                           "  LI r1, 0x10\n"
                           "start: Add r2, r1, r1\n"
                           "  addi r3, r2, -7\n"
                           "  ld r4, r3, 8\n"
                           "  st r4, r3, -2147483648\n"
                           "  send r4, 1\n"
                           "  recv r5\n"
                           "  bnz r5, start\n"
                           "  br done\n"
                           "  wait 3\n"
                           "done: sync\n"
                           "  halt\n");
    ck_assert_uint_eq(p->nstreams, 1);
    const ts_stream *s = &p->streams[0];
    ck_assert_uint_eq(s->kind, TOY_KIND_TILE);
    ck_assert_uint_eq(s->index, 2);
    ck_assert_uint_eq(s->n, 12);
    ck_assert_uint_eq(s->insn[0].op, TOY_OP_LI);
    ck_assert_int_eq(s->insn[0].a[0], 1);
    ck_assert_int_eq(s->insn[0].a[1], 16);
    ck_assert_uint_eq(s->insn[0].line, 3);
    ck_assert_uint_eq(s->insn[1].op, TOY_OP_ADD);
    ck_assert_int_eq(s->insn[2].a[2], -7);
    ck_assert_int_eq(s->insn[4].a[2], INT32_MIN);
    ck_assert_uint_eq(s->insn[7].op, TOY_OP_BNZ);
    ck_assert_int_eq(s->insn[7].a[1], 1); /* start: backward */
    ck_assert_int_eq(s->insn[8].a[0], 10); /* done: forward */
    ck_assert_int_eq(s->insn[9].a[0], 3);
    ck_assert_uint_eq(s->insn[11].op, TOY_OP_HALT);
    ck_assert_uint_eq(s->insn[11].line, 14);
    ck_assert_uint_eq(p->nsyms, 2);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_header_directives)
{
    ts_program *p = asm_ok(".arch toy\n"
                           ".config 0xFEDCBA9876543210\n"
                           ".workload \"mlp \\\"x\\\"\\t\\\\\\x7f\"\n"
                           ".equ BIG, -9223372036854775808\n"
                           ".equ N, 42\n"
                           ".equ M, N\n"
                           ".stream tile 0\n"
                           "  li r0, M\n");
    ck_assert_str_eq(p->arch, "toy");
    ck_assert(p->config_fp == 0xFEDCBA9876543210ULL);
    ck_assert_str_eq(p->workload, "mlp \"x\"\t\\\x7f");
    ck_assert_uint_eq(p->nsyms, 3);
    int seen = 0;
    for (size_t i = 0; i < p->nsyms; i++) {
        ck_assert_uint_eq(p->syms[i].kind, TS_SYM_CONST);
        if (!strcmp(p->syms[i].name, "BIG"))
            ck_assert(p->syms[i].value == INT64_MIN), seen |= 1;
        if (!strcmp(p->syms[i].name, "M"))
            ck_assert(p->syms[i].value == 42), seen |= 2;
    }
    ck_assert_int_eq(seen, 3);
    ck_assert_int_eq(p->streams[0].insn[0].a[1], 42);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_streams_and_marks)
{
    ts_program *p = asm_ok(".stream tile 5\n"
                           ".superstep 1\n"
                           "  nop\n"
                           "a: nop\n"
                           ".stream tile 1\n"
                           ".superstep 7\n"
                           "a: br a\n"
                           ".stream tile 5\n"
                           ".superstep 2\n"
                           "  br a\n");
    /* Streams are kept sorted: tile 1 then tile 5; the marks followed their stream. */
    ck_assert_uint_eq(p->nstreams, 2);
    ck_assert_uint_eq(p->streams[0].index, 1);
    ck_assert_uint_eq(p->streams[1].index, 5);
    ck_assert_uint_eq(p->streams[1].n, 3);
    ck_assert_int_eq(p->streams[1].insn[2].a[0], 1); /* tile 5's own 'a' */
    ck_assert_int_eq(p->streams[0].insn[0].a[0], 0);
    ck_assert_uint_eq(p->nmarks, 3);
    for (size_t i = 0; i < p->nmarks; i++) {
        const ts_mark *m = &p->marks[i];
        if (m->id == 1)
            ck_assert(m->stream == 1 && m->pc == 0);
        else if (m->id == 7)
            ck_assert(m->stream == 0 && m->pc == 0);
        else
            ck_assert(m->id == 2 && m->stream == 1 && m->pc == 2);
    }
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_data)
{
    ts_program *p = asm_ok(".data tile 3 0x1000\n"
                           "  .byte 1, 0xff, -128\n"
                           "  .half 0x1234, -1\n"
                           "  .word 0xdeadbeef, -2147483648\n"
                           "  .f32 1.5, -0.0, inf\n"
                           "  .f16 0.1, 65504, -2, 5.960464477539063e-08, 1e-10, nan\n"
                           "  .zero 3\n"
                           ".data tile 3 0x2000\n"
                           "  .zero 0\n");
    ck_assert_uint_eq(p->nsegs, 2);
    const ts_segment *g = &p->segs[0];
    ck_assert_uint_eq(g->kind, 0);
    ck_assert_uint_eq(g->index, 3);
    ck_assert(g->addr == 0x1000);
    static const uint8_t want[] = {
        1, 0xff, 0x80,                       /* .byte */
        0x34, 0x12, 0xff, 0xff,              /* .half */
        0xef, 0xbe, 0xad, 0xde, 0, 0, 0, 0x80, /* .word */
        0, 0, 0xc0, 0x3f, 0, 0, 0, 0x80, 0, 0, 0x80, 0x7f, /* .f32 */
        0x66, 0x2e, 0xff, 0x7b, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x00, 0x00, 0x7e, /* .f16 */
        0, 0, 0,                             /* .zero */
    };
    ck_assert_uint_eq(g->len, sizeof want);
    ck_assert_mem_eq(g->bytes, want, sizeof want);
    ck_assert_uint_eq(p->segs[1].len, 0);
    ck_assert(p->segs[1].addr == 0x2000);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_f16_rounding)
{
    /* Ties go to even: 2049 lies halfway between the halves 2048 and 2050 and rounds to 2048
     * (mantissa even); 2051 lies between 2050 and 2052 and rounds to 2052. 65519 is below the
     * rounding boundary of the largest half, 65504. */
    ts_program *p = asm_ok(".data tile 0 0\n .f16 2049, 2051, 65519, 0x1p-25, 0x1.8p-24\n");
    const uint8_t *b = p->segs[0].bytes;
    ck_assert_uint_eq(b[0] | b[1] << 8, 0x6800);
    ck_assert_uint_eq(b[2] | b[3] << 8, 0x6802);
    ck_assert_uint_eq(b[4] | b[5] << 8, 0x7bff);
    ck_assert_uint_eq(b[6] | b[7] << 8, 0x0000); /* half the smallest subnormal: tie to 0 */
    ck_assert_uint_eq(b[8] | b[9] << 8, 0x0002); /* 1.5 subnormal units: tie to 2 */
    ts_program_destroy(p);
    asm_err(".data tile 0 0\n .f16 65520\n",
            "t.s:2:7: .f16 item 65520 is out of range for binary16");
}
END_TEST

START_TEST(test_floats)
{
    ts_program *p = asm_ok(".stream tile 0\n"
                           " fli r0, 0.1\n fli r1, -0.0\n fli r2, 1e-40\n fli r3, -inf\n"
                           " fli r4, NaN\n fli r5, -nan(0x12345)\n fli r6, 0x1.8p1\n fli r7, 3\n");
    const ts_insn *in = p->streams[0].insn;
    ck_assert_uint_eq((uint32_t)in[0].a[1], f2u(0.1f));
    ck_assert_uint_eq((uint32_t)in[1].a[1], 0x80000000u);
    ck_assert_uint_eq((uint32_t)in[2].a[1], f2u(1e-40f));
    ck_assert_uint_eq((uint32_t)in[3].a[1], 0xff800000u);
    ck_assert_uint_eq((uint32_t)in[4].a[1], 0x7fc00000u);
    ck_assert_uint_eq((uint32_t)in[5].a[1], 0xff812345u);
    ck_assert_uint_eq((uint32_t)in[6].a[1], f2u(3.0f));
    ck_assert_uint_eq((uint32_t)in[7].a[1], f2u(3.0f));
    char *text = check_roundtrip(p);
    ck_assert_ptr_nonnull(strstr(text, "fli r0, 0.1\n"));
    ck_assert_ptr_nonnull(strstr(text, "fli r1, -0\n"));
    ck_assert_ptr_nonnull(strstr(text, "fli r2, 1e-40\n"));
    ck_assert_ptr_nonnull(strstr(text, "fli r5, -nan(0x12345)\n"));
    ts_free(text);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_line_directive)
{
    ts_program *p = asm_ok(".stream tile 0\n"
                           "  nop\n"
                           ".line 500\n"
                           "  nop\n"
                           "\n"
                           "  nop\n"
                           ".line 0\n"
                           "  nop\n"
                           "  nop\n"
                           ".line 65535\n"
                           "  nop\n"
                           "  nop\n");
    const ts_insn *in = p->streams[0].insn;
    ck_assert_uint_eq(in[0].line, 2);
    ck_assert_uint_eq(in[1].line, 500);
    ck_assert_uint_eq(in[2].line, 502);
    ck_assert_uint_eq(in[3].line, 0);
    ck_assert_uint_eq(in[4].line, 0);
    ck_assert_uint_eq(in[5].line, 65535);
    ck_assert_uint_eq(in[6].line, 0); /* 65536 mod 65536 */
    ts_free(check_roundtrip(p));
    ts_program_destroy(p);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------ */

START_TEST(test_errors)
{
    asm_err(".stream tile 0\n  addd r1, r2, r3\n",
            "t.s:2:3: unknown mnemonic 'addd' (did you mean 'add'?)");
    asm_err(".stream tile 0\n  frobnicate r1\n", "t.s:2:3: unknown mnemonic 'frobnicate'");
    asm_err(".stream tile 0\nadd r1, r2\n", "t.s:2:1: 'add' takes 3 operands, got 2");
    asm_err(".stream tile 0\nrecv\n", "t.s:2:1: 'recv' takes 1 operand, got 0");
    asm_err(".stream tile 0\nadd r1, 5, r2\n",
            "t.s:2:9: operand 2 of 'add': expected a register, got '5'");
    asm_err(".stream tile 0\nadd r1, x2, r2\n",
            "t.s:2:9: operand 2 of 'add': unknown register 'x2' (did you mean 'r2'?)");
    asm_err(".stream tile 0\nli r1, r2\n",
            "t.s:2:8: operand 2 of 'li': expected an immediate, got 'r2'");
    asm_err(".stream tile 0\nli r1, K\n", "t.s:2:8: operand 2 of 'li': undefined constant 'K'");
    asm_err(".stream tile 0\nfli r1, r2\n",
            "t.s:2:9: operand 2 of 'fli': expected a float, got 'r2'");
    asm_err(".stream tile 0\nfli r1, 1e39\n",
            "t.s:2:9: operand 2 of 'fli' 1e39 is out of range for binary32");
    asm_err(".stream tile 0\nfli r1, 1.5x\n", "t.s:2:9: bad number '1.5x'");
    asm_err(".stream tile 0\nbr 5\n", "t.s:2:4: operand 1 of 'br': expected a label, got '5'");
    asm_err(".stream tile 0\nnop\n  br nowhere\nnop\n", "t.s:3:6: undefined label 'nowhere'");
    asm_err(".stream tile 0\nx: nop\n\n  x: nop\n",
            "t.s:4:3: duplicate label 'x', first defined at 2:1");
    asm_err(".stream tile 0\nbr end\nend:\n",
            "t.s:2:4: label 'end' is at the end of the stream, after the last instruction");
    asm_err(".stream tile 0\nli r1, 2147483648\n",
            "t.s:2:8: operand 2 of 'li': immediate 2147483648 is out of range "
            "(-2147483648..2147483647)");
    asm_err(".stream tile 0\nli r1, -0x80000001\n",
            "t.s:2:8: operand 2 of 'li': immediate -0x80000001 is out of range "
            "(-2147483648..2147483647)");
    asm_err(".equ BIG, 0x100000000\n.stream tile 0\nli r1, BIG\n",
            "t.s:3:8: operand 2 of 'li': constant 'BIG' = 4294967296 is out of range "
            "(-2147483648..2147483647)");
    asm_err(".strem tile 0\n", "t.s:1:1: unknown directive '.strem' (did you mean '.stream'?)");
    asm_err("\n  nop\n", "t.s:2:3: instruction before any .stream directive");
    asm_err(".data tile 0 0\n nop\n",
            "t.s:2:2: instruction inside a .data segment (start a .stream first)");
    asm_err(".stream tile 0\nli r1, 12x\n", "t.s:2:8: bad number '12x'");
    asm_err(".stream tile 0\nli r1, 0x\n", "t.s:2:8: bad number '0x'");
    asm_err(".data tile 0 0\n .byte 1, 256\n", "t.s:2:11: .byte item 256 is out of range (-128..255)");
    asm_err(".data tile 0 0\n .half -32769\n",
            "t.s:2:8: .half item -32769 is out of range (-32768..65535)");
    asm_err(".data tile 0 0\n .word 0x100000000\n",
            "t.s:2:8: .word item 0x100000000 is out of range (-2147483648..4294967295)");
    asm_err(".data tile 0 0\n .byte 1 2\n", "t.s:2:10: expected ',' before '2'");
    asm_err(".data tile 0 0\n .byte 1,\n", "t.s:2:9: expected a value after ','");
    asm_err(".stream tile 0\n .byte 1\n", "t.s:2:2: '.byte' outside a .data segment");
    asm_err(".arch ipu\n", "t.s:1:7: '.arch ipu' does not match this assembler's arch 'toy'");
    asm_err(".stream tyle 0\n", "t.s:1:9: unknown stream kind 'tyle' (did you mean 'tile'?)");
    asm_err(".stream tile -1\n", "t.s:1:14: index -1 is out of range (0..4294967295)");
    asm_err(".stream tile\n", "t.s:1:1: '.stream' takes 2 arguments (KIND INDEX), got 1");
    asm_err(".superstep 1\n", "t.s:1:1: '.superstep' before any .stream directive");
    asm_err(".workload \"abc\n", "t.s:1:11: unterminated string");
    asm_err(".workload \"a\\qb\"\n", "t.s:1:13: unknown escape '\\q' in string");
    asm_err(".workload \"a\\x00\"\n", "t.s:1:13: a string cannot hold a NUL byte");
    asm_err(".workload abc\n", "t.s:1:11: expected a string in double quotes, got 'abc'");
    asm_err(".equ 1x, 2\n", "t.s:1:6: bad constant name '1x'");
    asm_err(".equ A, 1\n.equ A, 2\n", "t.s:2:6: duplicate constant 'A', first defined at 1:6");
    asm_err(".config -1\n", "t.s:1:9: bad number '-1'");
    asm_err(".line 65536\n", "t.s:1:7: line 65536 is out of range (0..65535)");
    asm_err(".stream tile 0\nadd r1 r2, r3\n", "t.s:2:8: expected ',' before 'r2'");
    asm_err(".stream tile 0\nadd r1,, r3\n", "t.s:2:8: operand 2 of 'add' is missing");
    asm_err(".stream tile 0\nnop\x01\n", "t.s:2:4: unexpected character 0x01");
    asm_err(".stream tile 0\n1abc: nop\n", "t.s:2:1: bad label name '1abc'");
    asm_err("a: nop\n", "t.s:1:1: label 'a' before any .stream directive");
    asm_err(".data tile 0 0x10\n .byte 1, 2\n.data tile 0 0x11\n .byte 3\n",
            "t.s:3:1: data segment overlaps the one at line 1");
    asm_err(".data tile 0 0xffffffffffffffff\n .byte 1, 2\n",
            "t.s:1:1: data segment at 0xffffffffffffffff of 2 bytes runs past the end of the "
            "64-bit address space");
    asm_err(".data tile 0 0\n .zero 67108865\n",
            "t.s:2:8: .zero 67108865 would pass the data segment limit of 67108864 bytes (raise it with "
            "TESSERA_LIMITS=data_bytes=N)");
}
END_TEST

/* ---- round trips ------------------------------------------------------------------------- */

START_TEST(test_roundtrip_programs)
{
    roundtrip_src("");
    roundtrip_src(".stream tile 0\n");
    roundtrip_src(".workload \"\"\n.config 0\n");
    roundtrip_src(".arch toy\n.config 0x0123456789abcdef\n.workload \"a \\\"b\\\" \\x01\\xff #;\"\n"
                  ".equ ONE, 1\n.equ NEG, -5\n.equ Z, 0\n"
                  ".stream tile 3\n"
                  ".superstep 0\n"
                  "top: li r1, ONE\n"
                  "     fli r2, 0.1\n     fli r3, -0.0\n     fli r4, 1e-40\n"
                  "     fli r5, 3.4028235e38\n     fli r6, -nan(0x7fffff)\n"
                  "loop: addi r1, r1, NEG\n"
                  "     bnz r1, loop\n"
                  "     br fwd\n"
                  "     nop\n"
                  "fwd: sync\n"
                  ".superstep 1\n"
                  ".superstep 1\n"
                  "     br .Llocal\n"
                  ".Llocal: halt\n"
                  "tail:\n"
                  ".stream tile 0\n"
                  "top: send r0, 3\n"
                  "     bnz r0, top\n"
                  ".superstep 9\n"
                  ".data tile 3 0x40\n .word 1, 2, 3, 4, 5, 6, 7, 8, 9\n"
                  ".data tile 0 0x0\n .f32 0.1, -0.0\n .zero 17\n"
                  ".data tile 0 0x100\n");
    roundtrip_src(".stream tile 1\n.line 0\n nop\n nop\n.line 9\n nop\n\n nop\n"
                  ".stream tile 0\n nop\n.line 65535\n nop\n nop\n nop\n.line 0\n nop\n");
}
END_TEST

START_TEST(test_roundtrip_built)
{
    /* A program as a lowering builds it: streams out of order, no line numbers, labels only
     * where the lowering named them. */
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    ck_assert_ptr_nonnull(p);
    p->workload = ts_strdup("built");
    for (uint32_t t = 4; t-- > 0;) {
        ts_stream *s = ts_program_stream(p, TOY_KIND_TILE, t * 7);
        ck_assert_ptr_nonnull(s);
        ts_insn *in = ts_stream_emit(s, TOY_OP_LI);
        in->a[0] = 1;
        in->a[1] = (int32_t)t;
        in = ts_stream_emit(s, TOY_OP_ADDI);
        in->a[0] = 1;
        in->a[1] = 1;
        in->a[2] = -1;
        in = ts_stream_emit(s, TOY_OP_BNZ);
        in->a[0] = 1;
        in->a[1] = 1;
        in = ts_stream_emit(s, TOY_OP_BR);
        in->a[0] = 4;
        ts_stream_emit(s, TOY_OP_HALT);
        size_t si = (size_t)(s - p->streams);
        ck_assert_int_eq(ts_program_add_mark(p, (uint32_t)si, 0, t, &err), TS_OK);
        if (t % 2)
            ck_assert_int_eq(ts_program_add_symbol(p, "spin", TS_SYM_LABEL, (uint32_t)si, 1, &err),
                             TS_OK);
    }
    ck_assert_int_eq(ts_program_add_symbol(p, "W", TS_SYM_CONST, 0, 1LL << 40, &err), TS_OK);
    uint8_t bytes[40];
    for (int i = 0; i < 40; i++)
        bytes[i] = (uint8_t)(i * 37);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 21, 0x800, bytes, 40, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 0, 0x0, bytes, 3, &err), TS_OK);
    char *text = check_roundtrip(p);
    /* Named where the lowering named it, generated local labels elsewhere; one ".line 0" for
     * the whole program. */
    ck_assert_ptr_nonnull(strstr(text, ".stream tile 7\n.superstep 1\n    li r1, 1\n"
                                       "spin:\n    addi r1, r1, -1\n    bnz r1, spin\n"
                                       "    br .L4\n.L4:\n    halt\n"));
    ck_assert_ptr_nonnull(strstr(text, ".stream tile 0\n.superstep 0\n.line 0\n    li r1, 0\n"
                                       ".L1:\n    addi r1, r1, -1\n    bnz r1, .L1\n"));
    ck_assert_ptr_nonnull(strstr(text, ".equ W, 1099511627776\n"));
    ck_assert_ptr_nonnull(strstr(text, ".data tile 21 0x800\n    .byte 0x00, 0x25, 0x4a,"));
    ts_free(text);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_disasm_text)
{
    ts_program *p = asm_ok(".stream tile 0\nloop: add r1, r2, r3\n  bnz r1, loop\n");
    ts_buf b = TS_BUF_INIT;
    disasm(p, &b);
    ck_assert_str_eq(ts_buf_str(&b), ".arch toy\n"
                                     ".stream tile 0\n"
                                     "loop:\n"
                                     ".line 2\n"
                                     "    add r1, r2, r3\n"
                                     "    bnz r1, loop\n");
    ts_buf_free(&b);
    /* An invalid program is refused, not printed. */
    p->streams[0].insn[0].a[1] = 8;
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_disasm(p, isa, &b, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "cannot disassemble stream tile 0, pc 0: bad register 8");
    ts_buf_free(&b);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_ranges)
{
    /* One body for tiles 2..4, with a label and a mark; tile 0 alone; data to tiles 0..3. */
    ts_program *p = asm_ok(".stream tile 2-4\n"
                           ".superstep 1\n"
                           "top: li r1, 5\n"
                           "  bnz r1, top\n"
                           ".stream tile 0\n"
                           "  halt\n"
                           ".data tile 0-3 0x10\n"
                           "  .word 7\n");
    ck_assert_uint_eq(p->nstreams, 4);
    for (size_t i = 1; i < 4; i++) {
        ck_assert_uint_eq(p->streams[i].index, i + 1);
        ck_assert_uint_eq(p->streams[i].n, 2);
        ck_assert_int_eq(p->streams[i].insn[0].a[1], 5);
        ck_assert_int_eq(p->streams[i].insn[1].a[1], 0);
    }
    ck_assert_uint_eq(p->nsyms, 3);
    for (size_t i = 0; i < p->nsyms; i++) {
        ck_assert_str_eq(p->syms[i].name, "top");
        ck_assert_uint_eq(p->streams[p->syms[i].stream].index, i + 2);
    }
    ck_assert_uint_eq(p->nmarks, 3);
    ck_assert_uint_eq(p->nsegs, 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert(p->segs[i].index == i && p->segs[i].addr == 0x10 && p->segs[i].len == 4);
    /* The disassembly spells every stream out, and reassembles to the same bytes. */
    char *text = check_roundtrip(p);
    ck_assert_ptr_nonnull(strstr(text, ".stream tile 4\n"));
    ts_free(text);
    ts_program_destroy(p);

    asm_err(".stream tile 4-2\n nop\n", "t.s:1:14: range '4-2' ends before it starts");
    asm_err(".stream tile 0-3\n nop\n.stream tile 2\n halt\n",
            "t.s:1:14: stream tile 2 has its own code and is also in the range 0-3");
    asm_err(".stream tile 0-x\n nop\n", "t.s:1:16: bad number 'x'");
    /* a stream of a range with a label or a mark of its own but no code: the copy gave it a
     * second label '_', a program the binary reader refuses (found by fuzz_asm) */
    asm_err(".stream tile 1-2\n_: nop\n.stream tile 2\n_:\n",
            "t.s:1:14: stream tile 2 has its own labels or marks and is also in the range 1-2");
    asm_err(".stream tile 1-2\n_: nop\n.stream tile 2\n.superstep 3\n",
            "t.s:1:14: stream tile 2 has its own labels or marks and is also in the range 1-2");
    /* overlapping ranges: the second took the first's label again (found by fuzz_asm) */
    asm_err(".stream tile 0-4\n_:\n.stream tile 1-4\n", "t.s:3:14: range 1-4 overlaps the range 0-4 at line 1");
    asm_err(".stream tile 2-3\n nop\n.stream tile 0-2\n nop\n", "t.s:3:14: range 0-2 overlaps the range 2-3 at line 1");
}
END_TEST

/* Ranges and data are bounded by the limits of core/limit.h before anything is expanded: a range
 * over 2^31 tiles, or 64 MiB of zeros for each of 65,536 tiles, is an error at once, in little
 * memory and time, not terabytes asked of the host. */
START_TEST(test_limits)
{
    asm_err(".stream tile 0-2147483647\n nop\n",
            "t.s:1:14: range '0-2147483647' has 2147483648 units, more than the limit of 1048576 (raise it with "
            "TESSERA_LIMITS=range_units=N)");
    asm_err(".data tile 0-65535 0\n .zero 67108864\n",
            "t.s:1:1: the program would pass the limit of 1073741824 bytes of instructions and data, ranges "
            "expanded (raise it with TESSERA_LIMITS=program_bytes=N)");
    asm_err(".stream tile 0-1048575\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n"
            " nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n"
            " nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n",
            "t.s:1:14: the program would pass the limit of 1073741824 bytes of instructions and data, ranges "
            "expanded (raise it with TESSERA_LIMITS=program_bytes=N)");
    /* Lowered, the same limits refuse smaller programs; raised, they let them through. */
    ts_limit_set(TS_LIMIT_DATA_BYTES, 16);
    asm_err(".data tile 0 0\n .word 1, 2, 3, 4\n .byte 5\n",
            "t.s:3:8: the data segment would pass the limit of 16 bytes (raise it with "
            "TESSERA_LIMITS=data_bytes=N)");
    ts_limit_set(TS_LIMIT_RANGE_UNITS, 4);
    asm_err(".stream tile 0-4\n nop\n",
            "t.s:1:14: range '0-4' has 5 units, more than the limit of 4 (raise it with "
            "TESSERA_LIMITS=range_units=N)");
    ts_limit_set(TS_LIMIT_PROGRAM_BYTES, sizeof(ts_stream) + 3 * sizeof(ts_insn)); /* 40 + 3 x 32 */
    asm_err(".stream tile 0\n nop\n nop\n nop\n nop\n",
            "t.s:5:2: the program would pass the limit of 136 bytes of instructions and data, ranges "
            "expanded (raise it with TESSERA_LIMITS=program_bytes=N)");
    ts_limits_reset();
    /* A range with labels and marks over many units costs its units times its body: 65,536
     * copies of a labelled two-instruction loop assemble (quadratic before: every copy scanned
     * every symbol added so far). */
    ts_program *p = asm_ok(".stream tile 0-65535\n.superstep 1\ntop: li r1, 5\n  bnz r1, top\n");
    ck_assert_uint_eq(p->nstreams, 65536);
    ck_assert_uint_eq(p->nsyms, 65536);
    ck_assert_uint_eq(p->nmarks, 65536);
    ck_assert_uint_eq(p->streams[65535].index, 65535);
    ck_assert_uint_eq(p->streams[p->syms[65535].stream].index, p->syms[65535].stream);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_asm_oom)
{
    const char *src = ".workload \"w\"\n.equ A, 1\n.stream tile 1\nx: li r1, A\n br x\n"
                      ".superstep 1\n.stream tile 0\n nop\n.data tile 0 0\n .byte 1, 2\n";
    int ok = 0;
    for (long n = 1; n < 200 && !ok; n++) {
        ts_err err;
        ts_err_init(&err);
        ts_program *p = NULL;
        ts_alloc_fail_after(n);
        ts_status st = ts_asm(&p, "t.s", src, strlen(src), isa, &err);
        long failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (st == TS_OK) {
            ck_assert_int_eq(failed, 0);
            ok = 1;
            /* and the disassembler too */
            for (long k = 1; k < 50; k++) {
                ts_buf b = TS_BUF_INIT;
                ts_alloc_fail_after(k);
                ts_status ds = ts_disasm(p, isa, &b, &err);
                long f2 = ts_alloc_failures();
                ts_alloc_fail_after(0);
                ck_assert_int_eq(ds, f2 ? TS_ENOMEM : TS_OK);
                ts_buf_free(&b);
                if (!f2)
                    break;
            }
            ts_program_destroy(p);
        } else {
            ck_assert_int_eq(st, TS_ENOMEM);
            ck_assert_int_eq(failed, 1);
            ck_assert_ptr_null(p);
            ck_assert_str_eq(err.msg, "out of memory");
        }
    }
    ck_assert(ok);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("asm");
    TCase *tc = tcase_create("asm");
    tcase_add_test(tc, test_instructions);
    tcase_add_test(tc, test_header_directives);
    tcase_add_test(tc, test_streams_and_marks);
    tcase_add_test(tc, test_data);
    tcase_add_test(tc, test_f16_rounding);
    tcase_add_test(tc, test_floats);
    tcase_add_test(tc, test_line_directive);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_roundtrip_programs);
    tcase_add_test(tc, test_roundtrip_built);
    tcase_add_test(tc, test_disasm_text);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_asm_oom);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
