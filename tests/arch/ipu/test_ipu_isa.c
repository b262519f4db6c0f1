/* tests/arch/ipu/test_ipu_isa.c — the IPU instruction groups, each with values checked: integer
 * ALU and branches, repeat loops, loads and stores with their alignment and range rules, f32 and
 * f16 scalar and vector arithmetic, the AMP, context rules and barrel timing. Every program runs
 * in the fast mode, in lockstep and on three threads, which must agree (ipu_test_run3). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "core/program.h"
#include "tests/arch/ipu/ipu_test.h"

/* Run `worker` on worker 0 of tile 0 (the supervisor starts it and waits), then halt. */
static char *one_worker(const char *worker, const char *data)
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_printf(&b, ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  run w, $m1\n  sync 0\n  halt\nw:\n%s\n  exit\n%s\n",
                  worker, data ? data : "");
    return b.data;
}

START_TEST(alu_and_branches)
{
    char *p = one_worker("  setzi $m1, 7\n  setzi $m2, -3\n  add $m3, $m1, $m2\n  sub $m4, $m1, $m2\n"
                         "  mul $m5, $m1, $m2\n  shli $m6, $m1, 4\n  shri $m7, $m2, 28\n  cmpslt $m8, $m2, $m1\n"
                         "  cmpult $m9, $m2, $m1\n  xor $m10, $m1, $m2\n  andi $m11, $m2, 0xff\n"
                         "  setzi $m12, 4\n  setzi $m13, 0\n"
                         "loop:\n  addi $m13, $m13, 3\n  brnzdec $m12, loop\n"
                         "  get $m14, 2\n  setzi $m15, 0x100\n"
                         "  st32 $m3, $m15, 0\n  st32 $m4, $m15, 4\n  st32 $m5, $m15, 8\n  st32 $m6, $m15, 12\n"
                         "  st32 $m7, $m15, 16\n  st32 $m8, $m15, 20\n  st32 $m9, $m15, 24\n  st32 $m10, $m15, 28\n"
                         "  st32 $m11, $m15, 32\n  st32 $m13, $m15, 36\n  st32 $m14, $m15, 40\n"
                         "  setzi $m1, 0\n  brz $m1, skip\n  st32 $m1, $m15, 36\nskip:\n"
                         "  setzi $m2, -1\n  brneg $m2, neg\n  st32 $m1, $m15, 36\nneg:\n",
                         NULL);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_int_eq((int32_t)ipu_peek32(&r, 0, 0x100), 4);
    ck_assert_int_eq((int32_t)ipu_peek32(&r, 0, 0x104), 10);
    ck_assert_int_eq((int32_t)ipu_peek32(&r, 0, 0x108), -21);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x10c), 112);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x110), 15);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x114), 1);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x118), 0);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x11c), 7u ^ (uint32_t)-3);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x120), 0xfd);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x124), 15); /* brnzdec: 5 passes; brz and brneg skipped the stores */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x128), 0);  /* worker id */
    ipu_run_free(&r);
    free(p);
}
END_TEST

START_TEST(repeat_loops)
{
    char *p = one_worker("  setzi $m1, 0\n  setzi $m2, 0\n  rpti 5, 2\n  addi $m1, $m1, 1\n  addi $m2, $m2, 2\n"
                         "  setzi $m3, 0\n  rpt $m3, 1\n  addi $m1, $m1, 100\n"
                         "  setzi $m3, 3\n  rpt $m3, 1\n  addi $m2, $m2, 1\n"
                         "  setzi $m15, 0x100\n  st32 $m1, $m15, 0\n  st32 $m2, $m15, 4\n", NULL);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x100), 5);  /* rpt 0 skipped its body */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x104), 13);
    /* issues: 2 setzi + rpti + 10 body + setzi + rpt (skip) + setzi + rpt + 3 body + setzi + 2 st + exit = 24 */
    ck_assert_uint_eq(r.r.util[0].busy, 24 + 4);     /* plus the supervisor's setzi, run, sync, halt */
    ipu_run_free(&r);
    free(p);
}
END_TEST

START_TEST(repeat_body_rules)
{
    const char *p = ".arch ipu\n.stream tile 0\n  rpti 2, 2\n  nop\n  br x\nx:\n  halt\n";
    ipu_run r;
    ipu_test_run("ipu_tiny4", NULL, p, false, 1, &r);
    ck_assert_int_eq(r.rc, TS_EINPUT); /* a program the loader refuses is bad input (exit 2) */
    ck_assert_int_eq(r.err.tile, 0);
    ck_assert_ptr_nonnull(strstr(r.err.msg, "inside the repeat body"));
    ipu_run_free(&r);
}
END_TEST

/* The loader's operand checks, op by op: every register operand of every instruction given a
 * register its class does not allow (an $a for $m, an $m for $a, an odd $a for a pair, an $a not
 * a multiple of 4 for a quad, 32 for any register) is refused with the operand's number and what
 * it must be, the other operands valid; a branch past the end of the stream is refused. */
START_TEST(operand_classes)
{
    int checked = 0;
    for (int op = 0; op < IPU_OP_COUNT; op++) {
        const char *cls = ts_ipu_opfacts[op].classes;
        for (int bad = 0; cls[bad]; bad++) {
            int32_t v;
            const char *want;
            switch (cls[bad]) {
            case 'm': v = IPU_AREG0 + 1; want = "must be an $m register"; break;
            case 'a': v = 2; want = "must be an $a register"; break;
            case 'p': v = IPU_AREG0 + 3; want = "must be an even $a register (a pair)"; break;
            case 'q': v = IPU_AREG0 + 2; want = "must be an $a register that is a multiple of 4 (a quad)"; break;
            case 'x': v = 32; want = "must be a register"; break;
            default: continue;
            }
            ts_program *p = ts_program_create("ipu");
            ck_assert_ptr_nonnull(p);
            ts_stream *s = ts_program_stream(p, 0, 0);
            ck_assert_ptr_nonnull(ts_stream_emit(s, IPU_OP_NOP));
            ts_insn *in = ts_stream_emit(s, (uint16_t)op);
            ck_assert_ptr_nonnull(in);
            for (int k = 0; cls[k]; k++)
                in->a[k] = cls[k] == 'm' ? 1 : cls[k] == 'l' ? 0 : strchr("apqx", cls[k]) ? IPU_AREG0 + 4 : 3;
            in->a[bad] = v;
            ipu_run r;
            ipu_test_run_program("ipu_tiny4", NULL, p, false, 1, &r);
            char line[160];
            snprintf(line, sizeof line, "pc 1: %s operand %d %s", ts_ipu_isa.ops[op].mnemonic, bad + 1, want);
            ck_assert_msg(r.rc == TS_EINPUT && strstr(r.err.msg, line), "%s: got '%s'", line, r.err.msg);
            ipu_run_free(&r);
            ts_program_destroy(p);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 100);
    ts_program *p = ts_program_create("ipu");
    ck_assert_ptr_nonnull(p);
    ts_insn *br = ts_stream_emit(ts_program_stream(p, 0, 0), IPU_OP_BR);
    ck_assert_ptr_nonnull(br);
    br->a[0] = 2; /* past the end of a stream of one */
    ipu_run r;
    ipu_test_run_program("ipu_tiny4", NULL, p, false, 1, &r);
    ck_assert_msg(r.rc == TS_EINPUT && strstr(r.err.msg, "pc 0: br target 2 is outside the stream"), "%s", r.err.msg);
    ipu_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

static const char mem_data[] =
    ".data tile 0 0x200\n"
    "  .word 0x11111111, 0x22222222, 0x33333333, 0x44444444, 0x55555555, 0x66666666\n"
    "  .half 0x3c00, 0xbeef\n"
    "  .byte 0x7f, 0x80, 0, 0\n";

START_TEST(loads_and_stores)
{
    char *p = one_worker("  setzi $m1, 0x200\n  ld32 $m2, $m1, 4\n  ld64 $a0, $m1, 8\n  ld128 $a4, $m1, 0\n"
                         "  ld32step $m3, $m1, 8\n  ld32 $m4, $m1, 0\n"
                         "  setzi $m1, 0x218\n  ldz16 $m5, $m1, 2\n  ldb16 $a8, $m1, 0\n  ldz8 $m6, $m1, 5\n"
                         "  setzi $m15, 0x300\n  st32 $m2, $m15, 0\n  st64 $a0, $m15, 8\n  st64 $a4, $m15, 16\n"
                         "  st64 $a6, $m15, 24\n  st32 $m3, $m15, 32\n  st32 $m4, $m15, 36\n  st32 $m5, $m15, 40\n"
                         "  st32 $a8, $m15, 44\n  st32 $m6, $m15, 48\n"
                         "  setzi $m7, 0x340\n  st32step $m5, $m7, 4\n  st32step $m6, $m7, 4\n  st32 $m7, $m15, 52\n",
                         mem_data);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x300), 0x22222222);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x308), 0x33333333);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x30c), 0x44444444);
    for (unsigned i = 0; i < 4; i++)
        ck_assert_uint_eq(ipu_peek32(&r, 0, 0x310 + 4 * i), 0x11111111u * (i + 1));
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x320), 0x11111111); /* ld32step loads, then steps */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x324), 0x33333333); /* base moved by 8 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x328), 0xbeef);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x32c), 0x3c003c00);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x330), 0x80);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x340), 0xbeef);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x344), 0x80);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x334), 0x348);
    /* 7 loads of 4+8+16+4+4+2+2+1 ... bytes; memory traffic is counted by width */
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_SRAM], (4 + 8 + 16 + 4 + 4 + 2 + 2 + 1) + (4 + 8 * 3 + 4 * 6 + 4 * 2));
    ipu_run_free(&r);
    free(p);
}
END_TEST

static void expect_error(const char *prog, const char *cfg, const char *const *sets, const char *needle,
                         int64_t tile)
{
    /* every mode stops at the same place with the same words */
    ipu_run r;
    ipu_test_modes(cfg, sets, prog, &r);
    ck_assert_int_eq(r.rc, TS_ESIM);
    ck_assert_msg(strstr(r.err.msg, needle) != NULL, "message '%s' lacks '%s'", r.err.msg, needle);
    ck_assert_int_eq(r.err.tile, tile);
    ck_assert_int_ge(r.err.cycle, 0);
    ipu_run_free(&r);
}

/* A context that comes back to the same state at a backward branch, with nothing written on the
 * tile since and nothing else able to write it, loops forever: every mode stops there, naming the
 * tile, the context, the pc and the first pass's cycle (core/loopmark.h). */
START_TEST(endless_loops)
{
    static const char spin[] = ".arch ipu\n.stream tile 1\n  setzi $m1, 3\nloop:\n  addi $m2, $m1, 1\n  br loop\n";
    expect_error(spin, "ipu_tiny4", NULL,
                 "endless loop: this branch comes back to the state it had at cycle 2 (every register the same, "
                 "nothing written since to tile memory, accumulators or the exchange), so it repeats forever: "
                 "supervisor at pc 2", 1);
    /* nested loops: the inner one is counted, the outer one never ends */
    char *p = one_worker("outer:\n  setzi $m2, 3\ninner:\n  addi $m3, $m3, 1\n  brnzdec $m2, inner\n"
                         "  setzi $m3, 0\n  br outer\n", NULL);
    expect_error(p, "ipu_tiny4", NULL, "so it repeats forever: worker 0 at pc 8", 0);
    free(p);
    /* a worker that goes round eight states while another counts beside it, out of step
     * (workers_run): its marks are taken there as issue cycle by cycle takes them, so when the other
     * has left, every mode names the same mark's cycle */
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  run spin, $m1\n  run count, $m1\n  sync 0\n  halt\n"
                 "spin:\n  addi $m2, $m2, 1\n  andi $m2, $m2, 7\n  br spin\ncount:\n  setzi $m3, 40\nagain:\n"
                 "  brnzdec $m3, again\n  exit\n",
                 "ipu_tiny4", NULL, "so it repeats forever: worker 0 at pc 7", 0);
    /* registers the same at every pass, but each pass stores (the count it reads back and leaves at
     * 100): no endless loop, whatever the effects are counted from */
    p = one_worker("  setzi $m2, 0x200\n  setzi $m5, 100\nloop:\n  ld32 $m3, $m2, 0\n  sub $m4, $m3, $m5\n"
                   "  brz $m4, done\n  addi $m3, $m3, 1\n  st32 $m3, $m2, 0\n  setzi $m3, 0\n  setzi $m4, 0\n"
                   "  br loop\ndone:\n", NULL);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x200), 100);
    ipu_run_free(&r);
    free(p);
}
END_TEST

/* Worker 0 polls a word that worker 1 stores after a counted delay: worker 0's registers come back
 * the same on every pass, but worker 1 may still write, so this is no endless loop. When worker 1
 * leaves without storing, worker 0 is alone and its loop is endless. */
static const char poll_prog[] =
    ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  run spin, $m1\n  run set, $m1\n  sync 0\n  halt\n"
    "spin:\n  setzi $m2, 0x200\nwait:\n  ld32 $m3, $m2, 0\n  brz $m3, wait\n  st32 $m3, $m2, 4\n  exit\n"
    "set:\n  setzi $m2, 0x200\n  setzi $m4, 50\ndelay:\n  brnzdec $m4, delay\n  setzi $m3, %d\n"
    "  st32 $m3, $m2, 0\n  exit\n";

START_TEST(polling_another_worker_is_no_endless_loop)
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_printf(&b, poll_prog, 9);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, b.data, &r);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x204), 9);
    ipu_run_free(&r);
    ts_buf_free(&b);
    ts_buf_printf(&b, poll_prog, 0); /* stores 0: worker 0 waits for ever */
    expect_error(b.data, "ipu_tiny4", NULL, "so it repeats forever: worker 0 at pc 7", 0);
    ts_buf_free(&b);
}
END_TEST

START_TEST(access_rules)
{
    char *p = one_worker("  setzi $m1, 0x204\n  ld64 $a0, $m1, 0\n", NULL);
    expect_error(p, "ipu_tiny4", NULL, "ld64 address 516 is not 8-byte aligned: worker 0 at pc 5", 0);
    free(p);
    /* cycle: run at 1 gives worker 0 its first slot at 6; setzi at 6, ld64 at 12 */
    ipu_run r;
    p = one_worker("  setzi $m1, 0x204\n  ld64 $a0, $m1, 0\n", NULL);
    ipu_test_run("ipu_tiny4", NULL, p, false, 1, &r);
    ck_assert_int_eq(r.err.cycle, 12);
    ipu_run_free(&r);
    free(p);
    p = one_worker("  setzi $m1, 0x10000\n  st32 $m1, $m1, 0\n", NULL);
    expect_error(p, "ipu_tiny4", NULL, "st32 address 65536 is out of range", 0);
    free(p);
    p = one_worker("  setzi $m1, -4\n  ld32 $m2, $m1, 0\n", NULL);
    expect_error(p, "ipu_tiny4", NULL, "out of range", 0);
    free(p);
    p = one_worker("  setzi $m1, 0x100\n  ld128 $a0, $m1, 0\n", NULL);
    const char *sets[] = {"tile.interleaved_base=32768", NULL};
    expect_error(p, "ipu_tiny4", sets, "below the interleaved memory", 0);
    const char *sets8[] = {"tile.load_bytes_per_cycle=8", NULL};
    expect_error(p, "ipu_tiny4", sets8, "ld128 needs tile.load_bytes_per_cycle >= 16", 0);
    free(p);
}
END_TEST

/* Six workers in repeat loops run in closed form in the fast mode; the one whose load leaves
 * the memory first in cycles (worker 5, after 5 loads) is the one reported, as in lockstep. */
START_TEST(closed_form_error_order)
{
    const char *p = ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  runall w, $m1\n  sync 0\n  halt\n"
                    "w:\n  get $m1, 2\n  muli $m2, $m1, 3\n  setzi $m3, 20\n  sub $m3, $m3, $m2\n  shli $m3, $m3, 2\n"
                    "  setzi $m4, 65536\n  sub $m4, $m4, $m3\n  rpti 100, 1\n  ld32step $a0, $m4, 4\n  exit\n";
    expect_error(p, "ipu_tiny4", NULL, "ld32 address 65536 is out of range (tile memory is 65536 bytes): worker 5 at pc 12", 0);
}
END_TEST

/* Worker loops that store or load coefficients run without the barrel's bookkeeping too (in the
 * order of cycle-by-cycle issue: workers_run in ipu_exec.c), and give what issue by issue gives
 * (ipu_test_run3 compares the modes, tile memory included): each worker copies its own block; all
 * six copy one block into one place; all six load the same coefficient blocks, the first AMP op
 * of the body before its loads; all six accumulate into one word through one pointer, reading
 * what the others stored. */
static const char loop_head[] = ".arch ipu\n.data tile 0 0x2000\n"
                                "  .f32 1.5, -2.25, 0.5, 4.0, 3.0, 0.125, -1.0, 2.5\n"
                                "  .f32 0.75, 1.25, -0.5, 6.0, 2.0, -3.5, 1.0, 0.25\n"
                                ".stream tile 0\n  setzi $m1, 12\n  runall w, $m1\n  sync 0\n  halt\n"
                                "w:\n  get $m1, 2\n  shli $m7, $m1, 4\n  addi $m7, $m7, 0x7000\n";

static uint64_t loop_run(const char *body, ipu_run *r)
{
    size_t n = strlen(loop_head) + strlen(body) + 1;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    snprintf(p, n, "%s%s", loop_head, body);
    ipu_test_run3("ipu_tiny4", NULL, p, r);
    free(p);
    return r->m->t[0].cf_turns; /* turns without the barrel */
}

START_TEST(closed_form_stores)
{
    ipu_run r;
    /* each worker its own 48 bytes: ($m1 x 48) */
    ck_assert_uint_gt(loop_run("  muli $m3, $m1, 48\n  addi $m3, $m3, 0x3000\n  setzi $m2, 0x2000\n"
                               "  rpt $m0, 2\n  ld32step $a1, $m2, 4\n  st32step $a1, $m3, 4\n  exit\n", &r), 0);
    for (unsigned w = 0; w < 6; w++)
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x3000 + 48 * w + 44), 6.0f); /* word 11 */
    ipu_run_free(&r);
    /* all six the same: one place */
    ck_assert_uint_gt(loop_run("  setzi $m3, 0x3000\n  setzi $m2, 0x2000\n"
                               "  rpt $m0, 2\n  ld32step $a1, $m2, 4\n  st32step $a1, $m3, 4\n  exit\n", &r), 0);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x3000 + 4), -2.25f);
    ipu_run_free(&r);
    /* the same coefficient blocks: slot 0 from 0x2000, then 0x2010, ...; the AMP first */
    ck_assert_uint_gt(loop_run("  setzi $m5, 0x2000\n  ld128putcs $m5, 0\n  shli $m2, $m1, 3\n  addi $m2, $m2, 0x2000\n"
                               "  ld64 $a0, $m2, 0\n  ampzero\n  setzi $m4, 3\n"
                               "  rpt $m4, 3\n  f32v2amp $a0\n  addi $m5, $m5, 16\n  ld128putcs $m5, 0\n"
                               "  ampget $a2, 0\n  st64 $a2, $m7, 0\n  exit\n", &r), 0);
    for (unsigned w = 0; w < 6; w++) { /* unit 0 += c0 x0 + c1 x1 over the blocks at 0x2000, 0x2010, 0x2020 */
        float x0 = ipu_peekf(&r, 0, 0x2000 + 8 * w), x1 = ipu_peekf(&r, 0, 0x2004 + 8 * w), acc = 0.0f;
        for (unsigned b = 0; b < 3; b++) {
            float s = ipu_peekf(&r, 0, 0x2000 + 16 * b) * x0 + ipu_peekf(&r, 0, 0x2004 + 16 * b) * x1;
            acc += s;
        }
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x7000 + 16 * w), acc);
    }
    ipu_run_free(&r);
    /* one word, read back by every worker */
    ck_assert_uint_gt(loop_run("  setzi $m3, 0x3000\n  shli $m2, $m1, 2\n  addi $m2, $m2, 0x2000\n  ld32 $a2, $m2, 0\n"
                               "  rpt $m0, 3\n  ld32 $a1, $m3, 0\n  f32add $a1, $a1, $a2\n  st32 $a1, $m3, 0\n  exit\n", &r),
                      0);
    ipu_run_free(&r);
}
END_TEST

/* The lowering's loop bodies with six workers in step (started by one runall, running the same
 * code): the fast mode does each turn's instruction for all six at once (in_step_run in
 * ipu_exec.c), and ipu_test_run3 checks it against issue cycle by cycle, tile memory included.
 * The AMP body as lwi_emit_mm emits it (four coefficient loads through one pointer, an input pair,
 * f16v4amp), a copy-and-add body with stores, a copy by 128-bit loads and 64-bit stores, repeat
 * counts that differ between the workers (they leave the body apart), and stores into a page that
 * is not there yet (that turn goes through the full executor, which adds the page). */
static uint64_t step_run(const char *body, ipu_run *r)
{
    loop_run(body, r);
    return r->m->t[0].step_turns;
}

START_TEST(in_step_bodies)
{
    ipu_run r;
    static const char amp[] = "  rpt $m0, 10\n  ld128putcs $m5, 0\n  addi $m5, $m5, 16\n  ld128putcs $m5, 1\n"
                              "  addi $m5, $m5, 16\n  ld128putcs $m5, 2\n  addi $m5, $m5, 16\n  ld128putcs $m5, 3\n"
                              "  addi $m5, $m5, 16\n  ld64step $a0, $m4, 8\n  f16v4amp $a0\n"
                              "  ampget $a2, 0\n  st64 $a2, $m7, 0\n  exit\n";
    char text[1024];
    /* one pass: unit 0's four halves are the first 8 bytes at 0x2000, the inputs each worker's 8 */
    snprintf(text, sizeof text, "  setzi $m5, 0x2000\n  shli $m4, $m1, 3\n  addi $m4, $m4, 0x2000\n  ampzero\n"
                                "  setzi $m0, 1\n%s", amp);
    ck_assert_uint_ge(step_run(text, &r), 10);
    for (unsigned w = 0; w < 6; w++) {
        float wt[4], in[4];
        for (unsigned j = 0; j < 4; j++) {
            wt[j] = ts_f16_to_f32((uint16_t)(ipu_peek32(&r, 0, 0x2000 + 4 * (j / 2)) >> (16 * (j % 2))));
            in[j] = ts_f16_to_f32((uint16_t)(ipu_peek32(&r, 0, 0x2000 + 8 * w + 4 * (j / 2)) >> (16 * (j % 2))));
        }
        float s = wt[0] * in[0] + wt[1] * in[1];
        s += wt[2] * in[2];
        s += wt[3] * in[3];
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x7000 + 16 * w), 0.0f + s);
    }
    ipu_run_free(&r);
    /* twelve passes over 768 bytes of weights, the inputs of workers 0, 2 and 4 (1, 3, 5) the same */
    snprintf(text, sizeof text, "  setzi $m5, 0x2000\n  andi $m8, $m1, 1\n  shli $m4, $m8, 3\n  addi $m4, $m4, 0x2000\n"
                                "  ampzero\n%s", amp);
    ck_assert_uint_ge(step_run(text, &r), 120);
    ck_assert_uint_eq(r.m->t[0].span_passes, 12); /* the passes as one span (span_run) */
    ipu_run_free(&r);
    /* rows added and stored, each worker its own output row: 12 passes of 4 */
    static const char add[] = "  shli $m2, $m1, 2\n  addi $m2, $m2, 0x2000\n  addi $m6, $m2, 8\n"
                              "  muli $m3, $m1, 48\n  addi $m3, $m3, %s\n"
                              "  rpt $m0, 4\n  ld32step $a1, $m2, 4\n  ld32step $a2, $m6, 4\n  f32add $a3, $a1, $a2\n"
                              "  st32step $a3, $m3, 4\n  exit\n";
    snprintf(text, sizeof text, add, "0x3000");
    ck_assert_uint_ge(step_run(text, &r), 48);
    for (unsigned w = 0; w < 6; w++)
        for (unsigned k = 0; k < 12; k++) {
            unsigned i = w + k; /* words 0x2000 + 4i and 0x2008 + 4i */
            float want = (i < 16 ? ipu_peekf(&r, 0, 0x2000 + 4 * i) : 0.0f) + (i + 2 < 16 ? ipu_peekf(&r, 0, 0x2008 + 4 * i) : 0.0f);
            ck_assert_float_eq(ipu_peekf(&r, 0, 0x3000 + 48 * w + 4 * k), want);
        }
    ck_assert_uint_eq(r.m->t[0].span_passes, 11); /* the first pass's store adds the page */
    ipu_run_free(&r);
    /* the same with a pointer also read by another op: pass by pass (no span), the same words */
    static const char add_rd[] = "  shli $m2, $m1, 2\n  addi $m2, $m2, 0x2000\n  addi $m6, $m2, 8\n"
                                 "  muli $m3, $m1, 48\n  addi $m3, $m3, 0x3000\n"
                                 "  rpt $m0, 5\n  ld32step $a1, $m2, 4\n  ld32step $a2, $m6, 4\n  f32add $a3, $a1, $a2\n"
                                 "  mov $a4, $m6\n  st32step $a3, $m3, 4\n  exit\n";
    ck_assert_uint_ge(step_run(add_rd, &r), 60);
    ck_assert_uint_eq(r.m->t[0].span_passes, 0);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x3000), ipu_peekf(&r, 0, 0x2000) + ipu_peekf(&r, 0, 0x2008));
    ipu_run_free(&r);
    /* the same into page 9, not there until the first store */
    snprintf(text, sizeof text, add, "0x9000");
    ck_assert_uint_ge(step_run(text, &r), 40);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x9000 + 48 * 5 + 4 * 11), 0.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x9000), ipu_peekf(&r, 0, 0x2000) + ipu_peekf(&r, 0, 0x2008));
    ipu_run_free(&r);
    /* 128-bit loads and 64-bit stores in step, the rows set up by integer ops in step: each worker
     * copies the quads w, w + 1, w + 2 (zeros past the data) into page 9, not there until the first
     * store */
    ck_assert_uint_ge(step_run("  muli $m2, $m1, 16\n  addi $m2, $m2, 0x2000\n  setzi $m9, 48\n  mul $m3, $m1, $m9\n"
                               "  sub $m3, $m3, $m9\n  add $m3, $m3, $m9\n  addi $m3, $m3, 0x9000\n  setzi $m0, 3\n"
                               "  rpt $m0, 3\n  ld128step $a0, $m2, 16\n  st64step $a0, $m3, 8\n  st64step $a2, $m3, 8\n"
                               "  exit\n", &r),
                      9);
    for (unsigned w = 0; w < 6; w++)
        for (unsigned k = 0; k < 3; k++)
            for (unsigned j = 0; j < 4; j++) {
                unsigned q = w + k;
                float want = q < 4 ? ipu_peekf(&r, 0, 0x2000 + 16 * q + 4 * j) : 0.0f;
                ck_assert_float_eq(ipu_peekf(&r, 0, 0x9000 + 48 * w + 16 * k + 4 * j), want);
            }
    ipu_run_free(&r);
    /* repeat counts 12 to 17: the workers leave the body one by one, out of step */
    snprintf(text, sizeof text, "  setzi $m5, 0x2000\n  shli $m4, $m1, 3\n  addi $m4, $m4, 0x2000\n  ampzero\n"
                                "  add $m0, $m0, $m1\n%s", amp);
    ck_assert_uint_ge(step_run(text, &r), 120);
    ipu_run_free(&r);
}
END_TEST

/* Row and channel loops in step (a brnzdec loop around a repeat body, as the lowering emits them:
 * the turns in step of in_step_run in ipu_exec.c), checked by ipu_test_run3 against issue cycle by
 * cycle, tile memory included: the AMP loop with its inputs' pointer set again at every pass from
 * another register, the coefficients' pointer going on from pass to pass and the outputs stored
 * row by row; a copy loop whose inner body runs twice a pass, into a page there from the start and
 * into one that is not there yet; counters that differ between the workers (they part at the
 * branch); an inner count the loop changes. A loop such as these, run as one nest of passes
 * checked at once, cost more host instructions than its turns one by one (docs/ipu.md). */
START_TEST(in_step_nests)
{
    ipu_run r;
    static const char amp[] = "  setzi $m5, 0x2000\n  shli $m2, $m1, 3\n  addi $m2, $m2, 0x2000\n"
                              "  muli $m6, $m1, 128\n  addi $m6, $m6, 0x3000\n  setzi $m11, %u\n  setzi $m8, 3\n"
                              "l:\n  ampzero\n  mov $m4, $m2\n"
                              "  rpt $m11, 10\n  ld128putcs $m5, 0\n  addi $m5, $m5, 16\n  ld128putcs $m5, 1\n"
                              "  addi $m5, $m5, 16\n  ld128putcs $m5, 2\n  addi $m5, $m5, 16\n  ld128putcs $m5, 3\n"
                              "  addi $m5, $m5, 16\n  ld64step $a0, $m4, 8\n  f16v4amp $a0\n"
                              "  ampget $a0, 0\n  ampget $a2, 1\n  st32 $a0, $m6, 0\n  st32 $a1, $m6, 4\n"
                              "  st64 $a2, $m6, 8\n  addi $m6, $m6, 32\n  brnzdec $m8, l\n  exit\n";
    char text[1536];
    for (unsigned n = 1; n <= 2; n++) {
        snprintf(text, sizeof text, amp, n);
        ck_assert_uint_ge(step_run(text, &r), 4 * (9 + 10 * n));
        ck_assert_float_ne(ipu_peekf(&r, 0, 0x3000 + 128 * 5), 0.0f); /* (the later passes read zeros) */
        ipu_run_free(&r);
    }
    /* rows of 2 x 2 words copied and added, each worker its own output rows: 5 passes */
    static const char add[] = "  shli $m2, $m1, 2\n  addi $m2, $m2, 0x2000\n  muli $m3, $m1, 64\n  addi $m3, $m3, %s\n"
                              "  setzi $m9, 2\n  setzi $m8, %s\n"
                              "l:\n  mov $m6, $m2\n  rpt $m9, 4\n  ld32step $a1, $m6, 4\n  ld32 $a2, $m6, 4\n"
                              "  f32add $a3, $a1, $a2\n  st32step $a3, $m3, 4\n"
                              "  addi $m2, $m2, 4\n  brnzdec $m8, l\n  exit\n";
    snprintf(text, sizeof text, add, "0x3000", "4");
    ck_assert_uint_ge(step_run(text, &r), 5 * 11);
    for (unsigned w = 0; w < 6; w++)
        for (unsigned k = 0; k < 10; k++) { /* pass p, inner q: words w + p + q and two after */
            unsigned i = w + k / 2 + k % 2;
            ck_assert_float_eq(ipu_peekf(&r, 0, 0x3000 + 64 * w + 4 * k),
                               ipu_peekf(&r, 0, 0x2000 + 4 * i) + ipu_peekf(&r, 0, 0x2008 + 4 * i));
        }
    ipu_run_free(&r);
    /* into the data's page, there from the start */
    snprintf(text, sizeof text, add, "0x2400", "4");
    ck_assert_uint_ge(step_run(text, &r), 5 * 11);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x2400 + 64 * 5 + 4 * 9),
                       ipu_peekf(&r, 0, 0x2000 + 4 * 10) + ipu_peekf(&r, 0, 0x2008 + 4 * 10));
    ipu_run_free(&r);
    /* into page 9, not there until the first store */
    snprintf(text, sizeof text, add, "0x9000", "4");
    ck_assert_uint_ge(step_run(text, &r), 5 * 11);
    ipu_run_free(&r);
    /* counters that differ: worker w makes 3 + (w & 1) passes */
    snprintf(text, sizeof text, add, "0x3000", "2\n  andi $m10, $m1, 1\n  add $m8, $m8, $m10");
    loop_run(text, &r);
    ipu_run_free(&r);
    /* the inner count read from a register the loop changes */
    snprintf(text, sizeof text, add, "0x3000", "4\n  setzi $m9, 1");
    text[strlen(text) - strlen("  addi $m2, $m2, 4\n  brnzdec $m8, l\n  exit\n")] = '\0';
    strncat(text,
            "  addi $m9, $m9, 1\n  andi $m9, $m9, 1\n  addi $m9, $m9, 1\n  addi $m2, $m2, 4\n  brnzdec $m8, l\n  exit\n",
            sizeof text - strlen(text) - 1);
    loop_run(text, &r);
    ipu_run_free(&r);
}
END_TEST

/* Bundles in the loops of workers that are not in step (each starts w turns after worker 0, as
 * the shared-coefficient kernel's workers run apart): workers_run does each bundle's two ops
 * itself (body_issue: the auxiliary op, then the main one, once the main one's access is checked)
 * and must give what issue cycle by cycle gives (ipu_test_run3 compares the modes, tile memory
 * included): a 128-bit load and a 64-bit load, each next to an op that reads the registers the
 * load writes (as they were: the auxiliary op first), stores into a page that is not there until
 * the first one (that bundle goes through the full executor), the AMP's sums read in a bundle. With the loads' pointers run out of
 * memory, every mode stops at the same issue: worker 5's, the first in cycles. */
static const char apart_head[] = ".arch ipu\n.data tile 0 0x2000\n"
                                 "  .f32 1.5, -2.25, 0.5, 4.0, 3.0, 0.125, -1.0, 2.5\n"
                                 "  .f32 0.75, 1.25, -0.5, 6.0, 2.0, -3.5, 1.0, 0.25\n"
                                 ".stream tile 0\n  setzi $m1, 0\n  runall w, $m1\n  sync 0\n  halt\n"
                                 "w:\n  get $m1, 2\n  rpt $m1, 1\n  nop\n"
                                 "  muli $m3, $m1, 80\n  addi $m3, $m3, 0x9000\n  setzi $m5, 0x2000\n"
                                 "  ld128putcs $m5, 0\n  ld128putcs $m5, 1\n  ampzero\n  shli $m6, $m1, 3\n"
                                 "  addi $m6, $m6, 0x2000\n  ld64 $a0, $m6, 0\n  setzi $m7, 0\n  mov $a8, $m7\n"
                                 "  mov $a9, $m7\n  setzi $m2, %s\n  shli $m8, $m1, 4\n  add $m2, $m2, $m8\n"
                                 "  rpti 8, 16\n"
                                 "  {\n  ld128step $a4, $m2, 16\n  f32v2add $a8, $a8, $a4\n  }\n"
                                 "  {\n  ld64step $a0, $m6, 8\n  f32v2amp $a0\n  }\n"
                                 "  {\n  st64step $a8, $m3, 8\n  ampget $a10, 1\n  }\n"
                                 "  {\n  addi $m7, $m7, 1\n  f32v2add $a12, $a10, $a10\n  }\n"
                                 "  st64 $a12, $m3, 0\n  st32 $m7, $m3, 8\n  exit\n";

START_TEST(bundles_apart)
{
    char text[2048];
    snprintf(text, sizeof text, apart_head, "0x2000");
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, text, &r);
    ck_assert_uint_gt(r.m->t[0].cf_turns, 8 * 4);
    for (unsigned w = 0; w < 6; w++) {
        uint64_t out = 0x9000 + 80 * w;
        float s0 = 0.0f, s1 = 0.0f;
        for (unsigned k = 0; k < 8; k++) { /* pass k adds quad w + k - 1's first pair (the one loaded the pass
                                              * before: the add reads its registers before the load writes) */
            ck_assert_float_eq(ipu_peekf(&r, 0, out + 8 * k), s0);
            ck_assert_float_eq(ipu_peekf(&r, 0, out + 8 * k + 4), s1);
            s0 += w + k < 4 ? ipu_peekf(&r, 0, 0x2000 + 16 * (w + k)) : 0.0f;
            s1 += w + k < 4 ? ipu_peekf(&r, 0, 0x2004 + 16 * (w + k)) : 0.0f;
        }
        ck_assert_uint_eq(ipu_peek32(&r, 0, out + 64 + 8), 8); /* the main ops' count */
    }
    ipu_run_free(&r);
    /* from 65536 - 160 the loads leave the 64 KiB where w + k = 10, first for worker 5 (its pass 5) */
    snprintf(text, sizeof text, apart_head, "65376");
    ipu_run e;
    ipu_test_modes("ipu_tiny4", NULL, text, &e);
    ck_assert_int_eq(e.rc, TS_ESIM);
    ck_assert_msg(strstr(e.err.msg, "ld128 address 65536 is out of range") != NULL, "%s", e.err.msg);
    ck_assert_msg(strstr(e.err.msg, "worker 5 at pc") != NULL, "%s", e.err.msg);
    ipu_run_free(&e);
}
END_TEST

START_TEST(context_rules)
{
    expect_error(".arch ipu\n.stream tile 1\n  nop\n  f32add $a0, $a1, $a2\n  halt\n", "ipu_tiny4", NULL,
                 "f32add may only run in a worker: supervisor at pc 1", 1);
    char *p = one_worker("  setzi $m1, 0\n  send $m1, $m1, 1\n", NULL);
    expect_error(p, "ipu_tiny4", NULL, "send may only run in the supervisor: worker 0 at pc 5", 0);
    free(p);
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  run w, $m1\n  sync 0\n  halt\nw:\n  nop\n",
                 "ipu_tiny4", NULL, "worker ran past the end of the code", 0);
}
END_TEST

static const char fp_data[] =
    ".data tile 0 0x200\n"
    "  .f32 1.5, -2.25, 0.5, 4.0\n"
    "  .half 0x3e00, 0x4000, 0xc000, 0x3800\n" /* f16: 1.5, 2.0, -2.0, 0.5 */
    "  .half 0x4000, 0x3e00, 0x3c00, 0x4400\n" /* f16: 2.0, 1.5, 1.0, 4.0 */
    "  .f32 0.1, 3.7\n";

START_TEST(float_arithmetic)
{
    char *p = one_worker("  setzi $m1, 0x200\n  ld64 $a0, $m1, 0\n  ld64 $a2, $m1, 8\n"
                         "  f32add $a4, $a0, $a1\n  f32sub $a5, $a0, $a1\n  f32mul $a6, $a0, $a1\n"
                         "  f32max $a7, $a0, $a1\n  f32min $a8, $a0, $a1\n  mov $a9, $a4\n  f32mac $a9, $a2, $a3\n"
                         "  setzi $m15, 0x300\n  st32 $a4, $m15, 0\n  st32 $a5, $m15, 4\n  st32 $a6, $m15, 8\n"
                         "  st32 $a7, $m15, 12\n  st32 $a8, $m15, 16\n  st32 $a9, $m15, 20\n"
                         "  f32v2add $a4, $a0, $a2\n  f32v2mul $a6, $a0, $a2\n  mov $a8, $a0\n  mov $a9, $a1\n"
                         "  f32v2mac $a8, $a2, $a2\n  f32v2sub $a10, $a0, $a2\n"
                         "  st64 $a4, $m15, 24\n  st64 $a6, $m15, 32\n  st64 $a8, $m15, 40\n  st64 $a10, $m15, 48\n"
                         "  ld64 $a0, $m1, 16\n  ld64 $a2, $m1, 24\n  f16v4add $a4, $a0, $a2\n  f16v4mul $a6, $a0, $a2\n"
                         "  f16v4sub $a8, $a0, $a2\n  f16v2add $a10, $a0, $a2\n  f16v2mul $a11, $a0, $a2\n"
                         "  st64 $a4, $m15, 56\n  st64 $a6, $m15, 64\n  st64 $a8, $m15, 72\n  st64 $a10, $m15, 80\n"
                         "  f16v2tof32 $a4, $a0\n  st64 $a4, $m15, 88\n"
                         "  ld64 $a0, $m1, 32\n  f32v2tof16 $a4, $a0\n  st32 $a4, $m15, 96\n"
                         "  f32toi32 $a5, $a1\n  st32 $a5, $m15, 100\n  setzi $a6, -7\n  f32fromi32 $a6, $a6\n"
                         "  st32 $a6, $m15, 104\n  ldconst $a7, 2.5\n  st32 $a7, $m15, 108\n",
                         fp_data);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x300), -0.75f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x304), 3.75f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x308), -3.375f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x30c), 1.5f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x310), -2.25f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x314), -0.75f + 0.5f * 4.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x318), 2.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x31c), 1.75f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x320), 0.75f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x324), -9.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x328), 1.5f + 0.25f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x32c), -2.25f + 16.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x330), 1.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x334), -6.25f);
    /* f16v4: (1.5, 2, -2, 0.5) op (2, 1.5, 1, 4) */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x338), 0x4300u | 0x4300u << 16);           /* 3.5, 3.5 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x33c), 0xbc00u | 0x4480u << 16);           /* -1, 4.5 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x340), 0x4200u | 0x4200u << 16);           /* 3, 3 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x344), 0xc000u | 0x4000u << 16);           /* -2, 2 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x348), 0xb800u | 0x3800u << 16);           /* -0.5, 0.5 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x34c), 0xc200u | 0xc300u << 16);           /* -3, -3.5 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x350), 0x4300u | 0x4300u << 16);           /* f16v2add */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x354), 0x4200u | 0x4200u << 16);           /* f16v2mul: 3, 3 */
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x358), 1.5f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x35c), 2.0f);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x360), 0x2e66u | 0x4366u << 16);           /* 0.1, 3.7 in f16 */
    ck_assert_int_eq((int32_t)ipu_peek32(&r, 0, 0x364), 3);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x368), -7.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x36c), 2.5f);
    ck_assert_double_eq(ipu_event(&r, "fp16_add"), 4 + 4 + 2 + 2 + 2);
    ck_assert_double_eq(ipu_event(&r, "fp32_mac"), 1 + 2);
    ipu_run_free(&r);
    free(p);
}
END_TEST

START_TEST(half_conversion)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* NaNs */
        ck_assert_uint_eq(ts_f32_to_f16(ts_f16_to_f32((uint16_t)h)), h);
    }
    ck_assert_uint_eq(ts_f32_to_f16(65520.0f), 0x7c00); /* rounds to infinity */
    ck_assert_uint_eq(ts_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even */
    ck_assert_uint_eq(ts_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
}
END_TEST

/* AMP: f32 with 4 conv units (8 MACs/cycle on MK1) and f16 -> f32 with 8 units (32 MACs). */
START_TEST(amp_values)
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  run w, $m1\n  sync 0\n  halt\nw:\n"
                    "  setzi $m1, 0x400\n  ld128putcs $m1, 0\n  addi $m1, $m1, 16\n  ld128putcs $m1, 1\n"
                    "  ampzero\n  setzi $m3, 0x500\n  ld64 $a0, $m3, 0\n  f32v2amp $a0\n  ld64 $a0, $m3, 8\n"
                    "  f32v2amp $a0\n  ampget $a2, 0\n  ampget $a4, 1\n  setzi $m4, 0x600\n"
                    "  st64 $a2, $m4, 0\n  st64 $a4, $m4, 8\n"
                    /* f16: 8 units x 4 halves = 64 bytes of coefficients */
                    "  setzi $m1, 0x800\n  ld128putcs $m1, 0\n  addi $m1, $m1, 16\n  ld128putcs $m1, 1\n"
                    "  addi $m1, $m1, 16\n  ld128putcs $m1, 2\n  addi $m1, $m1, 16\n  ld128putcs $m1, 3\n"
                    "  ampzero\n  setzi $m3, 0x900\n  ld64 $a0, $m3, 0\n  f16v4amp $a0\n  ld64 $a0, $m3, 8\n"
                    "  f16v4amp $a0\n  setzi $m4, 0x700\n  ampget $a2, 0\n  st64 $a2, $m4, 0\n"
                    "  ampget $a2, 1\n  st64 $a2, $m4, 8\n  ampget $a2, 2\n  st64 $a2, $m4, 16\n"
                    "  ampget $a2, 3\n  st64 $a2, $m4, 24\n  exit\n");
    float w32[8] = {1, 2, 3, -1, 0.5f, 0.25f, -2, 4};
    float x32[4] = {1.5f, -2, 3, 0.75f};
    ts_buf_puts(&b, ".data tile 0 0x400\n  .f32");
    for (int i = 0; i < 8; i++)
        ts_buf_printf(&b, "%s %g", i ? "," : "", (double)w32[i]);
    ts_buf_puts(&b, "\n.data tile 0 0x500\n  .f32");
    for (int i = 0; i < 4; i++)
        ts_buf_printf(&b, "%s %g", i ? "," : "", (double)x32[i]);
    float w16[32], x16[8];
    ts_buf_puts(&b, "\n.data tile 0 0x800\n  .half");
    for (int i = 0; i < 32; i++) {
        w16[i] = (float)((i * 7) % 11 - 5) * 0.5f;
        ts_buf_printf(&b, "%s 0x%04x", i ? "," : "", ts_f32_to_f16(w16[i]));
    }
    ts_buf_puts(&b, "\n.data tile 0 0x900\n  .half");
    for (int i = 0; i < 8; i++) {
        x16[i] = (float)(i - 3) * 0.25f;
        ts_buf_printf(&b, "%s 0x%04x", i ? "," : "", ts_f32_to_f16(x16[i]));
    }
    ts_buf_puts(&b, "\n");
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, ts_buf_str(&b), &r);
    for (int u = 0; u < 4; u++) {
        float acc = 0;
        for (int k = 0; k < 2; k++)
            acc += w32[2 * u] * x32[2 * k] + w32[2 * u + 1] * x32[2 * k + 1];
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x600 + 4 * (unsigned)u), acc);
    }
    for (int u = 0; u < 8; u++) {
        float acc = 0;
        for (int k = 0; k < 2; k++) {
            float s = w16[4 * u] * x16[4 * k] + w16[4 * u + 1] * x16[4 * k + 1];
            s += w16[4 * u + 2] * x16[4 * k + 2];
            s += w16[4 * u + 3] * x16[4 * k + 3];
            acc += s;
        }
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x700 + 4 * (unsigned)u), acc);
    }
    ck_assert_uint_eq(r.r.macs, 2 * 8 + 2 * 32);
    ck_assert_double_eq(r.r.flops, 2.0 * (2 * 8 + 2 * 32));
    ck_assert_double_eq(ipu_event(&r, "fp16_mac"), 64);
    ck_assert_double_eq(ipu_event(&r, "fp32_mac"), 16);
    ck_assert_uint_eq(r.r.util[1].busy, 4);
    ipu_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

/* One worker fills the coefficients of 8 f16 units from 0x800 by four ld128putcsstep from one pointer,
 * multiplies the four halves at 0x900 and stores the units' sums at 0x700 (its `exit` after). */
#define AMP_PUTCS8                                                                                                 \
    ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  run w, $m1\n  sync 0\n  halt\nw:\n"                          \
    "  setzi $m1, 0x800\n  ld128putcsstep $m1, 0\n  ld128putcsstep $m1, 1\n"                                    \
    "  ld128putcsstep $m1, 2\n  ld128putcsstep $m1, 3\n"                                                         \
    "  ampzero\n  setzi $m3, 0x900\n  ld64 $a0, $m3, 0\n  f16v4amp $a0\n  setzi $m4, 0x700\n"                   \
    "  ampget $a2, 0\n  st64 $a2, $m4, 0\n  ampget $a2, 1\n  st64 $a2, $m4, 8\n"                                \
    "  ampget $a2, 2\n  st64 $a2, $m4, 16\n  ampget $a2, 3\n  st64 $a2, $m4, 24\n"

/* f16v4amp on halves that are not normal numbers (zeros of both signs, subnormals, an infinity)
 * among normal ones, in the coefficients and the inputs: each unit's sum exactly as the scalar
 * reference gives it from ts_f16_to_f32, bit for bit (the sign of a zero included); the
 * executor converts four or eight halves at once and these lanes by ts_f16_to_f32. */
START_TEST(amp_f16_special)
{
    static const uint16_t wh[32] = {0x0001, 0x3c00, 0x8000, 0x4000, 0x03ff, 0x83ff, 0x3800, 0x0000,
                                    0x7c00, 0x3c00, 0x4200, 0xc000, 0x8001, 0x0200, 0x8200, 0x3555,
                                    0x0000, 0x8000, 0x0000, 0x8000, 0x3c00, 0x3c00, 0x3c00, 0x3c00,
                                    0x0400, 0x0401, 0x7bff, 0xfbff, 0x1234, 0x9234, 0x0010, 0x8010};
    static const uint16_t xh[4] = {0x0003, 0xbc00, 0x8000, 0x4400};
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, AMP_PUTCS8 "  exit\n");
    ts_buf_puts(&b, ".data tile 0 0x800\n  .half");
    for (int i = 0; i < 32; i++)
        ts_buf_printf(&b, "%s 0x%04x", i ? "," : "", wh[i]);
    ts_buf_puts(&b, "\n.data tile 0 0x900\n  .half");
    for (int i = 0; i < 4; i++)
        ts_buf_printf(&b, "%s 0x%04x", i ? "," : "", xh[i]);
    ts_buf_puts(&b, "\n");
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, ts_buf_str(&b), &r);
    for (int u = 0; u < 8; u++) {
        float w[4], x[4];
        for (int k = 0; k < 4; k++) {
            w[k] = ts_f16_to_f32(wh[4 * u + k]);
            x[k] = ts_f16_to_f32(xh[k]);
        }
        float s = w[0] * x[0] + w[1] * x[1];
        s += w[2] * x[2];
        s += w[3] * x[3];
        float acc = 0.0f + s;
        uint32_t want;
        memcpy(&want, &acc, 4);
        ck_assert_msg(ipu_peek32(&r, 0, 0x700 + 4 * (unsigned)u) == want, "unit %d: 0x%08x, want 0x%08x", u,
                      ipu_peek32(&r, 0, 0x700 + 4 * (unsigned)u), want);
    }
    ipu_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

/* ld128putcsstep: ld128putcs whose pointer steps by 16 (the published ld128putcs post-increments its
 * address): four loads from one pointer fill the coefficients of 8 f16 units as four ld128putcs
 * with steps between them do, and leave the pointer 64 bytes on. */
START_TEST(amp_putcs_step)
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, AMP_PUTCS8 "  st32 $m1, $m4, 32\n  exit\n");
    float w16[32], x16[4];
    ts_buf_puts(&b, ".data tile 0 0x800\n  .half");
    for (int i = 0; i < 32; i++) {
        w16[i] = (float)((i * 5) % 13 - 6) * 0.5f;
        ts_buf_printf(&b, "%s 0x%04x", i ? "," : "", ts_f32_to_f16(w16[i]));
    }
    ts_buf_puts(&b, "\n.data tile 0 0x900\n  .half");
    for (int i = 0; i < 4; i++) {
        x16[i] = (float)(i + 1) * 0.75f;
        ts_buf_printf(&b, "%s 0x%04x", i ? "," : "", ts_f32_to_f16(x16[i]));
    }
    ts_buf_puts(&b, "\n");
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, ts_buf_str(&b), &r);
    for (int u = 0; u < 8; u++) {
        float acc = w16[4 * u] * x16[0] + w16[4 * u + 1] * x16[1];
        acc += w16[4 * u + 2] * x16[2];
        acc += w16[4 * u + 3] * x16[3];
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x700 + 4 * (unsigned)u), acc);
    }
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x720), 0x840);
    ipu_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

/* f32v4tof16: four f32 lanes rounded to f16 (nearest even) into a pair, as two f32v2tof16 of the
 * quad's halves; in a bundle it reads its quad at issue, before the bundled load writes a lane. */
START_TEST(f32v4_to_f16)
{
    char *p = one_worker("  setzi $m1, 0x200\n  ld64 $a0, $m1, 0\n  ld64 $a2, $m1, 32\n"
                         "  setzi $m15, 0x300\n  f32v4tof16 $a4, $a0\n  st64 $a4, $m15, 0\n"
                         "  f32v2tof16 $a6, $a0\n  f32v2tof16 $a7, $a2\n  st64 $a6, $m15, 8\n"
                         "  {\n  ld32 $a1, $m1, 8\n  f32v4tof16 $a4, $a0\n  }\n  st64 $a4, $m15, 16\n"
                         "  f32v4tof16 $a4, $a0\n  st64 $a4, $m15, 24\n",
                         fp_data);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    /* (1.5, -2.25, 0.1, 3.7): 0x3e00, 0xc080, 0x2e66, 0x4366 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x300), 0x3e00u | 0xc080u << 16);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x304), 0x2e66u | 0x4366u << 16);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x308), ipu_peek32(&r, 0, 0x300));
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x30c), ipu_peek32(&r, 0, 0x304));
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x310), 0x3e00u | 0xc080u << 16); /* $a1 as before the load */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x318), 0x3e00u | 0x3800u << 16); /* then 0.5 */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x31c), 0x2e66u | 0x4366u << 16);
    ipu_run_free(&r);
    free(p);
}
END_TEST

/* Barrel: a worker issues once every 6 cycles, six workers fill every cycle, the supervisor fills
 * what the workers leave, and a dependent load chain costs the load latency per load. */
START_TEST(barrel_timing)
{
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, ".arch ipu\n.stream tile 0\n  rpti 10, 1\n  nop\n  halt\n", &r);
    ck_assert_uint_eq(r.r.cycles, 12); /* rpti at 0, nops at 1..10, halt at 11 */
    ipu_run_free(&r);
    const char *one = ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  run w, $m1\n  sync 0\n  halt\n"
                      "w:\n  rpti 10, 1\n  nop\n  exit\n";
    ipu_test_run3("ipu_tiny4", NULL, one, &r);
    /* run at 1; worker 0 (slot 0) issues at 6, 12, ..., rpti + 10 nops + exit = 12 issues: 6..72;
     * supervisor sync 0 at 73, halt at 74 */
    ck_assert_uint_eq(r.r.cycles, 75);
    ipu_run_free(&r);
    const char *six = ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  runall w, $m1\n  sync 0\n  halt\n"
                      "w:\n  rpti 10, 1\n  nop\n  exit\n";
    ipu_test_run3("ipu_tiny4", NULL, six, &r);
    /* runall at 1: workers 2..5 first issue at 2..5, worker 0 at 6, worker 1 at 7 (its slot at 1
     * has passed), so worker 1 exits last at 73; sync 0 at 74, halt at 75: six times the work
     * in one cycle more */
    ck_assert_uint_eq(r.r.cycles, 76);
    ck_assert_uint_eq(r.r.util[0].busy, 6 * 12 + 4);
    ipu_run_free(&r);
    const char *chase = ".arch ipu\n.stream tile 0\n  setzi $m1, 0x100\n  rpti 10, 1\n  ld32 $m1, $m1, 0\n  halt\n"
                        ".data tile 0 0x100\n  .word 0x100\n";
    ipu_test_run3("ipu_tiny4", NULL, chase, &r);
    /* setzi 0, rpti 1, loads at 2, 8, ..., 56, halt at 62 */
    ck_assert_uint_eq(r.r.cycles, 63);
    ipu_run_free(&r);
}
END_TEST


/* Dual issue: `{ main ; aux }` issues once; the auxiliary instruction reads the registers as they
 * were at issue, so a load in the main slot feeds the auxiliary one only on the next issue. */
START_TEST(dual_issue)
{
    char *p = one_worker("  setzi $m2, 0x200\n  setzi $m3, 0x300\n  ldconst $a2, 1.5\n  ldconst $a3, 2.5\n"
                         "  ld64 $a0, $m2, 8\n"
                         "  {\n  ld64step $a0, $m2, 8\n  f32v2add $a4, $a0, $a2\n  }\n"
                         "  st64 $a4, $m3, 0\n  st64 $a0, $m3, 8\n"
                         "  {\n  st32 $m2, $m3, 16\n  f32v2mul $a6, $a0, $a0\n  }\n"
                         "  st64 $a6, $m3, 24\n",
                         ".data tile 0 0x200\n  .f32 1.0, 2.0, 3.0, 4.0\n");
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x300), 4.5f); /* 3 + 1.5: the old $a0 */
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x304), 6.5f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x308), 1.0f); /* the bundle's load */
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x30c), 2.0f);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x310), 0x208);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x318), 1.0f);
    ck_assert_float_eq(ipu_peekf(&r, 0, 0x31c), 4.0f);
    /* worker: 4 setup + ld64 + bundle + 2 st64 + bundle + st64 + exit = 11 issues; supervisor 4 */
    ck_assert_uint_eq(r.r.util[0].busy, 11 + 4);
    /* run at 1, worker 0 issues at 6, 12, ..., 66 (exit), sync 0 at 67, halt at 68 */
    ck_assert_uint_eq(r.r.cycles, 69);
    ck_assert_double_eq(ipu_event(&r, "fp32_add"), 2);
    ck_assert_double_eq(ipu_event(&r, "fp32_mul"), 2);
    ck_assert_double_eq(ipu_event(&r, "insn_issue"), 15);
    ipu_run_free(&r);
    free(p);
    /* a software-pipelined sum in a repeat loop of bundles, on six workers (the closed form) */
    const char *six = ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  runall w, $m1\n  sync 0\n  halt\n"
                      "w:\n  setzi $m2, 0x200\n  ld64step $a0, $m2, 8\n  setzi $m1, 0\n  mov $a4, $m1\n  mov $a5, $m1\n"
                      "  rpti 3, 4\n  {\n  ld64step $a0, $m2, 8\n  f32v2add $a4, $a4, $a0\n  }\n"
                      "  f32v2add $a4, $a4, $a0\n  get $m1, 2\n  shli $m1, $m1, 3\n  setzi $m3, 0x300\n"
                      "  add $m3, $m3, $m1\n  st64 $a4, $m3, 0\n  exit\n"
                      ".data tile 0 0x200\n  .f32 1, 2, 3, 4, 5, 6, 7, 8\n";
    ipu_test_run3("ipu_tiny4", NULL, six, &r);
    for (unsigned w = 0; w < 6; w++) {
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x300 + 8 * w), 16.0f);
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x304 + 8 * w), 20.0f);
    }
    /* per worker: 5 + rpti + 3 bundles + 6 + exit = 16 issues */
    ck_assert_uint_eq(r.r.util[0].busy, 6 * 16 + 4);
    ipu_run_free(&r);
}
END_TEST

static void expect_load_error(const char *prog, const char *needle)
{
    ipu_run r;
    ipu_test_run("ipu_tiny4", NULL, prog, false, 1, &r);
    ck_assert_int_eq(r.rc, TS_EINPUT);
    ck_assert_msg(strstr(r.err.msg, needle) != NULL, "message '%s' lacks '%s'", r.err.msg, needle);
    ipu_run_free(&r);
}

START_TEST(bundle_rules)
{
    char *p = one_worker("  {\n  ld64 $a4, $m2, 0\n  f32v2add $a4, $a0, $a2\n  }\n", NULL);
    expect_load_error(p, "pc 5: ld64 uses a register that f32v2add in the same bundle writes");
    free(p);
    p = one_worker("  {\n  st64 $a4, $m2, 0\n  f32v2add $a4, $a0, $a2\n  }\n", NULL);
    expect_load_error(p, "st64 uses a register that f32v2add in the same bundle writes");
    free(p);
    p = one_worker("  {\n  f32add $a0, $a1, $a2\n  f32add $a3, $a1, $a2\n  }\n", NULL);
    expect_load_error(p, "f32add cannot lead a bundle");
    free(p);
    p = one_worker("  {\n  ld32 $m1, $m2, 0\n  st32 $m1, $m2, 4\n  }\n", NULL);
    expect_load_error(p, "st32 cannot be the second instruction of a bundle");
    free(p);
    p = one_worker("  {\n  nop\n  nop\n  nop\n  }\n", NULL);
    expect_load_error(p, "a bundle is {, one main-pipeline instruction, one auxiliary one and }");
    free(p);
    p = one_worker("  nop\n  }\n", NULL);
    expect_load_error(p, "pc 5: } without {");
    free(p);
    p = one_worker("  br x\n  {\nx:\n  nop\n  nop\n  }\n", NULL);
    expect_load_error(p, "br target 6 is inside a bundle");
    free(p);
    p = one_worker("  rpti 2, 2\n  {\n  nop\n  nop\n  }\n", NULL);
    expect_load_error(p, "repeat body of 2 instructions ends inside a bundle");
    free(p);
    /* a bundle of worker instructions in the supervisor names the one that may not run there */
    expect_error(".arch ipu\n.stream tile 0\n  {\n  nop\n  f32add $a0, $a1, $a2\n  }\n  halt\n", "ipu_tiny4", NULL,
                 "f32add may only run in a worker: supervisor at pc 2", 0);
}
END_TEST

/* The paired load/store instructions: one issue loads 8 (ldst64pace) or 16 bytes (ld2xst64pace)
 * and stores 8; the stored pair is read before the loads write; every pointer steps 8 bytes. */
START_TEST(paced_loads_and_stores)
{
    char *p = one_worker("  setzi $m1, 0x200\n  setzi $m2, 0x300\n  ld64 $a2, $m1, 8\n"
                         "  ldst64pace $a0, $a2, $m1, $m2\n"     /* a0 := (1, 2); 0x300 := (3, 4) */
                         "  ldst64pace $a2, $a2, $m1, $m2\n"     /* a2 := (3, 4); 0x308 := old a2 = (3, 4) */
                         "  setzi $m3, 0x220\n"
                         "  ld2xst64pace $a4, $a0, $m1, $m3, $m2\n" /* a4:5 := (5, 6), a6:7 := (9, 10); 0x310 := (1, 2) */
                         "  st64 $a4, $m2, 0\n  st64 $a6, $m2, 8\n"
                         "  st32 $m1, $m2, 16\n  st32 $m3, $m2, 20\n",
                         ".data tile 0 0x200\n  .f32 1, 2, 3, 4, 5, 6, 7, 8, 9, 10\n");
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    static const float want[] = {3, 4, 3, 4, 1, 2, 5, 6, 9, 10};
    for (unsigned i = 0; i < 10; i++)
        ck_assert_float_eq(ipu_peekf(&r, 0, 0x300 + 4 * i), want[i]);
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x328), 0x218); /* $m1 stepped three times */
    ck_assert_uint_eq(ipu_peek32(&r, 0, 0x32c), 0x228);
    /* loads 8 + 8 + 8 + 16, stores 8 + 8 + 8 + 8 + 8 + 4 + 4 */
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_SRAM], (8 + 8 + 8 + 16) + (8 * 5 + 4 * 2));
    ipu_run_free(&r);
    free(p);
    p = one_worker("  setzi $m1, 0x100\n  ld2xst64pace $a0, $a4, $m1, $m1, $m2\n", NULL);
    const char *sets[] = {"tile.interleaved_base=32768", NULL};
    expect_error(p, "ipu_tiny4", sets, "ld2xst64pace: two loads in one cycle need interleaved memory", 0);
    const char *sets8[] = {"tile.load_bytes_per_cycle=8", NULL};
    expect_error(p, "ipu_tiny4", sets8, "ld2xst64pace needs tile.load_bytes_per_cycle >= 16", 0);
    free(p);
    p = one_worker("  setzi $m1, 0x104\n  ldst64pace $a0, $a4, $m1, $m1\n", NULL);
    expect_error(p, "ipu_tiny4", NULL, "ldst64pace address 260 is not 8-byte aligned", 0);
    free(p);
}
END_TEST

/* Bytes a register operand class holds (0 for a non-register class). */
static uint32_t class_bytes(char c)
{
    return c == 'q' ? 16 : c == 'p' ? 8 : (c == 'x' || c == 'a' || c == 'm') ? 4 : 0;
}

/* The .def's memrd/memwr columns agree with what the loads and stores move: a load ("ld", unit
 * MEM) reads its destination's width (the narrow ldz16, ldz8, ldb16 less), a store writes its
 * source's, a paired op (ld..st..) both; ld128putcs reads 16 bytes of coefficients; every other op
 * moves none of its own. */
START_TEST(mem_bytes_column)
{
    for (int op = 0; op < IPU_OP_COUNT; op++) {
        const char *mn = ts_ipu_isa.ops[op].mnemonic, *cls = ts_ipu_opfacts[op].classes;
        uint32_t rd, wr;
        ts_ipu_op_mem_bytes(op, &rd, &wr);
        ck_assert_uint_eq(rd, ts_ipu_opfacts[op].memrd);
        ck_assert_uint_eq(wr, ts_ipu_opfacts[op].memwr);
        if (op == IPU_OP_LD128PUTCS || op == IPU_OP_LD128PUTCSSTEP) {
            ck_assert_uint_eq(rd, 16);
            ck_assert_uint_eq(wr, 0);
        } else if (ts_ipu_opfacts[op].unit != IPU_U_MEM) {
            ck_assert_msg(rd == 0 && wr == 0, "%s is no load or store but moves %u/%u bytes", mn, rd, wr);
        } else if (!strncmp(mn, "st", 2)) {
            ck_assert_msg(rd == 0 && wr == class_bytes(cls[0]), "%s: %u/%u bytes", mn, rd, wr);
        } else {
            ck_assert_msg(!strncmp(mn, "ld", 2), "%s: a MEM op neither ld nor st", mn);
            bool paired = false; /* "st" and a width after the "ld": ldst64pace, ld2xst64pace */
            for (const char *q = strstr(mn + 2, "st"); q; q = strstr(q + 2, "st"))
                paired |= q[2] >= '0' && q[2] <= '9';
            ck_assert_msg(wr == (paired ? class_bytes(cls[1]) : 0), "%s writes %u bytes", mn, wr);
            if (cls[0] == 'm' || cls[0] == 'a')
                ck_assert_msg(rd == 1 || rd == 2, "%s: a narrow load reads %u bytes", mn, rd);
            else
                ck_assert_msg(rd == class_bytes(cls[0]), "%s reads %u bytes", mn, rd);
        }
    }
    static const struct { int op; uint32_t rd, wr; } rows[] = {
        {IPU_OP_LD32, 4, 0}, {IPU_OP_LD64, 8, 0}, {IPU_OP_LD128, 16, 0}, {IPU_OP_ST32, 0, 4},
        {IPU_OP_ST64, 0, 8}, {IPU_OP_LDZ16, 2, 0}, {IPU_OP_LDZ8, 1, 0}, {IPU_OP_LDB16, 2, 0},
        {IPU_OP_LDST64PACE, 8, 8}, {IPU_OP_LD2XST64PACE, 16, 8}, {IPU_OP_LDCONST, 0, 0}, {IPU_OP_SEND, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ck_assert_uint_eq(ts_ipu_opfacts[rows[i].op].memrd, rows[i].rd);
        ck_assert_uint_eq(ts_ipu_opfacts[rows[i].op].memwr, rows[i].wr);
    }
}
END_TEST

/* Every instruction of the table survives assembly -> disassembly -> assembly unchanged. */
START_TEST(disasm_round_trip)
{
    ts_program *p = ts_program_create("ipu");
    ck_assert_ptr_nonnull(p);
    ts_stream *s = ts_program_stream(p, 0, 0);
    ck_assert_ptr_nonnull(s);
    for (uint16_t op = 0; op < IPU_OP_COUNT; op++) {
        ts_insn *in = ts_stream_emit(s, op);
        ck_assert_ptr_nonnull(in);
        const char *cls = ts_ipu_opfacts[op].classes;
        for (int k = 0; cls[k]; k++) {
            switch (cls[k]) {
            case 'm': in->a[k] = 3 + k; break;
            case 'a': in->a[k] = IPU_AREG0 + 5 + k; break;
            case 'p': in->a[k] = IPU_AREG0 + 2 * k; break;
            case 'q': in->a[k] = IPU_AREG0 + 4; break;
            case 'x': in->a[k] = k ? 7 : IPU_AREG0 + 1; break;
            case 'i': in->a[k] = -17 + 5 * k; break;
            case 'f': { float f = -2.75f; memcpy(&in->a[k], &f, 4); break; }
            case 'l': in->a[k] = 1; break;
            default: ck_abort_msg("operand class %c", cls[k]);
            }
        }
    }
    ts_err e;
    ts_err_init(&e);
    ts_buf text = TS_BUF_INIT, a = TS_BUF_INIT, b = TS_BUF_INIT;
    ck_assert_int_eq(ts_disasm(p, &ts_ipu_isa, &text, &e), TS_OK);
    ts_program *q = NULL;
    ck_assert_msg(ts_asm(&q, "rt.s", ts_buf_str(&text), text.len, &ts_ipu_isa, &e) == TS_OK, "%s", e.msg);
    ts_program_canonicalize(p);
    ts_program_canonicalize(q);
    ck_assert_int_eq(ts_program_encode(p, &a, &e), TS_OK);
    ck_assert_int_eq(ts_program_encode(q, &b, &e), TS_OK);
    ck_assert_uint_eq(q->streams[0].n, IPU_OP_COUNT);
    for (uint32_t i = 0; i < IPU_OP_COUNT; i++)
        for (int k = 0; k < TS_MAX_OPNDS; k++)
            ck_assert_int_eq(q->streams[0].insn[i].a[k], p->streams[0].insn[i].a[k]);
    ts_buf_free(&text);
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_program_destroy(p);
    ts_program_destroy(q);
    ts_err_free(&e);
}
END_TEST

static const ts_schema *lookup(const char *arch) { return strcmp(arch, "ipu") ? NULL : &ts_ipu_schema; }

/* Cross-key checks of the schema name what is wrong; the summary of MK1 gives the headline
 * figures of research §1.1. */
START_TEST(config_checks_and_info)
{
    static const struct { const char *text, *needle; } bad[] = {
        {"arch: ipu\namp: {macs_per_cycle_f16: 30}\n", "amp.macs_per_cycle_f16 must be a multiple of 4"},
        {"arch: ipu\namp: {macs_per_cycle_f32: 7}\n", "amp.macs_per_cycle_f32 must be a multiple of 2"},
        {"arch: ipu\nexchange: {bytes_per_cycle: 6 B/cycle}\n", "whole number of 32-bit words"},
        {"arch: ipu\ntile: {worker_contexts: 9}\n", "worker_contexts above 8"},
        {"arch: ipu\ntile: {sram: 64 KiB, interleaved_base: 128 KiB}\n", "beyond tile.sram"},
    };
    ts_config_opts o = {.schema = lookup};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ts_config *c = NULL;
        ts_err e;
        ts_err_init(&e);
        ck_assert_int_eq(ts_config_load_string(&c, "bad.yaml", bad[i].text, strlen(bad[i].text), &o, &e), TS_EINPUT);
        ck_assert_msg(strstr(e.msg, bad[i].needle) != NULL, "'%s' lacks '%s'", e.msg, bad[i].needle);
        ts_err_free(&e);
    }
    void *c = ipu_test_config("ipu_mk1", NULL);
    ts_info info;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_ipu_family.info(ts_config_data(c), &info, &e), TS_OK);
    ck_assert_double_eq(info.clock_hz, 1.6e9);
    ck_assert_uint_eq(info.sram_bytes, 1216ull * 256 * 1024);
    ck_assert_double_eq(info.peak[0].macs, 1216.0 * 32);
    ck_assert_double_eq(info.peak[1].macs, 1216.0 * 8);
    ck_assert_double_eq(info.bw[0].bytes_per_cycle, 1216.0 * 16);
    ck_assert_double_eq(info.bw[2].bytes_per_cycle, 1216.0 * 4);
    ts_config_destroy(c);
    c = ipu_test_config("ipu_mk2", NULL);
    ck_assert_int_eq(ts_ipu_family.info(ts_config_data(c), &info, &e), TS_OK);
    ck_assert_uint_eq(info.units[0].n, 1472);
    ck_assert_double_eq(info.peak[0].macs, 1472.0 * 64);
    ts_config_destroy(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ipu_isa");
    TCase *t = tcase_create("isa");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, alu_and_branches);
    tcase_add_test(t, repeat_loops);
    tcase_add_test(t, repeat_body_rules);
    tcase_add_test(t, operand_classes);
    tcase_add_test(t, loads_and_stores);
    tcase_add_test(t, access_rules);
    tcase_add_test(t, context_rules);
    tcase_add_test(t, closed_form_error_order);
    tcase_add_test(t, closed_form_stores);
    tcase_add_test(t, in_step_bodies);
    tcase_add_test(t, in_step_nests);
    tcase_add_test(t, bundles_apart);
    tcase_add_test(t, float_arithmetic);
    tcase_add_test(t, half_conversion);
    tcase_add_test(t, amp_values);
    tcase_add_test(t, amp_putcs_step);
    tcase_add_test(t, amp_f16_special);
    tcase_add_test(t, f32v4_to_f16);
    tcase_add_test(t, barrel_timing);
    tcase_add_test(t, dual_issue);
    tcase_add_test(t, bundle_rules);
    tcase_add_test(t, endless_loops);
    tcase_add_test(t, polling_another_worker_is_no_endless_loop);
    tcase_add_test(t, paced_loads_and_stores);
    tcase_add_test(t, mem_bytes_column);
    tcase_add_test(t, disasm_round_trip);
    tcase_add_test(t, config_checks_and_info);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
