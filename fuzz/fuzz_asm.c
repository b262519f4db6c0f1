/* fuzz/fuzz_asm.c — assemble arbitrary text against the toy ISA. Whatever assembles must
 * round-trip through the binary form and the disassembly (fuzz/roundtrip.h). Ranges are limited to
 * 4,096 units and programs to 16 MiB (core/limit.h): a range of 161,024 tiles is a valid program
 * that took seconds per input under the sanitizers, and the limits themselves are what is tested
 * past that. */
#include <stddef.h>
#include <stdint.h>

#include "core/limit.h"
#include "core/program.h"
#include "fuzz/roundtrip.h"
#include "tests/toy/toy_isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        ts_limit_set(TS_LIMIT_RANGE_UNITS, 4096);
        ts_limit_set(TS_LIMIT_PROGRAM_BYTES, 16 << 20);
        ready = 1;
    }
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    if (ts_asm(&p, "fuzz.s", (const char *)data, size, &ts_toy_isa, &err) == TS_OK)
        ts_fuzz_check_roundtrip("fuzz_asm", p, &ts_toy_isa);
    ts_program_destroy(p);
    ts_err_free(&err);
    return 0;
}
