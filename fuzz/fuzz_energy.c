/* fuzz/fuzz_energy.c — energy tables from arbitrary bytes must load or fail with a message,
 * never crash, hang or leak.
 *
 *   CC=clang meson setup build-fuzz -Dfuzz=true && ninja -C build-fuzz fuzz/fuzz_energy
 *   ./build-fuzz/fuzz/fuzz_energy fuzz/corpus/energy
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/energy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_err err;
    ts_err_init(&err);
    ts_energy_table *t = NULL;
    ts_status st = ts_energy_load_string(&t, "fuzz.yaml", (const char *)data, size, &err);
    if (st == TS_OK) {
        /* Whatever loaded must be consistent: every entry found by its own name. */
        for (size_t i = 0; i < ts_energy_count(t); i++) {
            const ts_energy_entry *e = ts_energy_at(t, i);
            if (ts_energy_find(t, e->name) != e || !(e->joules >= 0))
                __builtin_trap();
        }
    } else if (t != NULL || err.msg[0] == 0) {
        __builtin_trap(); /* a failure must say why and return no table */
    }
    ts_energy_destroy(t);
    ts_err_free(&err);
    return 0;
}
