/* tests/test_program.c — the program container: builders, canonical order, the binary format
 * and every check of its reader, over the toy ISA. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/program.h"
#include "tests/toy/toy_isa.h"

static const ts_isa *isa = &ts_toy_isa;

/* The reference program, and where its parts land in the file (docs/program-format.md):
 *   header 0..80, stream table 80..96, instructions 96..107 packed (li 1a 02 02 0a, add 23 04 02
 *   02, bnz a1 01 04) and padding to 112, segment table 112..136, segment bytes 136..144 (3 bytes
 *   + 5 padding), symbols 144..192 (top, K), mark 192..204 and padding to 208, string table
 *   "w\0top\0K\0" 208..216. */
enum { OFF_STREAMS = 80, OFF_INSN = 96, OFF_SEGTAB = 112, OFF_SEGBYTES = 136, OFF_SYMS = 144,
       OFF_MARKS = 192, OFF_STRTAB = 208, FILE_LEN = 216 };

static ts_program *build(void)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    ck_assert_ptr_nonnull(p);
    p->config_fp = 0x0123456789abcdefULL;
    p->workload = ts_strdup("w");
    ts_stream *s = ts_program_stream(p, TOY_KIND_TILE, 0);
    ts_insn *in = ts_stream_emit(s, TOY_OP_LI);
    in->a[0] = 1;
    in->a[1] = 5;
    in->line = 2;
    in = ts_stream_emit(s, TOY_OP_ADD);
    in->a[0] = 2;
    in->a[1] = 1;
    in->a[2] = 1;
    in = ts_stream_emit(s, TOY_OP_BNZ);
    in->a[0] = 2;
    in->a[1] = 0;
    ck_assert_int_eq(ts_program_add_segment(p, TOY_KIND_TILE, 0, 0x100, "abc", 3, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_symbol(p, "K", TS_SYM_CONST, 0, 7, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_symbol(p, "top", TS_SYM_LABEL, 0, 0, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_mark(p, 0, 1, 4, &err), TS_OK);
    return p;
}

static void encode(const ts_program *p, ts_buf *b)
{
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_program_encode(p, b, &err), TS_OK);
}

static unsigned char *reference(size_t *len)
{
    ts_program *p = build();
    ts_buf b = TS_BUF_INIT;
    encode(p, &b);
    ts_program_destroy(p);
    *len = b.len;
    return (unsigned char *)b.data;
}

static void put32(unsigned char *d, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        d[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *d)
{
    return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
}

/* Recompute the checksum after patching, so the check under test is the one that fires. */
static void fix_crc(unsigned char *d, size_t len)
{
    uint32_t crc = (uint32_t)crc32_z(crc32_z(0, d, 72), d + 76, len - 76);
    put32(d + 72, crc);
}

static void decode_err(const unsigned char *d, size_t len, const char *want)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = (ts_program *)1;
    ck_assert_int_eq(ts_program_decode(&p, "prog.bin", d, len, isa, &err), TS_EINPUT);
    ck_assert_ptr_null(p);
    char msg[1400];
    ts_err_format(&err, msg, sizeof msg);
    ck_assert_str_eq(msg, want);
}

/* Patch a u32 at off in a fresh copy of the reference, fix the CRC, expect an error. */
static void patch_err(size_t off, uint32_t v, int crc, const char *want)
{
    size_t len;
    unsigned char *d = reference(&len);
    put32(d + off, v);
    if (crc)
        fix_crc(d, len);
    decode_err(d, len, want);
    ts_free(d);
}

/* Overwrite n bytes at off in a fresh copy of the reference, with packed_len as the stream's
 * packed size (0: unchanged), fix the CRC, expect an error. */
static void bytes_err(size_t off, const char *bytes, size_t n, uint32_t packed_len, const char *want)
{
    size_t len;
    unsigned char *d = reference(&len);
    memcpy(d + off, bytes, n);
    if (packed_len)
        put32(d + OFF_STREAMS + 12, packed_len);
    fix_crc(d, len);
    decode_err(d, len, want);
    ts_free(d);
}

/* ---- builders ---------------------------------------------------------------------------- */

START_TEST(test_create_destroy)
{
    ts_program_destroy(NULL);
    ts_program *p = ts_program_create("a-very-long-architecture-name");
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(p->arch, "a-very-long-arc"); /* 15 characters and the NUL */
    ck_assert_uint_eq(p->nstreams, 0);
    ck_assert_ptr_null(p->workload);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_streams_sorted)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    ts_stream *s = ts_program_stream(p, 0, 10);
    ts_stream_emit(s, TOY_OP_NOP);
    ck_assert_int_eq(ts_program_add_symbol(p, "ten", TS_SYM_LABEL, 0, 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_mark(p, 0, 1, 3, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_symbol(p, "C", TS_SYM_CONST, 0, -3, &err), TS_OK);
    /* A stream before tile 10 moves it up; the label and mark follow it, the constant stays. */
    ck_assert_ptr_nonnull(ts_program_stream(p, 0, 2));
    ck_assert_ptr_nonnull(ts_program_stream(p, 1, 0));
    ck_assert_ptr_nonnull(ts_program_stream(p, 0, 30));
    ck_assert_uint_eq(p->nstreams, 4);
    ck_assert_uint_eq(p->streams[0].index, 2);
    ck_assert_uint_eq(p->streams[1].index, 10);
    ck_assert_uint_eq(p->streams[2].index, 30);
    ck_assert_uint_eq(p->streams[3].kind, 1);
    ck_assert_uint_eq(p->syms[0].stream, 1);
    ck_assert_uint_eq(p->marks[0].stream, 1);
    ck_assert_uint_eq(p->syms[1].stream, 0);
    /* Finding returns the same stream, not a new one. */
    ck_assert_ptr_eq(ts_program_stream(p, 0, 10), &p->streams[1]);
    ck_assert_uint_eq(p->nstreams, 4);
    ck_assert_uint_eq(p->streams[1].n, 1);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_builder_errors)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    ts_program_stream(p, 0, 0);
    ck_assert_int_eq(ts_program_add_symbol(p, "1x", TS_SYM_LABEL, 0, 0, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "symbol name '1x' is not an identifier");
    ck_assert_int_eq(ts_program_add_symbol(p, ".Lx", TS_SYM_LABEL, 0, 0, &err), TS_EINPUT);
    ck_assert_int_eq(ts_program_add_symbol(p, "x", TS_SYM_LABEL, 1, 0, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "label 'x': stream 1 does not exist");
    ck_assert_int_eq(ts_program_add_symbol(p, "x", TS_SYM_LABEL, 0, -1, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "label 'x': pc -1 is out of range");
    ck_assert_int_eq(ts_program_add_symbol(p, "x", TS_SYM_CONST, 3, 0, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "constant 'x': stream must be 0, not 3");
    ck_assert_int_eq(ts_program_add_symbol(p, "x", 9, 0, 0, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "symbol 'x': kind 9 is neither label nor constant");
    ck_assert_int_eq(ts_program_add_mark(p, 1, 0, 0, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "superstep mark: stream 1 does not exist");
    ck_assert_int_eq(ts_program_add_segment(p, 0, 0, UINT64_MAX, "ab", 2, &err), TS_EINPUT);
    ck_assert_uint_eq(p->nsyms, 0);
    ck_assert_uint_eq(p->nmarks, 0);
    ck_assert_uint_eq(p->nsegs, 0);
    /* A label past the end of its stream is refused by the writer. */
    ck_assert_int_eq(ts_program_add_symbol(p, "x", TS_SYM_LABEL, 0, 5, &err), TS_OK);
    ts_buf b = TS_BUF_INIT;
    ck_assert_int_eq(ts_program_encode(p, &b, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "cannot encode: label 'x' is at pc 5, outside its stream of 0 "
                              "instructions");
    ck_assert_uint_eq(b.len, 0);
    ts_buf_free(&b);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_canonicalize_by_hand)
{
    /* Streams reordered by hand: canonicalize sorts them back and renumbers labels and marks. */
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    for (uint32_t i = 0; i < 5; i++) {
        ts_stream *s = ts_program_stream(p, 0, i);
        for (uint32_t k = 0; k <= i; k++)
            ts_stream_emit(s, TOY_OP_NOP);
    }
    for (uint32_t i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof name, "s%u", i);
        ck_assert_int_eq(ts_program_add_symbol(p, name, TS_SYM_LABEL, i, i, &err), TS_OK);
        ck_assert_int_eq(ts_program_add_mark(p, i, i, 100 + i, &err), TS_OK);
    }
    /* permutation: new order 3, 0, 4, 1, 2 */
    ts_stream tmp[5];
    memcpy(tmp, p->streams, sizeof tmp);
    static const uint32_t order[5] = {3, 0, 4, 1, 2};
    for (int i = 0; i < 5; i++)
        p->streams[i] = tmp[order[i]];
    for (size_t i = 0; i < p->nsyms; i++) { /* renumber to the shuffled positions */
        for (uint32_t k = 0; k < 5; k++)
            if (order[k] == p->syms[i].stream) {
                p->syms[i].stream = k;
                break;
            }
    }
    for (size_t i = 0; i < p->nmarks; i++)
        for (uint32_t k = 0; k < 5; k++)
            if (order[k] == p->marks[i].stream) {
                p->marks[i].stream = k;
                break;
            }
    ts_program_canonicalize(p);
    for (uint32_t i = 0; i < 5; i++) {
        ck_assert_uint_eq(p->streams[i].index, i);
        ck_assert_uint_eq(p->streams[i].n, i + 1);
        ck_assert_uint_eq(p->syms[i].stream, i);
        ck_assert_int_eq((int)p->syms[i].value, (int)i);
        ck_assert_uint_eq(p->marks[i].stream, i);
        ck_assert_uint_eq(p->marks[i].id, 100 + i);
    }
    /* the streams can still grow */
    ck_assert_ptr_nonnull(ts_stream_emit(&p->streams[4], TOY_OP_HALT));
    ck_assert_uint_eq(p->streams[4].n, 6);
    ts_program_destroy(p);
}
END_TEST

/* ---- encoding ---------------------------------------------------------------------------- */

START_TEST(test_layout)
{
    size_t len;
    unsigned char *d = reference(&len);
    ck_assert_uint_eq(len, FILE_LEN);
    ck_assert_mem_eq(d, "TSPROG\0\1", 8);
    ck_assert_uint_eq(get32(d + 8), TS_PROGRAM_VERSION);
    ck_assert_uint_eq(get32(d + 12), 80);
    ck_assert_str_eq((const char *)d + 16, "toy");
    ck_assert_uint_eq(get32(d + 32), 0x89abcdef);
    ck_assert_uint_eq(get32(d + 36), 0x01234567);
    ck_assert_uint_eq(get32(d + 40), 1); /* streams */
    ck_assert_uint_eq(get32(d + 44), 1); /* segments */
    ck_assert_uint_eq(get32(d + 48), 2); /* symbols */
    ck_assert_uint_eq(get32(d + 52), 1); /* marks */
    ck_assert_uint_eq(get32(d + 56), 8); /* "w\0top\0K\0" */
    ck_assert_uint_eq(get32(d + 60), 0); /* workload at string offset 0 */
    ck_assert_uint_eq(get32(d + 64), FILE_LEN - 80);
    ck_assert_uint_eq(get32(d + 72), (uint32_t)crc32_z(crc32_z(0, d, 72), d + 76, len - 76));
    ck_assert_uint_eq(get32(d + OFF_STREAMS + 8), 3); /* instructions in tile 0 */
    ck_assert_uint_eq(get32(d + OFF_STREAMS + 12), 11); /* their packed bytes */
    /* li r1, 5 at line 2: op 1 << 4 | a line | 2 operands, the line, zigzag 1 and 5; add r2, r1,
     * r1; bnz r2, 0: op 10 (two varint bytes), one operand (the zero label is left off) */
    ck_assert_mem_eq(d + OFF_INSN, "\x1a\x02\x02\x0a\x23\x04\x02\x02\xa1\x01\x04\0\0\0\0\0", 16);
    ck_assert_uint_eq(get32(d + OFF_SEGTAB + 8), 0x100);
    ck_assert_mem_eq(d + OFF_SEGBYTES, "abc\0\0\0\0\0", 8);
    ck_assert_uint_eq(get32(d + OFF_SYMS), 2); /* "top": canonical order puts the label first */
    ck_assert_uint_eq(get32(d + OFF_SYMS + 24), 6); /* "K" */
    ck_assert_uint_eq(get32(d + OFF_MARKS + 8), 4);
    ck_assert_mem_eq(d + OFF_STRTAB, "w\0top\0K\0", 8);
    ts_free(d);
}
END_TEST

START_TEST(test_roundtrip)
{
    size_t len;
    unsigned char *d = reference(&len);
    ts_err err;
    ts_err_init(&err);
    ts_program *p;
    ck_assert_int_eq(ts_program_decode(&p, "prog.bin", d, len, isa, &err), TS_OK);
    ck_assert_str_eq(p->arch, "toy");
    ck_assert(p->config_fp == 0x0123456789abcdefULL);
    ck_assert_str_eq(p->workload, "w");
    ck_assert_uint_eq(p->nstreams, 1);
    ck_assert_uint_eq(p->streams[0].n, 3);
    ck_assert_uint_eq(p->streams[0].insn[2].op, TOY_OP_BNZ);
    ck_assert_uint_eq(p->streams[0].insn[0].line, 2);
    ck_assert_uint_eq(p->nsegs, 1);
    ck_assert_mem_eq(p->segs[0].bytes, "abc", 3);
    ck_assert_uint_eq(p->nsyms, 2);
    ck_assert_str_eq(p->syms[0].name, "top");
    ck_assert_str_eq(p->syms[1].name, "K");
    ck_assert_int_eq((int)p->syms[1].value, 7);
    ck_assert_uint_eq(p->nmarks, 1);
    ck_assert_uint_eq(p->marks[0].pc, 1);
    ts_buf b = TS_BUF_INIT;
    encode(p, &b);
    ck_assert_uint_eq(b.len, len);
    ck_assert_mem_eq(b.data, d, len);
    /* the decoded program can still be built on */
    ck_assert_ptr_nonnull(ts_stream_emit(&p->streams[0], TOY_OP_HALT));
    ts_buf_free(&b);
    ts_program_destroy(p);
    ts_free(d);
}
END_TEST

START_TEST(test_packed_streams)
{
    /* Every operand shape packs and unpacks to itself, in at most TS_INSN_PACKED_MAX bytes. */
    ts_insn v[4] = {{.op = 0}, {.op = 0xffff, .line = 0xffff, .a = {INT32_MIN, INT32_MAX, -1, 0, 63, -64, 1 << 20}},
                    {.op = TOY_OP_LI, .a = {1, 0, 0, 0, 0, 0, 5}}, {.op = TOY_OP_ADD, .line = 7, .a = {-3}}};
    for (int i = 0; i < 4; i++) {
        uint8_t b[TS_INSN_PACKED_MAX + 1];
        size_t n = ts_insn_pack(&v[i], b);
        ck_assert_uint_le(n, TS_INSN_PACKED_MAX);
        const uint8_t *at = b;
        ts_insn u;
        ck_assert_int_eq(ts_insn_unpack(&at, b + n, &u), 0);
        ck_assert_ptr_eq(at, b + n);
        ck_assert_mem_eq(&u, &v[i], sizeof u);
        at = b; /* one byte short */
        ck_assert_int_eq(ts_insn_unpack(&at, b + n - 1, &u), -1);
    }
    /* A program built packed encodes to the bytes of the same program built as insn, decodes
     * packed or not, and unpacks back to the insn form. */
    ts_err err;
    ts_err_init(&err);
    ts_program *ref = build(), *p = build();
    ts_stream *s = &p->streams[0];
    ts_insn keep[3];
    memcpy(keep, s->insn, sizeof keep);
    ts_free(s->insn);
    s->insn = NULL;
    s->n = s->cap = 0;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(ts_stream_emit_packed(s, &keep[i]), 0);
    ck_assert_uint_eq(s->n, 3);
    ck_assert_uint_eq(s->packed_len, 11);
    ck_assert_ptr_null(ts_stream_emit(s, TOY_OP_NOP)); /* a packed stream takes packed instructions only */
    ts_buf a = TS_BUF_INIT, b = TS_BUF_INIT;
    encode(ref, &a);
    encode(p, &b);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_mem_eq(a.data, b.data, a.len);
    ts_program *q;
    ck_assert_int_eq(ts_program_decode_opt(&q, "p", b.data, b.len, isa, true, &err), TS_OK);
    ck_assert_ptr_nonnull(q->streams[0].packed);
    ck_assert_ptr_null(q->streams[0].insn);
    ts_buf c = TS_BUF_INIT;
    encode(q, &c);
    ck_assert_mem_eq(c.data, a.data, a.len);
    ts_buf text = TS_BUF_INIT, text2 = TS_BUF_INIT; /* the disassembler reads packed streams */
    ck_assert_int_eq(ts_disasm(q, isa, &text, &err), TS_OK);
    ck_assert_int_eq(ts_disasm(ref, isa, &text2, &err), TS_OK);
    ck_assert_str_eq(text.data, text2.data);
    ck_assert_int_eq(ts_program_unpack(q, &err), TS_OK);
    ck_assert_ptr_null(q->streams[0].packed);
    ck_assert_mem_eq(q->streams[0].insn, ref->streams[0].insn, 3 * sizeof(ts_insn));
    ts_stream_release(&q->streams[0]);
    ck_assert_ptr_null(q->streams[0].insn);
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_buf_free(&c);
    ts_buf_free(&text);
    ts_buf_free(&text2);
    ts_program_destroy(q);
    ts_program_destroy(p);
    ts_program_destroy(ref);
}
END_TEST

START_TEST(test_shared_segments)
{
    /* Equal bytes on three tiles are stored once, the other two segments naming the first; the
     * reader gives each segment its bytes and refuses any other form. */
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    ts_stream_emit(ts_program_stream(p, 0, 0), TOY_OP_HALT);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 2, 0, "same", 4, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 0, 0, "same", 4, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 1, 0, "other!!!", 8, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 1, 8, "same", 4, &err), TS_OK);
    ts_buf b = TS_BUF_INIT;
    encode(p, &b);
    unsigned char *d = (unsigned char *)b.data;
    size_t segtab = 80 + 16 + 8; /* one stream of one halt, padded to 8 */
    ck_assert_uint_eq(b.len, segtab + 4 * 24 + 8 + 8); /* "same" and "other!!!" once each */
    uint32_t want[4] = {0, 1, 0, 0}; /* tile 0 "same", tile 1 "other!!!", tile 1 "same", tile 2 */
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(get32(d + segtab + 24 * i + 20), want[i]);
    ts_program *q;
    ck_assert_int_eq(ts_program_decode(&q, "prog.bin", d, b.len, isa, &err), TS_OK);
    ck_assert_uint_eq(q->nsegs, 4);
    ck_assert_mem_eq(q->segs[3].bytes, "same", 4);
    ck_assert_ptr_eq(q->segs[3].bytes, q->segs[0].bytes); /* held once in memory too */
    ck_assert(!q->segs[0].shared && !q->segs[1].shared && q->segs[2].shared && q->segs[3].shared);
    ts_program_destroy(q);
    put32(d + segtab + 24 * 2 + 20, 3); /* a later segment's */
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 172: data segment 2: its bytes are segment 3's, which is not an earlier "
                         "segment that stores its own");
    put32(d + segtab + 24 * 2 + 20, 1); /* a segment of another length */
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 168: data segment 2: 4 bytes, but segment 1, whose bytes it shares, has 8");
    put32(d + segtab + 24 * 2 + 20, 0);
    put32(d + segtab + 24 * 1 + 20, 0); /* "other!!!" is not segment 0's "same" */
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 144: data segment 1: 8 bytes, but segment 0, whose bytes it shares, has 4");
    ts_buf_free(&b);
    ts_program_destroy(p);
    /* the same bytes stored twice: not the writer's form */
    p = ts_program_create("toy");
    ck_assert_int_eq(ts_program_add_segment(p, 0, 0, 0, "ab", 2, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 1, 0, "cd", 2, &err), TS_OK);
    b = (ts_buf)TS_BUF_INIT;
    encode(p, &b);
    d = (unsigned char *)b.data;
    memcpy(d + 80 + 2 * 24 + 8, "ab", 2);
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 124: data segment 1: its bytes are segment 0's, stored again");
    ts_buf_free(&b);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_canonical_bytes)
{
    /* The same program built in another order encodes to the same bytes. */
    ts_err err;
    ts_err_init(&err);
    ts_program *a = ts_program_create("toy"), *b = ts_program_create("toy");
    for (uint32_t i = 0; i < 3; i++) {
        ts_stream_emit(ts_program_stream(a, 0, i), TOY_OP_NOP);
        ts_stream_emit(ts_program_stream(b, 0, 2 - i), TOY_OP_NOP);
    }
    ck_assert_int_eq(ts_program_add_symbol(a, "x", TS_SYM_LABEL, 2, 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_symbol(a, "y", TS_SYM_CONST, 0, 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_mark(a, 1, 0, 5, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_mark(a, 1, 0, 2, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(a, 0, 1, 8, "q", 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(a, 0, 1, 0, "p", 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(b, 0, 1, 0, "p", 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(b, 0, 1, 8, "q", 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_mark(b, 1, 0, 2, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_mark(b, 1, 0, 5, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_symbol(b, "y", TS_SYM_CONST, 0, 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_symbol(b, "x", TS_SYM_LABEL, 2, 1, &err), TS_OK);
    ts_buf ba = TS_BUF_INIT, bb = TS_BUF_INIT;
    encode(a, &ba);
    encode(b, &bb);
    ck_assert_uint_eq(ba.len, bb.len);
    ck_assert_mem_eq(ba.data, bb.data, ba.len);
    /* encode leaves its input alone */
    ck_assert_uint_eq(a->marks[0].id, 5);
    ck_assert(a->segs[0].addr == 8);
    ts_buf_free(&ba);
    ts_buf_free(&bb);
    ts_program_destroy(a);
    ts_program_destroy(b);
}
END_TEST

START_TEST(test_empty_program)
{
    ts_program *p = ts_program_create("toy");
    ts_buf b = TS_BUF_INIT;
    encode(p, &b);
    ck_assert_uint_eq(b.len, 80);
    ck_assert_uint_eq(get32((unsigned char *)b.data + 60), 0xffffffffu); /* no workload */
    ts_err err;
    ts_err_init(&err);
    ts_program *q;
    ck_assert_int_eq(ts_program_decode(&q, "e", b.data, b.len, isa, &err), TS_OK);
    ck_assert_ptr_null(q->workload);
    ck_assert_uint_eq(q->nstreams, 0);
    ts_program_destroy(q);
    ts_buf_free(&b);
    ts_program_destroy(p);
}
END_TEST

/* ---- the reader's checks ----------------------------------------------------------------- */

START_TEST(test_header_errors)
{
    size_t len;
    unsigned char *d = reference(&len);
    unsigned char m[FILE_LEN];
    memcpy(m, d, len);
    m[3] ^= 1;
    decode_err(m, len, "prog.bin: offset 0: not a tessera program (bad magic)");
    patch_err(8, 7, 0, "prog.bin: offset 8: program format version 7 is newer than this tessera (2)");
    patch_err(8, 1, 0, "prog.bin: offset 8: program format version 1 is no longer read (this tessera reads 2): "
                       "recompile the program");
    patch_err(8, 0, 0, "prog.bin: offset 8: program format version 0 is not valid");
    patch_err(12, 96, 0, "prog.bin: offset 12: header size is 96, expected 80");
    patch_err(16, 0x707374, 0, "prog.bin: offset 16: program is for arch 'tsp', not 'toy'");
    memcpy(m, d, len);
    memset(m + 16, 'a', 16);
    decode_err(m, len, "prog.bin: offset 16: arch name is not NUL-terminated");
    memcpy(m, d, len);
    m[30] = 'x';
    decode_err(m, len, "prog.bin: offset 19: arch name padding is not zero");
    patch_err(76, 1, 0, "prog.bin: offset 76: reserved header field is not zero");
    patch_err(64, 1000, 0, "prog.bin: offset 64: payload size is 1000 bytes, but 136 follow the "
                           "header (truncated file)");
    patch_err(64, 100, 0, "prog.bin: offset 64: payload size is 100 bytes, but 136 follow the "
                          "header");
    ts_free(d);
}
END_TEST

START_TEST(test_header_errors_crc)
{
    /* The checksum error above shows the computed value; check it separately. */
    size_t len;
    unsigned char *d = reference(&len);
    uint32_t good = get32(d + 72);
    put32(d + 72, good ^ 0x10);
    char want[200];
    snprintf(want, sizeof want, "prog.bin: offset 72: checksum mismatch (stored 0x%08x, computed "
             "0x%08x): the file is corrupt", good ^ 0x10, good);
    decode_err(d, len, want);
    ts_free(d);
}
END_TEST

START_TEST(test_truncation)
{
    size_t len;
    unsigned char *d = reference(&len);
    for (size_t n = 0; n < len; n++) {
        char want[200];
        if (n < 8)
            snprintf(want, sizeof want, "prog.bin: offset 0: not a tessera program (bad magic)");
        else if (n < 80)
            snprintf(want, sizeof want, "prog.bin: offset %zu: truncated header (%zu of 80 bytes)",
                     n, n);
        else
            snprintf(want, sizeof want, "prog.bin: offset 64: payload size is %zu bytes, but %zu "
                     "follow the header (truncated file)", len - 80, n - 80);
        decode_err(d, n, want);
    }
    ts_free(d);
}
END_TEST

START_TEST(test_flipped_bytes)
{
    /* Any single flipped bit from the fingerprint on is caught by the checksum. */
    size_t len;
    unsigned char *d = reference(&len);
    for (size_t i = 32; i < len; i++) {
        if (i >= 64 && i < 80)
            continue; /* payload size and checksum fields have their own checks */
        for (int bit = 0; bit < 8; bit += 3) {
            d[i] ^= (unsigned char)(1 << bit);
            ts_err err;
            ts_err_init(&err);
            ts_program *p;
            ck_assert_int_eq(ts_program_decode(&p, "prog.bin", d, len, isa, &err), TS_EINPUT);
            ck_assert_msg(strstr(err.msg, "offset 72: checksum mismatch"), "byte %zu: %s", i,
                          err.msg);
            d[i] ^= (unsigned char)(1 << bit);
        }
    }
    ts_free(d);
}
END_TEST

START_TEST(test_payload_errors)
{
    patch_err(40, 100, 1, "prog.bin: offset 40: 100 streams do not fit in the file");
    patch_err(OFF_STREAMS, 3, 1, "prog.bin: offset 80: stream 0: kind 3 is not a toy stream kind "
                                 "(1 kinds)");
    patch_err(OFF_STREAMS + 12, 2, 1, "prog.bin: offset 88: stream 0: 3 instructions cannot pack into 2 bytes");
    patch_err(OFF_STREAMS + 8, 1000, 1, "prog.bin: offset 88: stream 0: 1000 instructions cannot pack into 11 "
                                        "bytes");
    patch_err(OFF_STREAMS + 12, 1000, 1, "prog.bin: offset 96: 3 instructions (1000 bytes) do not fit in the "
                                         "file");
    bytes_err(OFF_INSN + 4, "\xb1\x0c", 2, 0, "prog.bin: offset 100: stream tile 0, pc 1: op 99 is not in the toy "
                                              "ISA (16 ops)");
    bytes_err(OFF_INSN + 6, "\x10", 1, 0, "prog.bin: offset 100: stream tile 0, pc 1: operand 2 of 'add' is "
                                         "register 8, but toy has 8 registers");
    bytes_err(OFF_INSN + 5, "\x01", 1, 0, "prog.bin: offset 100: stream tile 0, pc 1: operand 1 of 'add' is "
                                         "register -1, but toy has 8 registers");
    bytes_err(OFF_INSN + 8, "\xa2\x01\x04\x06", 4, 12, "prog.bin: offset 104: stream tile 0, pc 2: operand 2 of "
                                                       "'bnz' is pc 3, outside the stream (3 instructions)");
    bytes_err(OFF_INSN, "\x13\x02\x0a\x02", 4, 0, "prog.bin: offset 96: stream tile 0, pc 0: 'li' has 2 "
                                                  "operands but operand 3 is 1, not 0");
    /* packings that are not the one form of an instruction: a trailing zero operand, a varint
     * with a zero last group, a line of 0, bytes left over, bytes past the end */
    bytes_err(OFF_INSN + 10, "\x00", 1, 0, "prog.bin: offset 104: stream tile 0, pc 2: not a packed instruction");
    bytes_err(OFF_INSN + 4, "\xa3\x00", 2, 0, "prog.bin: offset 100: stream tile 0, pc 1: not a packed instruction");
    bytes_err(OFF_INSN + 1, "\x00", 1, 0, "prog.bin: offset 96: stream tile 0, pc 0: not a packed instruction");
    bytes_err(OFF_INSN + 11, "", 0, 12, "prog.bin: offset 107: stream tile 0: 1 bytes left after its 3 "
                                     "instructions");
    bytes_err(OFF_INSN + 8, "\xa1\x01\x84", 3, 0, "prog.bin: offset 104: stream tile 0, pc 2: not a packed "
                                                 "instruction");
    bytes_err(OFF_INSN + 12, "\x01", 1, 0, "prog.bin: offset 107: padding after the instructions is not zero");
    patch_err(44, 50, 1, "prog.bin: offset 44: 50 data segments do not fit in the file");
    patch_err(OFF_SEGTAB, 1, 1, "prog.bin: offset 112: data segment 0: kind 1 is not a toy stream "
                                "kind (1 kinds)");
    patch_err(OFF_SEGTAB + 16, 4000, 1, "prog.bin: offset 128: data segment 0: 4000 bytes do not "
                                        "fit in the file");
    patch_err(OFF_SEGTAB + 20, 4, 1, "prog.bin: offset 132: data segment 0: its bytes are segment 4's, which is "
                                     "not an earlier segment that stores its own");
    patch_err(OFF_SEGBYTES + 4, 1, 1, "prog.bin: offset 139: data segment 0: padding is not zero");
    patch_err(48, 40, 1, "prog.bin: offset 48: 40 symbols do not fit in the file");
    patch_err(52, 40, 1, "prog.bin: offset 52: 40 marks do not fit in the file");
    patch_err(56, 80, 1, "prog.bin: offset 56: string table of 80 bytes does not match the 8 bytes "
                         "left in the file");
    patch_err(60, 8, 1, "prog.bin: offset 60: workload name: string offset 8 is outside the string "
                        "table (8 bytes)");
    patch_err(OFF_SYMS, 100, 1, "prog.bin: offset 144: symbol 0: string offset 100 is outside the "
                                "string table (8 bytes)");
    patch_err(OFF_SYMS, 1, 1, "prog.bin: offset 144: symbol name '' is not an identifier");
    patch_err(OFF_SYMS + 4, 2, 1, "prog.bin: offset 148: symbol 'top': kind 2 is neither label (0) "
                                  "nor constant (1)");
    patch_err(OFF_SYMS + 8, 1, 1, "prog.bin: offset 152: label 'top': stream 1 does not exist (1 "
                                  "streams)");
    patch_err(OFF_SYMS + 12, 1, 1, "prog.bin: offset 156: symbol 'top': reserved field is not "
                                   "zero");
    patch_err(OFF_SYMS + 16, 4, 1, "prog.bin: offset 160: label 'top': pc 4 is outside its stream "
                                   "(3 instructions)");
    patch_err(OFF_SYMS + 24 + 8, 1, 1, "prog.bin: offset 176: constant 'K': stream is 1, not 0");
    patch_err(OFF_SYMS + 24 + 16, 0, 1, "prog.bin: offset 168: symbol 'K' is a duplicate or out "
                                        "of order");
    patch_err(OFF_MARKS, 1, 1, "prog.bin: offset 192: mark 0: stream 1 does not exist (1 "
                               "streams)");
    patch_err(OFF_MARKS + 4, 4, 1, "prog.bin: offset 196: mark 0: pc 4 is past the end of its "
                                   "stream (3 instructions)");
    patch_err(OFF_MARKS + 12, 1, 1, "prog.bin: offset 204: padding after the mark table is not "
                                    "zero");
}
END_TEST

START_TEST(test_string_errors)
{
    /* A symbol name that runs into the end of the table without its NUL. */
    size_t len;
    unsigned char *d = reference(&len);
    d[OFF_STRTAB + 7] = 'Z';
    fix_crc(d, len);
    decode_err(d, len, "prog.bin: offset 168: symbol 1: string at offset 6 is not NUL-terminated");
    ts_free(d);
}
END_TEST

START_TEST(test_order_errors)
{
    /* Two streams in the wrong order, two labels with one name, overlapping segments. */
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    ts_stream_emit(ts_program_stream(p, 0, 1), TOY_OP_NOP);
    ts_stream_emit(ts_program_stream(p, 0, 2), TOY_OP_NOP);
    ck_assert_int_eq(ts_program_add_symbol(p, "a", TS_SYM_LABEL, 0, 0, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_symbol(p, "b", TS_SYM_LABEL, 0, 1, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 0, 0, "abcd", 4, &err), TS_OK);
    ck_assert_int_eq(ts_program_add_segment(p, 0, 0, 8, "ef", 2, &err), TS_OK);
    ts_buf b = TS_BUF_INIT;
    encode(p, &b);
    unsigned char *d = (unsigned char *)b.data;
    /* stream table at 80: tile 1, tile 2 -> make both tile 1 */
    put32(d + 80 + 16 + 4, 1);
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 96: stream 1 (tile 1) is a duplicate or out of order");
    put32(d + 80 + 16 + 4, 2);
    /* segment 1's address 8 -> 2: overlaps segment 0 (0..4) */
    size_t segtab = 80 + 32 + 8; /* two nops of one byte each, padded to 8 */
    put32(d + segtab + 24 + 8, 2);
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 144: data segment 1 (tile 0 at 0x2) overlaps an earlier "
                         "one");
    put32(d + segtab + 24 + 8, 8);
    /* symbols: a@0, b@1 -> rename b to a (string "a\0b\0": offset 2 -> 0) and move it to pc 0 */
    size_t syms = segtab + 48 + 8 + 8;
    put32(d + syms + 24, 0);
    put32(d + syms + 24 + 16, 0);
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 208: symbol 'a' is a duplicate or out of order");
    put32(d + syms + 24 + 16, 1);
    fix_crc(d, b.len);
    decode_err(d, b.len, "prog.bin: offset 208: label 'a' is defined twice");
    ts_buf_free(&b);
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_check_config)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = ts_program_create("toy");
    ck_assert_int_eq(ts_program_check_config(p, 0xfedcba9876543210ULL, "ipu_mk1", &err), TS_OK);
    p->config_fp = 0x0123456789abcdefULL;
    ck_assert_int_eq(ts_program_check_config(p, 0x0123456789abcdefULL, "ipu_mk1", &err), TS_OK);
    ck_assert_int_eq(ts_program_check_config(p, 0xfedcba9876543210ULL, "ipu_mk1", &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "program was compiled for config fingerprint 0123456789abcdef, not "
                              "for 'ipu_mk1' (fedcba9876543210): recompile it for this config");
    ts_program_destroy(p);
}
END_TEST

START_TEST(test_peek_and_files)
{
    size_t len;
    unsigned char *d = reference(&len);
    char arch[16];
    ck_assert_int_eq(ts_program_peek_arch(d, len, arch), 0);
    ck_assert_str_eq(arch, "toy");
    ck_assert_int_eq(ts_program_peek_arch(d, 79, arch), -1);
    ck_assert_int_eq(ts_program_peek_arch("TSPROG", 6, arch), -1);
    d[0] = 'X';
    ck_assert_int_eq(ts_program_peek_arch(d, len, arch), -1);
    ts_free(d);

    char path[] = "/tmp/ts_test_program_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ts_err err;
    ts_err_init(&err);
    ts_program *p = build(), *q;
    ck_assert_int_eq(ts_program_write(p, path, &err), TS_OK);
    ck_assert_int_eq(ts_program_read(&q, path, isa, &err), TS_OK);
    ts_buf a = TS_BUF_INIT, b = TS_BUF_INIT;
    encode(p, &a);
    encode(q, &b);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_mem_eq(a.data, b.data, a.len);
    ts_program_destroy(q);
    /* messages from a file name the file */
    FILE *f = fopen(path, "wb");
    fwrite("nope", 1, 4, f);
    fclose(f);
    ck_assert_int_eq(ts_program_read(&q, path, isa, &err), TS_EINPUT);
    char msg[600], want[600];
    ts_err_format(&err, msg, sizeof msg);
    snprintf(want, sizeof want, "%s: offset 0: not a tessera program (bad magic)", path);
    ck_assert_str_eq(msg, want);
    remove(path);
    ck_assert_int_eq(ts_program_read(&q, path, isa, &err), TS_EIO);
    ck_assert_ptr_null(q);
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_program_destroy(p);
}
END_TEST

/* ---- out of memory ----------------------------------------------------------------------- */

START_TEST(test_oom)
{
    size_t len;
    unsigned char *d = reference(&len);
    ts_program *ref = build();
    int dec_ok = 0, enc_ok = 0, build_ok = 0;
    for (long n = 1; n < 100; n++) {
        ts_err err;
        ts_err_init(&err);
        ts_program *p = NULL;
        ts_alloc_fail_after(n);
        ts_status st = ts_program_decode(&p, "prog.bin", d, len, isa, &err);
        long failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (failed) {
            ck_assert_int_eq(st, TS_ENOMEM);
            ck_assert_ptr_null(p);
            ck_assert_str_eq(err.msg, "out of memory");
        } else {
            ck_assert_int_eq(st, TS_OK);
            dec_ok = 1;
        }
        ts_program_destroy(p);

        ts_buf b = TS_BUF_INIT;
        ts_alloc_fail_after(n);
        st = ts_program_encode(ref, &b, &err);
        failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        ck_assert_int_eq(st, failed ? TS_ENOMEM : TS_OK);
        if (!failed) {
            ck_assert_uint_eq(b.len, len);
            ck_assert_mem_eq(b.data, d, len);
            enc_ok = 1;
        }
        ts_buf_free(&b);

        /* builders: every one returns NULL or an error and leaves the program destroyable */
        ts_alloc_fail_after(n);
        p = ts_program_create("toy");
        int ok = p != NULL;
        ts_stream *s = ok ? ts_program_stream(p, 0, 3) : NULL;
        ok = ok && s && ts_stream_emit(s, TOY_OP_NOP) && ts_program_stream(p, 0, 1);
        ok = ok && !ts_program_add_symbol(p, "x", TS_SYM_LABEL, 0, 0, &err);
        ok = ok && !ts_program_add_mark(p, 0, 0, 0, &err);
        ok = ok && !ts_program_add_segment(p, 0, 0, 0, "abc", 3, &err);
        failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        ck_assert_int_eq(ok, !failed);
        build_ok |= ok;
        ts_program_destroy(p);
    }
    ck_assert(dec_ok && enc_ok && build_ok);
    ts_program_destroy(ref);
    ts_free(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("program");
    TCase *tc = tcase_create("program");
    tcase_add_test(tc, test_create_destroy);
    tcase_add_test(tc, test_streams_sorted);
    tcase_add_test(tc, test_builder_errors);
    tcase_add_test(tc, test_canonicalize_by_hand);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_canonical_bytes);
    tcase_add_test(tc, test_packed_streams);
    tcase_add_test(tc, test_shared_segments);
    tcase_add_test(tc, test_empty_program);
    tcase_add_test(tc, test_header_errors);
    tcase_add_test(tc, test_header_errors_crc);
    tcase_add_test(tc, test_truncation);
    tcase_add_test(tc, test_flipped_bytes);
    tcase_add_test(tc, test_payload_errors);
    tcase_add_test(tc, test_string_errors);
    tcase_add_test(tc, test_order_errors);
    tcase_add_test(tc, test_check_config);
    tcase_add_test(tc, test_peek_and_files);
    tcase_add_test(tc, test_oom);
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
