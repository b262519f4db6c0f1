/* fuzz/fuzz_traffic.c — synthetic traffic specs (`traffic:SPEC`, arch/wse/wse_traffic.c) from
 * arbitrary bytes must parse or fail with a message, never crash, hang or leak; a spec that parses
 * builds its program on a 4 x 4 wafer (routed by colour or by destination, by the first byte) or is
 * refused with a message.
 *
 *   CC=clang meson setup build-fuzz -Dfuzz=true && ninja -C build-fuzz fuzz/fuzz_traffic
 *   ./build-fuzz/fuzz/fuzz_traffic fuzz/corpus/traffic
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/wse/wse_traffic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char spec[512];
    if (size >= sizeof spec || !size)
        return 0;
    memcpy(spec, data, size);
    spec[size] = 0;
    ts_err err;
    ts_err_init(&err);
    ts_wse_traffic t;
    ts_wse_traffic_defaults(&t);
    ts_status st = ts_wse_traffic_parse(&t, spec, &err);
    if (st != TS_OK && (st != TS_EINPUT || !err.msg[0]))
        __builtin_trap(); /* a bad spec is an input error that says why */
    if (st == TS_OK && t.warmup + t.measure <= 4096) { /* larger windows only take longer to build */
        ts_program *p = NULL;
        ts_err_free(&err);
        ts_err_init(&err);
        ts_wse_cfg c;
        if (ts_wse_cfg_defaults(&c, &err) != TS_OK)
            __builtin_trap();
        c.width = c.height = 4;
        c.routing = data[0] % 5; /* colour, xy, yx, o1turn, westfirst by the first byte */
        st = ts_wse_traffic_program(&p, &c, &t, &err);
        if ((st == TS_OK) != (p != NULL) || (st != TS_OK && !err.msg[0]))
            __builtin_trap();
        ts_program_destroy(p);
    }
    ts_err_free(&err);
    return 0;
}
