/* fuzz/roundtrip.h — the round-trip property both program fuzzers check, written once.
 *
 * For a program P: decode(encode(P)) encodes to the same bytes and disassembles to the same text,
 * and asm(disasm(P)) encodes to the same bytes and disassembles to the same text. A mismatch
 * aborts, so libFuzzer reports the input.
 */
#ifndef TS_FUZZ_ROUNDTRIP_H
#define TS_FUZZ_ROUNDTRIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/program.h"

static void ts_fuzz_fail(const char *who, const char *what, const ts_err *err)
{
    char msg[1400];
    ts_err_format(err, msg, sizeof msg);
    fprintf(stderr, "%s: %s: %s\n", who, what, msg);
    abort();
}

static int ts_fuzz_same(const ts_buf *a, const ts_buf *b)
{
    return a->len == b->len && (a->len == 0 || !memcmp(a->data, b->data, a->len));
}

static void ts_fuzz_check_roundtrip(const char *who, const ts_program *p, const ts_isa *isa)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *q = NULL, *r = NULL;
    ts_buf b1 = TS_BUF_INIT, b2 = TS_BUF_INIT, b3 = TS_BUF_INIT;
    ts_buf t1 = TS_BUF_INIT, t2 = TS_BUF_INIT, t3 = TS_BUF_INIT;
    if (ts_program_encode(p, &b1, &err) || ts_disasm(p, isa, &t1, &err))
        ts_fuzz_fail(who, "encoding or disassembling P", &err);
    if (ts_program_decode(&q, "reencoded.bin", b1.data, b1.len, isa, &err))
        ts_fuzz_fail(who, "decoding encode(P)", &err);
    if (ts_program_encode(q, &b2, &err) || ts_disasm(q, isa, &t2, &err))
        ts_fuzz_fail(who, "encoding or disassembling decode(encode(P))", &err);
    if (!ts_fuzz_same(&b1, &b2) || !ts_fuzz_same(&t1, &t2))
        ts_fuzz_fail(who, "decode(encode(P)) differs from P", &err);
    if (ts_asm(&r, "disasm.s", t1.data, t1.len, isa, &err))
        ts_fuzz_fail(who, "reassembling disasm(P)", &err);
    if (ts_program_encode(r, &b3, &err) || ts_disasm(r, isa, &t3, &err))
        ts_fuzz_fail(who, "encoding or disassembling asm(disasm(P))", &err);
    if (!ts_fuzz_same(&b1, &b3) || !ts_fuzz_same(&t1, &t3))
        ts_fuzz_fail(who, "asm(disasm(P)) differs from P", &err);
    ts_buf_free(&b1);
    ts_buf_free(&b2);
    ts_buf_free(&b3);
    ts_buf_free(&t1);
    ts_buf_free(&t2);
    ts_buf_free(&t3);
    ts_program_destroy(q);
    ts_program_destroy(r);
    ts_err_free(&err);
}

#endif
