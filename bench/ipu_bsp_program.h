/* bench/ipu_bsp_program.h — the 1216-tile IPU BSP program shared by bench/bench_ipu_bsp.c and
 * tests/viz/bench_activity.c, so both measure the same thing.
 *
 * Every tile of configs/ipu_mk1 runs `steps` supersteps of: six workers streaming input pairs
 * through the AMP (f32v2amp, 64 issues per worker), the chip-wide sync, and a ring exchange of
 * 24 words to the next tile. Written once as SPMD code (`.stream tile 0-1215`).
 */
#ifndef TS_BENCH_IPU_BSP_PROGRAM_H
#define TS_BENCH_IPU_BSP_PROGRAM_H

#include "core/buf.h"
#include "core/program.h"

static const char ts_bench_ipu_bsp_body[] =
    ".arch ipu\n.stream tile 0-1215\n"
    "    get $m10, 0\n    get $m11, 1\n    addi $m12, $m10, 1\n    cmpult $m13, $m12, $m11\n"
    "    brnz $m13, hn\n    setzi $m12, 0\nhn:\n    addi $m14, $m10, -1\n    brneg $m14, wp\n    br hp\n"
    "wp:\n    addi $m14, $m11, -1\nhp:\n    mov $m1, $m10\n    run coef, $m1\n    sync 0\n"
    "    setzi $m15, %d\nstep:\n    setzi $m1, 0x8000\n    runall mv, $m1\n    sync 0\n    sync 1\n"
    "    setzi $m2, 0x8000\n    recv $m2, $m14, 24\n    setzi $m3, 0x3000\n    send $m3, $m12, 24\n    rxwait\n"
    "    brnzdec $m15, step\n    sync 1\n    halt\n"
    "coef:\n    setzi $m2, 0x1000\n    ld128putcs $m2, 0\n    addi $m2, $m2, 16\n    ld128putcs $m2, 1\n    exit\n"
    "mv:\n    get $m1, 2\n    shli $m2, $m1, 9\n    add $m2, $m2, $m0\n    ampzero\n    rpti 32, 2\n"
    "    ld64step $a0, $m2, 8\n    f32v2amp $a0\n    ampget $a0, 0\n    ampget $a2, 1\n    shli $m3, $m1, 4\n"
    "    setzi $m4, 0x3000\n    add $m3, $m3, $m4\n    st64 $a0, $m3, 0\n    st64 $a2, $m3, 8\n    exit\n";

/* Assemble the program for `steps` supersteps (steps >= 1). */
static inline ts_status ts_bench_ipu_bsp_program(int steps, const ts_isa *isa, const char *name,
                                                 ts_program **out, ts_err *err)
{
    ts_buf src = TS_BUF_INIT;
    ts_buf_printf(&src, ts_bench_ipu_bsp_body, steps - 1);
    ts_status rc = src.oom ? ts_err_set(err, TS_ENOMEM, "out of memory")
                           : ts_asm(out, name, ts_buf_str(&src), src.len, isa, err);
    ts_buf_free(&src);
    return rc;
}

#endif
