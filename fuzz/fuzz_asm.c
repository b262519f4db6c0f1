/* fuzz/fuzz_asm.c — assemble arbitrary text against the toy ISA. Whatever assembles must
 * round-trip: encode(asm(disasm(P))) == encode(P), disasm(asm(disasm(P))) == disasm(P), and the
 * binary decodes back to the same bytes. A mismatch aborts, so the fuzzer reports it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/program.h"
#include "tests/toy/toy_isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const ts_err *err)
{
    char msg[1400];
    ts_err_format(err, msg, sizeof msg);
    fprintf(stderr, "fuzz_asm: %s: %s\n", what, msg);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ts_isa *isa = &ts_toy_isa;
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL, *q = NULL, *r = NULL;
    if (ts_asm(&p, "fuzz.s", (const char *)data, size, isa, &err) != TS_OK) {
        ts_err_free(&err);
        return 0;
    }
    ts_buf b1 = TS_BUF_INIT, b2 = TS_BUF_INIT, b3 = TS_BUF_INIT, t1 = TS_BUF_INIT, t2 = TS_BUF_INIT;
    if (ts_program_encode(p, &b1, &err))
        fail("encode", &err);
    if (ts_disasm(p, isa, &t1, &err))
        fail("disasm", &err);
    if (ts_asm(&q, "disasm.s", t1.data, t1.len, isa, &err))
        fail("reassembling the disassembly", &err);
    if (ts_program_encode(q, &b2, &err) || ts_disasm(q, isa, &t2, &err))
        fail("encoding the reassembled program", &err);
    if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len))
        fail("binary differs after asm(disasm(P))", &err);
    if (t1.len != t2.len || memcmp(t1.data, t2.data, t1.len))
        fail("disassembly differs after asm(disasm(P))", &err);
    if (ts_program_decode(&r, "fuzz.bin", b1.data, b1.len, isa, &err))
        fail("decoding the encoded program", &err);
    if (ts_program_encode(r, &b3, &err) || b3.len != b1.len || memcmp(b1.data, b3.data, b1.len))
        fail("binary differs after decode(encode(P))", &err);
    ts_buf_free(&b1);
    ts_buf_free(&b2);
    ts_buf_free(&b3);
    ts_buf_free(&t1);
    ts_buf_free(&t2);
    ts_program_destroy(p);
    ts_program_destroy(q);
    ts_program_destroy(r);
    ts_err_free(&err);
    return 0;
}
