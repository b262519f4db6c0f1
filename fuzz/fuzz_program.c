/* fuzz/fuzz_program.c — decode arbitrary bytes as a toy-ISA program. Whatever decodes must
 * re-encode to a binary that decodes to the same program (compared through its encoding and its
 * disassembly), and its disassembly must reassemble to the same bytes (fuzz/roundtrip.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/fileio.h"
#include "core/program.h"
#include "fuzz/roundtrip.h"
#include "tests/toy/toy_isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ts_isa *isa = &ts_toy_isa;
    ts_err err;
    ts_err_init(&err);
    char arch[16];
    int peek = ts_program_peek_arch(data, size, arch);
    ts_program *p = NULL;
    /* Mutations almost never keep the checksum right, so most inputs would stop at it. Decode
     * each input twice: as given, then with its checksum (bytes 72..75, over the rest of the
     * file) recomputed, so the structural checks behind it are explored too. */
    uint8_t *fixed = NULL;
    if (size >= 80 && (fixed = malloc(size))) {
        memcpy(fixed, data, size);
        uint32_t crc = (uint32_t)crc32_z(crc32_z(0, fixed, 72), fixed + 76, size - 76);
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
        ts_fuzz_fail("fuzz_program", "peek_arch disagrees with decode", &err);
    ts_fuzz_check_roundtrip("fuzz_program", p, isa);
    ts_program_destroy(p);
    ts_err_free(&err);
    return 0;
}
