/* fuzz/fuzz_asm.c — assemble arbitrary text against the toy ISA. Whatever assembles must
 * round-trip through the binary form and the disassembly (fuzz/roundtrip.h). */
#include <stddef.h>
#include <stdint.h>

#include "core/program.h"
#include "fuzz/roundtrip.h"
#include "tests/toy/toy_isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    if (ts_asm(&p, "fuzz.s", (const char *)data, size, &ts_toy_isa, &err) == TS_OK)
        ts_fuzz_check_roundtrip("fuzz_asm", p, &ts_toy_isa);
    ts_program_destroy(p);
    ts_err_free(&err);
    return 0;
}
