/* tests/test_sim.c — the kernel, driven by the toy family: exact cycles, lockstep equal to the
 * fast mode, hangs with a dump of blocked units, cycle limits, simulation errors with tile and
 * cycle, refusal of programs for another arch or config, energy pricing. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loopmark.h"
#include "core/report.h"
#include "core/sim.h"
#include "tests/toy/toy.h"

static const char two_tiles[] =
    "arch: toy\n"
    "tiles: 2\n"
    "send_latency: 3\n"
    "sync_latency: 10\n";

/* Tile 0 sends 7 to tile 1, idles, syncs; tile 1 receives, adds one, syncs, stores.
 * Cycle by cycle (see tests/toy/toy.c): the send at cycle 1 arrives at 4; tile 0 waits until 7
 * and reaches the barrier last at 7; release at 7 + 1 + 10 = 18; tile 1 stores at 18 and halts at
 * 19, so the run takes 20 cycles. */
static const char pingpong[] =
    ".arch toy\n"
    ".stream tile 0\n"
    "  li r1, 7\n"
    "  send r1, 1\n"
    "  wait 5\n"
    "  sync\n"
    "  halt\n"
    ".stream tile 1\n"
    "  recv r2\n"
    "  addi r3, r2, 1\n"
    "  sync\n"
    "  st r3, r0, 0\n"
    "  halt\n";

static ts_config *load_cfg(const char *text)
{
    ts_err e;
    ts_err_init(&e);
    ts_config_opts o = {.schema = ts_toy_schema_lookup};
    ts_config *c = NULL;
    ts_status rc = ts_config_load_string(&c, "toy.yaml", text, strlen(text), &o, &e);
    if (rc != TS_OK) {
        char line[1024];
        ts_err_format(&e, line, sizeof line);
        ck_abort_msg("config: %s", line);
    }
    return c;
}

static ts_program *assemble(const char *text)
{
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    if (ts_asm(&p, "test.s", text, strlen(text), ts_toy_family.isa, &e) != TS_OK) {
        char line[1024];
        ts_err_format(&e, line, sizeof line);
        ck_abort_msg("asm: %s", line);
    }
    return p;
}

static ts_status run(const char *cfgtext, const char *prog, bool lockstep, uint64_t max_cycles,
                     uint64_t hang, ts_results *res, ts_err *e)
{
    ts_config *c = load_cfg(cfgtext);
    ts_program *p = assemble(prog);
    ts_run_opts o = {.lockstep = lockstep, .max_cycles = max_cycles, .hang_cycles = hang};
    ts_status rc = ts_sim_run(&ts_toy_family, c, p, &o, NULL, res, e);
    ts_program_destroy(p);
    ts_config_destroy(c);
    return rc;
}

START_TEST(exact_cycles_and_lockstep_equal)
{
    ts_err e;
    ts_err_init(&e);
    ts_results fast, slow;
    ck_assert_int_eq(run(two_tiles, pingpong, false, 0, 0, &fast, &e), TS_OK);
    ck_assert_int_eq(run(two_tiles, pingpong, true, 0, 0, &slow, &e), TS_OK);
    ck_assert_uint_eq(fast.cycles, 20);
    ck_assert_uint_eq(slow.cycles, 20);
    ck_assert_uint_eq(fast.bytes[TS_LEVEL_NET], 4);
    ts_buf a = TS_BUF_INIT, b = TS_BUF_INIT;
    ts_report_json(&fast, &a);
    ts_report_json(&slow, &b);
    ck_assert_str_eq(ts_buf_str(&a), ts_buf_str(&b));
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&a), "\"syncs\""));
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_results_free(&fast);
    ts_results_free(&slow);
}
END_TEST

START_TEST(hang_is_reported_with_blocked_units)
{
    static const char prog[] = ".arch toy\n.stream tile 0\n  sync\n  halt\n.stream tile 1\n  recv r1\n  halt\n";
    ts_err e;
    ts_err_init(&e);
    ts_results r;
    ck_assert_int_eq(run(two_tiles, prog, false, 0, 5000, &r, &e), TS_ESIM);
    ck_assert_ptr_nonnull(strstr(e.msg, "no progress for"));
    ck_assert_ptr_nonnull(e.detail);
    ck_assert_ptr_nonnull(strstr(e.detail, "tile 0: pc 1: waiting at sync"));
    ck_assert_ptr_nonnull(strstr(e.detail, "tile 1: pc 1: waiting to receive a message"));
    ts_err_free(&e);
    /* the same in lockstep */
    ck_assert_int_eq(run(two_tiles, prog, true, 0, 5000, &r, &e), TS_ESIM);
    ck_assert_ptr_nonnull(strstr(e.msg, "no progress for"));
    ts_err_free(&e);
}
END_TEST

/* The hang message says when the program stopped making progress: tile 1 takes its message at
 * cycle 5 and is then stuck at a sync that tile 0 never reaches (it waits for a second message).
 * A family that knows the cycle of its latest work gives it; for one that does not, the kernel
 * names the window of cycles it saw the work counter move in, which the first short windows keep
 * narrow. It said "since cycle 5000" here (the first window's end), for a program stuck since 5. */
START_TEST(hang_names_when_progress_stopped)
{
    static const char prog[] = ".arch toy\n.stream tile 0\n  li r1, 7\n  send r1, 1\n  recv r2\n  halt\n"
                               ".stream tile 1\n  recv r1\n  sync\n  halt\n";
    static const char exact[] = "arch: toy\ntiles: 2\nsend_latency: 3\nwork_at: true\n";
    ts_err e;
    ts_err_init(&e);
    ts_results r;
    ck_assert_int_eq(run(exact, prog, false, 0, 5000, &r, &e), TS_ESIM);
    ck_assert_str_eq(e.msg, "no progress since cycle 5 (8186 cycles): the program is hung");
    ts_err_free(&e);
    ck_assert_int_eq(run(two_tiles, prog, false, 0, 5000, &r, &e), TS_ESIM);
    ck_assert_str_eq(e.msg, "no progress for at least 8184 cycles: the program is hung (its last progress was "
                            "between cycles 3 and 7)");
    ts_err_free(&e);
    /* in lockstep too */
    ck_assert_int_eq(run(exact, prog, true, 0, 5000, &r, &e), TS_ESIM);
    ck_assert_str_eq(e.msg, "no progress since cycle 5 (8186 cycles): the program is hung");
    ts_err_free(&e);
}
END_TEST

START_TEST(cycle_limit_stops_the_run)
{
    static const char prog[] = ".arch toy\n.stream tile 0\nloop:\n  addi r1, r1, 1\n  br loop\n";
    ts_err e;
    ts_err_init(&e);
    ts_results r;
    ck_assert_int_eq(run(two_tiles, prog, false, 1000, 0, &r, &e), TS_ESIM);
    ck_assert_ptr_nonnull(strstr(e.msg, "cycle limit of 1000"));
    ck_assert_int_eq(e.cycle, 1000);
    ts_err_free(&e);
    /* a default limit (the caller's, not the user's) has its own message, with the caller's hint */
    ts_config *c = load_cfg(two_tiles);
    ts_program *p = assemble(prog);
    ts_run_opts o = {.max_cycles = 1000, .max_cycles_hint = "raise it"};
    ck_assert_int_eq(ts_sim_run(&ts_toy_family, c, p, &o, NULL, &r, &e), TS_ESIM);
    ck_assert_str_eq(e.msg, "reached the default cycle limit of 1000 before the program finished: raise it");
    ts_err_free(&e);
    ts_program_destroy(p);
    ts_config_destroy(c);
}
END_TEST

START_TEST(out_of_range_names_tile_and_cycle)
{
    static const char prog[] = ".arch toy\n.stream tile 1\n  li r1, 4096\n  nop\n  ld r2, r1, 0\n  halt\n";
    ts_err e;
    ts_err_init(&e);
    ts_results r;
    ck_assert_int_eq(run(two_tiles, prog, false, 0, 0, &r, &e), TS_ESIM);
    ck_assert_int_eq(e.tile, 1);
    ck_assert_int_eq(e.cycle, 2);
    ck_assert_ptr_nonnull(strstr(e.msg, "out of range"));
    char line[512];
    ts_err_format(&e, line, sizeof line);
    ck_assert_str_eq(line, "tile 1, cycle 2: load at pc 2: address 4096 is out of range");
    ts_err_free(&e);
}
END_TEST

START_TEST(program_for_other_config_is_refused)
{
    ts_err e;
    ts_err_init(&e);
    ts_config *c = load_cfg(two_tiles);
    ts_program *p = assemble(pingpong);
    p->config_fp = ts_config_fingerprint(c) ^ 1;
    ts_results r;
    ck_assert_int_eq(ts_sim_run(&ts_toy_family, c, p, NULL, NULL, &r, &e), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "toy"));
    ts_err_free(&e);
    p->config_fp = ts_config_fingerprint(c);
    ck_assert_int_eq(ts_sim_run(&ts_toy_family, c, p, NULL, NULL, &r, &e), TS_OK);
    ts_results_free(&r);
    snprintf(p->arch, sizeof p->arch, "ipu");
    ck_assert_int_eq(ts_sim_run(&ts_toy_family, c, p, NULL, NULL, &r, &e), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "program is for arch 'ipu'"));
    ts_err_free(&e);
    ts_program_destroy(p);
    ts_config_destroy(c);
}
END_TEST

START_TEST(energy_is_priced_from_the_table)
{
    static const char table[] =
        "name: unit\n"
        "node: 45 nm\n"
        "entries:\n"
        "  insn_issue: {value: 1 pJ, bits: 32, component: control, source: test, confirmed: false}\n"
        "  int32_add: {value: 0.5 pJ, bits: 32, component: compute, source: test, confirmed: false}\n";
    ts_err e;
    ts_err_init(&e);
    ts_energy_table *t = NULL;
    ck_assert_int_eq(ts_energy_load_string(&t, "unit.yaml", table, strlen(table), &e), TS_OK);
    ts_config *c = load_cfg(two_tiles);
    ts_program *p = assemble(pingpong);
    ts_results r;
    ck_assert_int_eq(ts_sim_run(&ts_toy_family, c, p, NULL, t, &r, &e), TS_OK);
    /* 9 instructions executed (5 + 4; recv completes without an issue slot but counts as issued) */
    double insns = 0;
    for (size_t i = 0; i < r.nevents; i++)
        if (!strcmp(r.events[i].name, "insn_issue"))
            insns = r.events[i].count;
    ck_assert(insns > 0);
    ck_assert_double_eq_tol(r.energy_j, insns * 1.5e-12, 1e-18);
    ts_results_free(&r);
    ts_energy_destroy(t);
    ts_program_destroy(p);
    ts_config_destroy(c);
}
END_TEST

/* core/loopmark.h: a unit whose states at backward branches come back with period p, from pass
 * `start` on, is caught, and within the bound Brent's cycle finding gives; a unit whose registers
 * never repeat is never caught. Returns the pass at which the state matched its mark, or 0. */
static uint64_t passes_to_match(uint64_t start, uint32_t p, uint64_t max)
{
    ts_loopmark l;
    memset(&l, 0, sizeof l);
    for (uint64_t k = 0; k < max; k++) {
        uint32_t r[4] = {7, 0, 9, 0};
        r[1] = k < start ? (uint32_t)k + 1000000u : (uint32_t)((k - start) % p); /* the counter register */
        switch (ts_loop_step(&l, 12, r, 4, 1)) {
        case TS_LOOP_MATCH:
            ck_assert_uint_eq(l.eff, 5); /* the effect count of the mark: the caller compares it */
            return k;
        case TS_LOOP_MARK: ts_loop_mark(&l, 12, r, 4, 5, k); break;
        default: break;
        }
    }
    return 0;
}

START_TEST(loopmark_finds_cycles)
{
    ck_assert_uint_eq(passes_to_match(0, 1, 10), 1); /* `loop: br loop`: the second pass */
    for (uint32_t p = 1; p <= 300; p++) {
        uint64_t at = passes_to_match(0, p, 100000);
        ck_assert_msg(at >= p && at <= 3 * (uint64_t)p + 1, "period %u caught at pass %" PRIu64, p, at);
    }
    /* entered late, after 200,000 passes that never repeat: the mark moves at least every 65,536
     * backward branches, so the loop is caught within that and its period */
    uint64_t at = passes_to_match(200000, 50, 400000);
    ck_assert_uint_gt(at, 200000);
    ck_assert_uint_le(at, 200000 + 2 * (uint64_t)TS_LOOP_MAXPOWER + 50);
    /* a counter that never repeats is never caught (sound, not complete) */
    ck_assert_uint_eq(passes_to_match(UINT64_MAX, 1, 300000), 0);
}
END_TEST

START_TEST(loopmark_refresh_keeps_the_state)
{
    ts_loopmark l;
    memset(&l, 0, sizeof l);
    uint32_t r[2] = {1, 2};
    ck_assert_int_eq(ts_loop_step(&l, 3, r, 2, 0), TS_LOOP_MARK);
    ts_loop_mark(&l, 3, r, 2, 10, 100);
    ck_assert_int_eq(ts_loop_step(&l, 3, r, 2, 0), TS_LOOP_MATCH);
    ts_loop_refresh(&l, 11, 140); /* an effect happened: the same state, counted from now */
    ck_assert_uint_eq(l.eff, 11);
    ck_assert_uint_eq(l.at, 140);
    ck_assert_int_eq(ts_loop_step(&l, 3, r, 2, 0), TS_LOOP_MATCH);
    ck_assert_int_ne(ts_loop_step(&l, 4, r, 2, 0), TS_LOOP_MATCH); /* another branch is another state */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim");
    TCase *t = tcase_create("kernel");
    tcase_add_test(t, exact_cycles_and_lockstep_equal);
    tcase_add_test(t, hang_is_reported_with_blocked_units);
    tcase_add_test(t, hang_names_when_progress_stopped);
    tcase_add_test(t, cycle_limit_stops_the_run);
    tcase_add_test(t, out_of_range_names_tile_and_cycle);
    tcase_add_test(t, program_for_other_config_is_refused);
    tcase_add_test(t, energy_is_priced_from_the_table);
    tcase_add_test(t, loopmark_finds_cycles);
    tcase_add_test(t, loopmark_refresh_keeps_the_state);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
