/* fuzz/fuzz_program.c — decode arbitrary bytes as a toy-ISA program. Whatever decodes must
 * re-encode to a binary that decodes to the same program (compared through its encoding and its
 * disassembly), and its disassembly must reassemble to the same bytes. A mismatch aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/program.h"
#include "tests/toy/toy_isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const ts_err *err)
{
    char msg[1400];
    ts_err_format(err, msg, sizeof msg);
    fprintf(stderr, "fuzz_program: %s: %s\n", what, msg);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ts_isa *isa = &ts_toy_isa;
    ts_err err;
    ts_err_init(&err);
    char arch[16];
    int peek = ts_program_peek_arch(data, size, arch);
    ts_program *p = NULL, *q = NULL, *r = NULL;
    /* Mutations almost never keep the checksum right, so most inputs would stop at it. Decode
     * each input twice: as given, then with its checksum (bytes 72..75, over the rest of the
     * file) recomputed, so the structural checks behind it are explored too. */
    uint8_t *fixed = NULL;
    if (size >= 80 && (fixed = malloc(size))) {
        memcpy(fixed, data, size);
        uint32_t crc = ts_crc32(ts_crc32(0, fixed, 72), fixed + 76, size - 76);
        for (int i = 0; i < 4; i++)
            fixed[72 + i] = (uint8_t)(crc >> (8 * i));
    }
    if (ts_program_decode(&p, "fuzz.bin", data, size, isa, &err) != TS_OK) {
        ts_err_free(&err);
        ts_err_init(&err);
        if (!fixed || ts_program_decode(&p, "fuzz.bin", fixed, size, isa, &err) != TS_OK) {
            free(fixed);
            ts_err_free(&err);
            return 0;
        }
    }
    free(fixed);
    if (peek != 0 || strcmp(arch, "toy"))
        fail("peek_arch disagrees with decode", &err);
    ts_buf b1 = TS_BUF_INIT, b2 = TS_BUF_INIT, b3 = TS_BUF_INIT, t1 = TS_BUF_INIT, t2 = TS_BUF_INIT;
    if (ts_program_encode(p, &b1, &err))
        fail("encode", &err);
    if (ts_program_decode(&q, "reencoded.bin", b1.data, b1.len, isa, &err))
        fail("decoding the re-encoded program", &err);
    if (ts_program_encode(q, &b2, &err) || b1.len != b2.len || memcmp(b1.data, b2.data, b1.len))
        fail("decode(encode(P)) differs from P", &err);
    if (ts_disasm(p, isa, &t1, &err) || ts_disasm(q, isa, &t2, &err))
        fail("disasm", &err);
    if (t1.len != t2.len || memcmp(t1.data, t2.data, t1.len))
        fail("disassembly differs after decode(encode(P))", &err);
    if (ts_asm(&r, "disasm.s", t1.data, t1.len, isa, &err))
        fail("reassembling the disassembly", &err);
    if (ts_program_encode(r, &b3, &err) || b3.len != b1.len || memcmp(b1.data, b3.data, b1.len))
        fail("binary differs after asm(disasm(P))", &err);
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
