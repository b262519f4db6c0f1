/* tests/arch/ipu/test_ipu_bsp.c — BSP on the IPU: the exchange (values, latency by distance,
 * broadcast, the errors a compiled schedule can make), the chip-wide sync and its cost, release
 * skew, host transfers. Cycle counts are worked out by hand in the comments (tiny4 layout: tile t
 * sits in column t / 2, row t % 2; L = 30 + 6 x column distance + 2 x row distance). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/energy.h"
#include "core/program.h"
#include "core/report.h"
#include "core/trace.h"
#include "tests/arch/ipu/ipu_test.h"

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    ts_buf b = TS_BUF_INIT;
    va_list ap;
    va_start(ap, f);
    ts_buf_vprintf(&b, f, ap);
    va_end(ap);
    return b.data;
}

/* The program fails with needle at tile and cycle, in every mode alike. */
static void expect_error(const char *prog, const char *const *sets, const char *needle, int64_t tile, int64_t cycle)
{
    ipu_run r;
    ipu_test_modes("ipu_tiny4", sets, prog, &r);
    ck_assert_int_eq(r.rc, TS_ESIM);
    ck_assert_msg(strstr(r.err.msg, needle) != NULL, "message '%s' lacks '%s'", r.err.msg, needle);
    ck_assert_int_eq(r.err.tile, tile);
    ck_assert_int_eq(r.err.cycle, cycle);
    ipu_run_free(&r);
}

START_TEST(latency_table)
{
    void *c = ipu_test_config("ipu_tiny4", NULL);
    const void *cfg = ts_config_data(c);
    ck_assert_uint_eq(ts_ipu_latency(cfg, 0, 0), 30);
    ck_assert_uint_eq(ts_ipu_latency(cfg, 0, 1), 32);
    ck_assert_uint_eq(ts_ipu_latency(cfg, 0, 2), 36);
    ck_assert_uint_eq(ts_ipu_latency(cfg, 0, 3), 38);
    ck_assert_uint_eq(ts_ipu_latency(cfg, 3, 0), 38);
    ts_config_destroy(c);
    c = ipu_test_config("ipu_mk1", NULL);
    cfg = ts_config_data(c);
    /* tile 1215 sits in column 63 (group 15), row 18 */
    ck_assert_uint_eq(ts_ipu_latency(cfg, 0, 1215), 30 + 6 * 15 + 2 * 18);
    ts_config_destroy(c);
}
END_TEST

/* Tile 0 sends 4 words to tile `dst` at cycle 2 (words leave at 2..5, arrive at 2 + L .. 5 + L);
 * the receiver arms at 2, its rxwait issues when the last word lands, then sync 1, then halt. */
static char *p2p(unsigned dst)
{
    return fmt(".arch ipu\n"
               ".stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, %u\n  send $m1, $m2, 4\n  sync 1\n  halt\n"
               ".data tile 0 0x100\n  .word 11, 22, 33, 44\n"
               ".stream tile %u\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 4\n  rxwait\n  sync 1\n  halt\n",
               dst, dst);
}

START_TEST(exchange_point_to_point)
{
    static const unsigned lat[4] = {0, 32, 36, 38};
    for (unsigned d = 1; d < 4; d++) {
        char *p = p2p(d);
        ipu_run r;
        ipu_test_run3("ipu_tiny4", NULL, p, &r);
        for (unsigned i = 0; i < 4; i++)
            ck_assert_uint_eq(ipu_peek32(&r, d, 0x200 + 4 * i), 11 * (i + 1));
        /* last word arrives at 5 + L; rxwait then, sync at 6 + L; release 6 + L + 1 + 90; halt */
        uint64_t sync_at = 6 + lat[d];
        ck_assert_uint_eq(r.r.cycles, sync_at + 1 + 90 + 1);
        ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 16);
        ck_assert_double_eq(ipu_cell(&r, "supersteps", 0, "critical_tile"), d);
        ck_assert_double_eq(ipu_cell(&r, "supersteps", 0, "sync"), 90);
        ck_assert_double_eq(ipu_cell(&r, "supersteps", 0, "exchange"), sync_at - 2); /* armed at 2 */
        ck_assert_double_eq(ipu_cell(&r, "supersteps", 0, "compute") + ipu_cell(&r, "supersteps", 0, "exchange"),
                            sync_at + 1);
        ck_assert_double_eq(ipu_stat(&r, "exchange.bytes_per_port_cycle"), 4.0);
        ipu_run_free(&r);
        free(p);
    }
}
END_TEST

/* Sends longer than the word logs keep between supersteps (IPU_WLOG_KEEP): tile 0 sends 5000
 * words to tile 1, which sends them back in the next superstep, then 4 more go out after the
 * logs were let go at the release; every word arrives where it should, in every mode. */
START_TEST(exchange_long_sends)
{
    enum { N = 5000 };
    ck_assert_int_gt(N, IPU_WLOG_KEEP);
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, ".arch ipu\n"
                    ".stream tile 0\n  setzi $m1, 0x1000\n  setzi $m2, 1\n  send $m1, $m2, 5000\n  sync 1\n"
                    "  setzi $m1, 0x7000\n  setzi $m2, 1\n  recv $m1, $m2, 5000\n  rxwait\n  sync 1\n"
                    "  setzi $m1, 0x1000\n  setzi $m2, 1\n  send $m1, $m2, 4\n  sync 1\n  halt\n"
                    ".stream tile 1\n  setzi $m1, 0x1000\n  setzi $m2, 0\n  recv $m1, $m2, 5000\n  rxwait\n  sync 1\n"
                    "  setzi $m2, 0\n  send $m1, $m2, 5000\n  sync 1\n"
                    "  setzi $m1, 0xc000\n  setzi $m2, 0\n  recv $m1, $m2, 4\n  rxwait\n  sync 1\n  halt\n"
                    ".data tile 0 0x1000\n");
    for (unsigned i = 0; i < N; i++)
        ts_buf_printf(&b, "  .word %u\n", 7 * i + 3);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, b.data, &r);
    for (unsigned i = 0; i < N; i++) {
        ck_assert_uint_eq(ipu_peek32(&r, 1, 0x1000 + 4 * i), 7 * i + 3);
        ck_assert_uint_eq(ipu_peek32(&r, 0, 0x7000 + 4 * i), 7 * i + 3);
    }
    for (unsigned i = 0; i < 4; i++)
        ck_assert_uint_eq(ipu_peek32(&r, 1, 0xc000 + 4 * i), 7 * i + 3);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 4 * (2 * N + 4));
    ipu_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

START_TEST(exchange_broadcast)
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, ".arch ipu\n.stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, -1\n  send $m1, $m2, 2\n"
                    "  sync 1\n  halt\n.data tile 0 0x100\n  .word 7, 9\n");
    for (unsigned d = 1; d < 4; d++)
        ts_buf_printf(&b, ".stream tile %u\n  setzi $m1, 0x40\n  setzi $m2, 0\n  recv $m1, $m2, 2\n  rxwait\n"
                          "  sync 1\n  halt\n", d);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, ts_buf_str(&b), &r);
    for (unsigned d = 1; d < 4; d++) {
        ck_assert_uint_eq(ipu_peek32(&r, d, 0x40), 7);
        ck_assert_uint_eq(ipu_peek32(&r, d, 0x44), 9);
    }
    ck_assert_uint_eq(r.r.cycles, 3 + 38 + 1 + 1 + 90 + 1); /* the farthest, tile 3, decides */
    ipu_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

/* Input selection and pointer switched separately: tile 3 takes 2 words from tile 0 (sent at 2,
 * arriving at 40, 41), switches its input to tile 1 at 42 keeping the pointer (tile 1 sends at
 * 20: arrivals 56, 57), then moves the pointer before tile 2's words (sent at 60: 60 + 30 + 2). */
START_TEST(exchange_mux_and_pointer)
{
    const char *p =
        ".arch ipu\n"
        ".stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 3\n  send $m1, $m2, 2\n  sync 1\n  halt\n"
        ".stream tile 1\n  setzi $m1, 0x100\n  setzi $m2, 3\n  delay 17\n  send $m1, $m2, 2\n  sync 1\n  halt\n"
        ".stream tile 2\n  setzi $m1, 0x100\n  setzi $m2, 3\n  delay 57\n  send $m1, $m2, 1\n  sync 1\n  halt\n"
        ".data tile 0 0x100\n  .word 1, 2\n.data tile 1 0x100\n  .word 3, 4\n.data tile 2 0x100\n  .word 5\n"
        ".stream tile 3\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 2\n  rxwait\n  setzi $m2, 1\n"
        "  rxsel $m2, 2\n  rxwait\n  setzi $m2, 2\n  rxsel $m2, 1\n  setzi $m1, 0x300\n  rxptr $m1\n  rxwait\n"
        "  sync 1\n  halt\n";
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    for (unsigned i = 0; i < 4; i++)
        ck_assert_uint_eq(ipu_peek32(&r, 3, 0x200 + 4 * i), i + 1);
    ck_assert_uint_eq(ipu_peek32(&r, 3, 0x210), 0);
    ck_assert_uint_eq(ipu_peek32(&r, 3, 0x300), 5);
    ipu_run_free(&r);
}
END_TEST

/* One sender serves three receivers in turn, its sends to each interleaved with the others':
 * tile 0 sends 3 words to tile 2, 2 to tile 1, 4 to tile 3, 1 to tile 1 and 1 to tile 2. Every
 * receiver listens from the start, so it passes over the sends meant for the others (a whole
 * send at a time) and must still take each of its own words, in order, from every send. */
START_TEST(exchange_interleaved_receivers)
{
    const char *p =
        ".arch ipu\n"
        ".stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 2\n  send $m1, $m2, 3\n"
        "  setzi $m1, 0x10c\n  setzi $m2, 1\n  send $m1, $m2, 2\n"
        "  setzi $m1, 0x114\n  setzi $m2, 3\n  send $m1, $m2, 4\n"
        "  setzi $m1, 0x124\n  setzi $m2, 1\n  send $m1, $m2, 1\n"
        "  setzi $m1, 0x128\n  setzi $m2, 2\n  send $m1, $m2, 1\n  sync 1\n  halt\n"
        ".data tile 0 0x100\n  .word 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11\n"
        ".stream tile 1\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 3\n  rxwait\n  sync 1\n  halt\n"
        ".stream tile 2\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 4\n  rxwait\n  sync 1\n  halt\n"
        ".stream tile 3\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 4\n  rxwait\n  sync 1\n  halt\n";
    static const uint32_t want[4][4] = {{0}, {4, 5, 10, 0}, {1, 2, 3, 11}, {6, 7, 8, 9}};
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_int_eq(r.rc, TS_OK);
    for (unsigned d = 1; d < 4; d++)
        for (unsigned i = 0; i < 4; i++)
            ck_assert_uint_eq(ipu_peek32(&r, d, 0x200 + 4 * i), want[d][i]);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 44);
    ipu_run_free(&r);
}
END_TEST

/* Receivers that wait at `rxwait` over many rounds: tile 0 waits 200 cycles, sends 2 words to
 * tile 2 and 3 to tile 1, waits 150 more and sends 2 more to tile 1. Tile 1 waits for all 5 from
 * the start: it passes over tile 2's words, takes its 3, waits again (rounds in which its
 * sender's log has nothing new for it) and takes the last 2. The fast run (whose receivers take
 * their words in one pass and skip the rounds with none due) and the threaded one must give the
 * lockstep reference's report and memory; the words land in order and the receive ends after
 * the second send, so the exchange of the superstep covers both waits. */
/* Words that come in while nothing but them and the workers can act: tile 1's workers compute
 * while its supervisor holds the send port, then waits at rxwait (the workers run up to each
 * word's arrival); tile 2 has no workers and holds its port for 34 cycles while tile 1's words
 * come in (taken in one pass up to the cycle its supervisor may issue again, for its second
 * send, while more words are due). The three modes must agree (ipu_test_run3), cycles and
 * memory. */
START_TEST(exchange_words_while_busy)
{
    const char *p =
        ".arch ipu\n"
        ".stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 1\n  send $m1, $m2, 8\n  sync 1\n  halt\n"
        ".data tile 0 0x100\n  .word 11, 12, 13, 14, 15, 16, 17, 18\n"
        ".stream tile 1\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 8\n  setzi $m3, 0x300\n"
        "  runall w, $m3\n  setzi $m4, 0x200\n  setzi $m5, 2\n  send $m4, $m5, 16\n  rxwait\n  sync 0\n"
        "  sync 1\n  halt\n"
        "w:\n  get $m1, 2\n  shli $m1, $m1, 2\n  add $m1, $m1, $m0\n  setzi $m2, 40\n"
        "l:\n  ld32 $m3, $m1, 0\n  addi $m3, $m3, 1\n  st32 $m3, $m1, 0\n  brnzdec $m2, l\n  exit\n"
        ".stream tile 2\n  setzi $m1, 0x400\n  setzi $m2, 1\n  recv $m1, $m2, 16\n  setzi $m3, 0x100\n"
        "  setzi $m4, 3\n  send $m3, $m4, 34\n  setzi $m3, 0x188\n  send $m3, $m4, 6\n  rxwait\n  sync 1\n  halt\n"
        ".stream tile 3\n  setzi $m1, 0x100\n  setzi $m2, 2\n  recv $m1, $m2, 40\n  rxwait\n  sync 1\n  halt\n";
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_int_eq(r.rc, TS_OK);
    for (unsigned i = 0; i < 8; i++)
        ck_assert_uint_eq(ipu_peek32(&r, 1, 0x200 + 4 * i), 11 + i);
    for (unsigned w = 0; w < 6; w++)
        ck_assert_uint_eq(ipu_peek32(&r, 1, 0x300 + 4 * w), 41);
    ck_assert_uint_eq(ipu_peek32(&r, 2, 0x400), 11);
    ck_assert_uint_eq(ipu_peek32(&r, 2, 0x41c), 18);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 4 * (8 + 16 + 40));
    ipu_run_free(&r);
}
END_TEST

START_TEST(exchange_parked_receivers)
{
    const char *p =
        ".arch ipu\n"
        ".stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 2\n  delay 200\n  send $m1, $m2, 2\n"
        "  setzi $m1, 0x108\n  setzi $m2, 1\n  send $m1, $m2, 3\n  delay 150\n"
        "  setzi $m1, 0x114\n  send $m1, $m2, 2\n  sync 1\n  halt\n"
        ".data tile 0 0x100\n  .word 1, 2, 3, 4, 5, 6, 7\n"
        ".stream tile 1\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 5\n  rxwait\n  sync 1\n  halt\n"
        ".stream tile 2\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 2\n  rxwait\n  sync 1\n  halt\n"
        ".stream tile 3\n  sync 1\n  halt\n";
    static const uint32_t want1[5] = {3, 4, 5, 6, 7};
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_int_eq(r.rc, TS_OK);
    for (unsigned i = 0; i < 5; i++)
        ck_assert_uint_eq(ipu_peek32(&r, 1, 0x200 + 4 * i), want1[i]);
    ck_assert_uint_eq(ipu_peek32(&r, 2, 0x200), 1);
    ck_assert_uint_eq(ipu_peek32(&r, 2, 0x204), 2);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 28);
    ck_assert_double_gt(ipu_cell(&r, "supersteps", 0, "exchange"), 350);
    ipu_run_free(&r);
}
END_TEST

/* The exchange spine on small16 (tile t in column t / 4, row t % 4, every column its own group;
 * L = 30 + 6 x column distance + 2 x row distance), with a 10-cycle buffered stage. Each tile
 * gets a role: "r S N" receives N words from tile S, "s D N" sends N words to tile D (after
 * "delay K" when given as "s D N K"), anything else waits. All start together after a sync: the
 * receive is armed at r, the sends leave from r + 2. Returns the last word's latency at the
 * critical tile (its exchange cycles - 3), which must be `tile`. */
static const char *const spine_sets[] = {"exchange.spine_buffer_cycles=10", NULL};

static char *spine_prog(const char *const roles[16])
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, ".arch ipu\n");
    for (unsigned i = 0; i < 16; i++) {
        unsigned x = 0, n = 0, k = 0;
        ts_buf_printf(&b, ".stream tile %u\n  sync 1\n", i);
        if (roles[i] && sscanf(roles[i], "r %u %u", &x, &n) == 2)
            ts_buf_printf(&b, "  setzi $m1, 0x100\n  setzi $m3, %u\n  recv $m1, $m3, %u\n  setzi $m2, 0\n  nop\n  rxwait\n",
                          x, n);
        else if (roles[i] && sscanf(roles[i], "s %u %u %u", &x, &n, &k) >= 2)
            ts_buf_printf(&b, "  setzi $m1, 0x100\n  setzi $m3, %u\n  delay %u\n  setzi $m2, 0\n  send $m2, $m3, %u\n", x,
                          k, n); /* delay 0 takes one issue, as a nop */
        ts_buf_puts(&b, "  sync 1\n  halt\n");
    }
    return b.data;
}

static double spine_latency(const char *const roles[16], unsigned tile)
{
    char *p = spine_prog(roles);
    ipu_run r;
    ipu_test_run3("ipu_small16", spine_sets, p, &r);
    ck_assert_double_eq(ipu_cell(&r, "supersteps", 1, "critical_tile"), tile);
    double lat = ipu_cell(&r, "supersteps", 1, "exchange") - 3;
    ipu_run_free(&r);
    free(p);
    return lat;
}

START_TEST(exchange_spine)
{
    /* one word across: the latency formula */
    const char *idle[16] = {[0] = "s 4 1", [4] = "r 0 1"};
    ck_assert_double_eq(spine_latency(idle, 4), 36);
    /* two words of column 0 leave it in one cycle: both through the buffered stage */
    const char *two[16] = {[0] = "s 4 1", [1] = "s 5 1", [4] = "r 0 1", [5] = "r 1 1"};
    ck_assert_double_eq(spine_latency(two, 4), 46);
    /* inside a column no word uses the spine */
    const char *local[16] = {[0] = "s 1 1", [2] = "s 3 1", [1] = "r 0 1", [3] = "r 2 1"};
    ck_assert_double_eq(spine_latency(local, 1), 32);
    /* the stage keeps order: tile 0's second word, alone in its cycle, waits behind the first
     * (t + 1 enters the spine at t + 11, not t + 1) */
    const char *drain[16] = {[0] = "s 4 2", [1] = "s 5 1", [4] = "r 0 2", [5] = "r 1 1"};
    ck_assert_double_eq(spine_latency(drain, 4), 47);
    /* a whole column streams 100 words each across: latency + 10, bandwidth unchanged */
    const char *stream[16] = {[0] = "s 4 100", [1] = "s 5 100", [2] = "s 6 100", [3] = "s 7 100",
                              [4] = "r 0 100", [5] = "r 1 100", [6] = "r 2 100", [7] = "r 3 100"};
    ck_assert_double_eq(spine_latency(stream, 4), 99 + 46);
    char *p = spine_prog(stream);
    ipu_run r;
    ipu_test_run3("ipu_small16", spine_sets, p, &r);
    ck_assert_double_eq(ipu_stat(&r, "exchange.bytes_per_port_cycle"), 4);
    ipu_run_free(&r);
    free(p);
    /* the compiled schedule's errors still hold with the delay: tile 0's buffered word and tile
     * 8's direct one, sent 10 cycles later, reach tile 4 together. Sync released at 91, receive
     * armed at 93, sends at 95 (+ 10 + 36) and 105 (+ 36): cycle 141 */
    const char *clash[16] = {[0] = "s 4 1", [1] = "s 5 1", [8] = "s 4 1 10", [4] = "r 0 1", [5] = "r 1 1"};
    p = spine_prog(clash);
    ipu_test_modes("ipu_small16", spine_sets, p, &r);
    ck_assert_int_eq(r.rc, TS_ESIM);
    ck_assert_str_eq(r.err.msg, "two senders into one receiver: words from tiles 0 and 8 reach tile 4 in the same cycle");
    ck_assert_int_eq(r.err.tile, 4);
    ck_assert_int_eq(r.err.cycle, 141);
    ipu_run_free(&r);
    free(p);
}
END_TEST

/* A sender's words reach their receivers out of send order when one waits in the spine stage and
 * a later one does not: tile 0's first word (to tile 4, crowded with tile 1's in its cycle) takes
 * the buffered stage, its second (to tile 2, in its own column) does not and arrives first. Tile
 * 2 must still take it (its input passes over words to other tiles, whatever their arrival). */
START_TEST(exchange_spine_out_of_order)
{
    static const char *const sets[] = {"exchange.spine_buffer_cycles=40", NULL};
    const char *roles[16] = {[0] = "s 4 1", [1] = "s 5 1", [2] = "r 0 1", [4] = "r 0 1", [5] = "r 1 1"};
    char *p = spine_prog(roles);
    ts_buf b = TS_BUF_INIT;
    const char *t0 = strstr(p, ".stream tile 0\n"), *send = strstr(t0, "  send $m2, $m3, 1\n");
    ck_assert_ptr_nonnull(send);
    ts_buf_printf(&b, "%.*s  send $m2, $m3, 1\n  setzi $m3, 2\n  send $m2, $m3, 1\n%s.data tile 0 0\n  .word 77\n",
                  (int)(send - p), p, send + strlen("  send $m2, $m3, 1\n"));
    ipu_run r;
    ipu_test_run3("ipu_small16", sets, ts_buf_str(&b), &r);
    ck_assert_uint_eq(ipu_peek32(&r, 2, 0x100), 77);
    ck_assert_uint_eq(ipu_peek32(&r, 4, 0x100), 77);
    ipu_run_free(&r);
    ts_buf_free(&b);
    free(p);
}
END_TEST

START_TEST(exchange_errors)
{
    /* tile 0's word (sent at 2, L 38) and tile 1's (sent at 4, L 36) both reach tile 3 at 40 */
    expect_error(".arch ipu\n"
                 ".stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 3\n  send $m1, $m2, 1\n  sync 1\n  halt\n"
                 ".stream tile 1\n  setzi $m1, 0x100\n  setzi $m2, 3\n  nop\n  nop\n  send $m1, $m2, 1\n  sync 1\n  halt\n"
                 ".stream tile 3\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 1\n  rxwait\n  sync 1\n  halt\n",
                 NULL, "two senders into one receiver: words from tiles 0 and 1 reach tile 3 in the same cycle", 3, 40);
    /* nothing sent: tile 3 waits for tile 0, which goes to the sync */
    expect_error(".arch ipu\n.stream tile 0\n  sync 1\n  halt\n"
                 ".stream tile 3\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 1\n  rxwait\n  sync 1\n  halt\n",
                 NULL, "receive with nothing sent: tile 3 waits for 1 of 1 words from tile 0", 3, 2);
    expect_error(".arch ipu\n.stream tile 0\n  sync 1\n  halt\n"
                 ".stream tile 3\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 1\n  sync 1\n  halt\n",
                 NULL, "receive with nothing sent: 1 of 1 words from tile 0", 3, 3);
    /* a word nobody selected */
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 3\n  send $m1, $m2, 1\n  sync 1\n  halt\n"
                 ".stream tile 3\n  delay 50\n  sync 1\n  halt\n",
                 NULL, "word from tile 0 to tile 3 was not received", 3, 40);
    /* the mux switched away while words were due */
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 3\n  send $m1, $m2, 4\n  sync 1\n  halt\n"
                 ".stream tile 3\n  setzi $m1, 0x200\n  setzi $m2, 0\n  recv $m1, $m2, 4\n  setzi $m2, 1\n"
                 "  recv $m1, $m2, 1\n  sync 1\n  halt\n",
                 NULL, "recv switches the input from tile 0 while 4 of its 4 words are still due", 3, 4);
    /* operands out of range */
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  setzi $m2, 4\n  send $m1, $m2, 1\n  halt\n", NULL,
                 "send to tile 4, which does not exist: supervisor at pc 2", 0, 2);
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0xfff8\n  setzi $m2, 1\n  send $m1, $m2, 4\n  halt\n", NULL,
                 "send of 4 words from 65528 runs past the tile memory", 0, 2);
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0xfff8\n  setzi $m2, 1\n  recv $m1, $m2, 4\n  halt\n", NULL,
                 "recv of 4 words at 65528 runs past the tile memory", 0, 2);
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  setzi $m2, 9\n  recv $m1, $m2, 1\n  halt\n", NULL,
                 "recv from tile 9, which does not exist", 0, 2);
    expect_error(".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  setzi $m2, 0xfffff0\n  hostrd $m1, $m2, 64\n  halt\n", NULL,
                 "is beyond host.buffer", 0, 2);
    expect_error(".arch ipu\n.stream tile 0\n  sync 2\n  halt\n", NULL, "sync: zone 2 is neither 0 (tile) nor 1 (chip)", 0, 0);
    /* tile 1's word lands on tile 0 at 2 + 32 = 34 while tile 0's send (3..42) reads the same element */
    const char *conflict =
        ".arch ipu\n"
        ".stream tile 0\n  setzi $m1, 0x%x\n  setzi $m2, 1\n  recv $m1, $m2, 1\n  setzi $m3, 0x100\n  setzi $m4, 2\n"
        "  send $m3, $m4, 40\n  rxwait\n  sync 1\n  halt\n"
        ".stream tile 1\n  setzi $m1, 0x100\n  setzi $m2, 0\n  send $m1, $m2, 1\n  sync 1\n  halt\n"
        ".stream tile 2\n  setzi $m1, 0x100\n  setzi $m2, 0\n  recv $m1, $m2, 40\n  rxwait\n  sync 1\n  halt\n";
    char *p = fmt(conflict, 0x180);
    expect_error(p, NULL, "memory element conflict", 0, 34);
    free(p);
    p = fmt(conflict, 0x8000);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r); /* another element: fine */
    ipu_run_free(&r);
    free(p);
}
END_TEST

START_TEST(sync_cost)
{
    char *p = ipu_test_spmd(NULL, "  setzi $m1, 9\nl:\n  sync 1\n  brnzdec $m1, l\n  halt\n", 4);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    ck_assert_double_eq(ipu_stat(&r, "supersteps.count"), 10);
    for (size_t k = 0; k < 10; k++)
        ck_assert_double_eq(ipu_cell(&r, "supersteps", k, "sync"), 90);
    /* setzi 0, sync 1; each superstep: sync at c, brnzdec at c + 91, next sync at c + 92 */
    ck_assert_uint_eq(r.r.cycles, 1 + 10 * 92 + 1);
    ipu_run_free(&r);
    const char *sets[] = {"sync.internal_cycles=118", NULL};
    ipu_test_run3("ipu_tiny4", sets, p, &r);
    ck_assert_uint_eq(r.r.cycles, 1 + 10 * 120 + 1);
    ipu_run_free(&r);
    free(p);
}
END_TEST

START_TEST(release_skew)
{
    char *p = ipu_test_spmd(NULL, "  sync 1\n  halt\n", 4);
    const char *sets[] = {"sync.max_release_skew=3", NULL};
    ipu_run r;
    ipu_test_run3("ipu_tiny4", sets, p, &r);
    /* sync at 0, release at 91; tile 3 leaves 3 cycles after tile 0 and halts at 94 */
    ck_assert_uint_eq(r.r.cycles, 95);
    ipu_run_free(&r);
    free(p);
}
END_TEST

START_TEST(host_transfers)
{
    const char *p = ".arch ipu\n.stream tile 2\n  setzi $m1, 0x100\n  setzi $m2, 64\n  hostwr $m1, $m2, 64\n  sync 1\n"
                    "  setzi $m1, 0x300\n  hostrd $m1, $m2, 64\n  sync 1\n  halt\n"
                    ".data tile 2 0x100\n  .word 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16\n";
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    for (unsigned i = 0; i < 16; i++)
        ck_assert_uint_eq(ipu_peek32(&r, 2, 0x300 + 4 * i), i + 1);
    /* 1 us at 1.6 GHz = 1600 cycles, 64 B at 16 GB/s = 10 B/cycle -> 7 cycles */
    ck_assert_double_eq(ipu_cell(&r, "supersteps", 0, "sync"), 90 + 1607);
    ck_assert_double_eq(ipu_cell(&r, "supersteps", 1, "sync"), 90 + 1607);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_OFFCHIP], 128);
    ck_assert_double_eq(ipu_event(&r, "pcie_bit"), 1024);
    ipu_run_free(&r);
    ipu_test_run("ipu_tiny4", NULL, ".arch ipu\n.stream tile 0\n  setzi $m1, 0\n  hostrd $m1, $m1, 64\n  halt\n",
                 false, 1, &r);
    ck_assert_int_eq(r.rc, TS_ESIM);
    ck_assert_ptr_nonnull(strstr(r.err.msg, "host transfers pending"));
    ipu_run_free(&r);
}
END_TEST

/* Integer multiplies are charged as the .def names them, int32_mul, not as adds. */
START_TEST(energy_int_mul)
{
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL,
                  ".arch ipu\n.stream tile 0\n  setzi $m1, 3\n  mul $m2, $m1, $m1\n  muli $m3, $m1, 5\n"
                  "  add $m4, $m2, $m3\n  halt\n", &r);
    ck_assert_int_eq(r.rc, TS_OK);
    ck_assert_double_eq(ipu_event(&r, "int32_mul"), 2);
    ck_assert_double_eq(ipu_event(&r, "int32_add"), 1);
    ipu_run_free(&r);
}
END_TEST

START_TEST(energy_events_priced)
{
    char *p = p2p(3);
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    static const char *const names[] = {"fp32_mac", "fp16_mac", "fp32_add", "fp32_mul", "fp16_add", "fp16_mul",
                                        "int32_add", "int32_mul", "sram_read_64b", "sram_write_64b",
                                        "regfile_32b", "wire_bit_mm", "pcie_bit", "insn_issue"};
    ck_assert_uint_eq(r.r.nevents, 14);
    for (size_t i = 0; i < 14; i++)
        ck_assert_str_eq(r.r.events[i].name, names[i]);
    /* 4 words x 32 bits x (1 column + 1 row) x 0.8 mm */
    ck_assert_double_eq_tol(ipu_event(&r, "wire_bit_mm"), 4 * 32 * 2 * 0.8, 1e-9);
    static const char *const tables[] = {"horowitz45", "jouppi7"};
    for (int k = 0; k < 2; k++) { /* every event is priced by the shipped tables */
        ts_energy_table *t = NULL;
        ts_err e;
        ts_err_init(&e);
        ck_assert_int_eq(ts_energy_load(&t, tables[k], ts_builtin_find, &e), TS_OK);
        ck_assert_int_eq(ts_results_price(&r.r, t, &e), TS_OK);
        ck_assert_double_gt(r.r.energy_j, 0);
        ts_energy_destroy(t);
        ts_err_free(&e);
    }
    ipu_run_free(&r);
    free(p);
}
END_TEST

static void events_sum_to_run(const ipu_run *r)
{
    const ts_stat *t = ts_stats_find(r->r.stats, "superstep_events");
    ck_assert_ptr_nonnull(t);
    for (size_t i = 0; i < r->r.nevents; i++) {
        double sum = 0;
        for (size_t k = 0; k < t->nrows; k++)
            sum += ipu_cell(r, "superstep_events", k, r->r.events[i].name);
        ck_assert_msg(fabs(sum - r->r.events[i].count) <= 1e-9 * (1 + r->r.events[i].count), "%s: rows %g, run %g",
                      r->r.events[i].name, sum, r->r.events[i].count);
    }
}

/* The table superstep_events: each superstep's events, counted per op as the tiles issue (worker
 * code included, wherever it sits in the stream) and taken at each sync; its rows sum to the run's
 * events, the exchange's wire events fall in the superstep that sent, what runs after the last
 * sync is a last row, and a loop around a sync gives a row per pass. */
START_TEST(superstep_events_sum_to_run)
{
    const char *p = ".arch ipu\n.stream tile 0\n  setzi $m1, 0x100\n  setzi $m2, 1\n  send $m1, $m2, 2\n  sync 1\n"
                    "  setzi $m1, 0\n  run w, $m1\n  sync 0\n  sync 1\n  halt\n"
                    "w:\n  setzi $m1, 0x100\n  ld32 $m3, $m1, 0\n  ld32 $m4, $m1, 4\n  exit\n"
                    ".data tile 0 0x100\n  .word 7, 9\n"
                    ".stream tile 1\n  setzi $m1, 0x40\n  setzi $m2, 0\n  recv $m1, $m2, 2\n  rxwait\n  sync 1\n"
                    "  sync 1\n  halt\n.stream tile 2\n  sync 1\n  sync 1\n  halt\n.stream tile 3\n  sync 1\n"
                    "  sync 1\n  halt\n";
    ipu_run r;
    ipu_test_run3("ipu_tiny4", NULL, p, &r);
    const ts_stat *t = ts_stats_find(r.r.stats, "superstep_events");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->nrows, 3); /* two supersteps and the halts after the last sync */
    events_sum_to_run(&r);
    ck_assert_double_gt(ipu_cell(&r, "superstep_events", 0, "wire_bit_mm"), 0);
    ck_assert_double_eq(ipu_cell(&r, "superstep_events", 1, "wire_bit_mm"), 0);
    ck_assert_double_eq(ipu_cell(&r, "superstep_events", 0, "sram_read_64b"), 1); /* the 8 bytes sent */
    ck_assert_double_eq(ipu_cell(&r, "superstep_events", 1, "sram_read_64b"), 1); /* the worker's two loads */
    ck_assert_double_eq(ipu_cell(&r, "superstep_events", 2, "insn_issue"), 4);    /* four halts */
    ipu_run_free(&r);
    char *loop = ipu_test_spmd(NULL, "  setzi $m1, 3\nl:\n  sync 1\n  brnzdec $m1, l\n  halt\n", 4);
    ipu_test_run("ipu_tiny4", NULL, loop, false, 1, &r);
    ck_assert_int_eq(r.rc, TS_OK);
    t = ts_stats_find(r.r.stats, "superstep_events");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->nrows, 5); /* four passes through the sync, then the halts */
    events_sum_to_run(&r);
    /* each pass after the first issues the sync and the brnzdec of the previous pass on 4 tiles */
    ck_assert_double_eq(ipu_cell(&r, "superstep_events", 1, "insn_issue"), 8);
    ipu_run_free(&r);
    free(loop);
}
END_TEST

/* The split of the columns over the threads by measured cost: contiguous, every column once,
 * each boundary where the prefix cost is nearest to its share; evenly when nothing was measured. */
START_TEST(split_by_cost)
{
    uint32_t b[5];
    const uint64_t zero[8] = {0};
    ts_ipu_split(zero, 8, 4, b);
    const uint32_t even[5] = {0, 2, 4, 6, 8};
    ck_assert_mem_eq(b, even, sizeof even);
    /* 200 in all: column 0 alone is half, column 7 nearly the other half */
    const uint64_t skew[8] = {100, 1, 1, 1, 1, 1, 1, 94};
    ts_ipu_split(skew, 8, 2, b);
    ck_assert_uint_eq(b[0], 0);
    ck_assert_uint_eq(b[1], 1); /* 100 | 100 */
    ck_assert_uint_eq(b[2], 8);
    ts_ipu_split(skew, 8, 4, b); /* shares of 50: 0 | 100 | 6 | 94, the heavy columns alone */
    const uint32_t four[5] = {0, 0, 1, 7, 8};
    ck_assert_mem_eq(b, four, sizeof four);
    ts_ipu_split(skew, 3, 4, b); /* more threads than columns: some take none */
    ck_assert_uint_eq(b[0], 0);
    ck_assert_uint_eq(b[4], 3);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_le(b[i], b[i + 1]);
}
END_TEST

/* Work on one column of four (small16: columns of 4 tiles): with as many threads as columns
 * each thread owns one, and the three idle ones take what they can of the busy one's parts; with more threads than columns some own none. The report is the same for every
 * count. The profile sees the work on that column only, and two meetings a round plus one a
 * sync. */
START_TEST(busy_column_any_threads)
{
    char *p = ipu_test_expand(".arch ipu\n.stream tile 0-11\n  setzi $m1, 4\nl:\n  sync 1\n  brnzdec $m1, l\n  halt\n"
                              ".stream tile 12-15\n  setzi $m1, 4\nl:\n  setzi $m2, 300\nk:\n  addi $m3, $m3, 1\n"
                              "  brnzdec $m2, k\n  sync 1\n  brnzdec $m1, l\n  halt\n");
    ipu_run ref;
    ipu_test_run3("ipu_small16", NULL, p, &ref);
    ts_buf want = TS_BUF_INIT;
    ts_report_json(&ref.r, &want);
    for (int threads = 4; threads <= 16; threads *= 4) {
        ipu_run r;
        ipu_test_run("ipu_small16", NULL, p, false, threads, &r);
        ck_assert_int_eq(r.rc, TS_OK);
        ts_buf got = TS_BUF_INIT;
        ts_report_json(&r.r, &got);
        ck_assert_str_eq(ts_buf_str(&got), ts_buf_str(&want));
        for (unsigned t = 12; t < 16; t++)
            ck_assert_uint_eq(ipu_peek32(&r, t, 0), ipu_peek32(&ref, t, 0));
        ts_buf_free(&got);
        ipu_run_free(&r);
    }
    ts_buf_free(&want);
    ipu_run_free(&ref);
    /* the profile of a one-thread run */
    void *cfg = ipu_test_config("ipu_small16", NULL);
    ts_program *prog = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_asm(&prog, "t.s", p, strlen(p), &ts_ipu_isa, &e), TS_OK);
    ts_run_opts o = {.threads = 1};
    ts_model *m = NULL;
    ck_assert_int_eq(ts_ipu_family.create(&m, cfg, &o, &e), TS_OK);
    ck_assert_int_eq(ts_ipu_profile_on(m, &e), TS_OK);
    ck_assert_int_eq(ts_ipu_family.load(m, prog, &e), TS_OK);
    ts_step st = {0};
    while (!st.done)
        ck_assert_int_eq(ts_ipu_family.step(m, st.now + 65536, &st, &e), TS_OK);
    ts_ipu_profile pr;
    ts_ipu_profile_get(m, &pr);
    ck_assert(pr.complete);
    ck_assert_uint_eq(pr.ncols, 4);
    ck_assert_uint_eq(pr.supersteps, 5);
    ck_assert_uint_gt(pr.rounds, 0);
    ck_assert_uint_eq(pr.meetings, 2 * pr.rounds + pr.supersteps);
    uint64_t busy = 0, idle = 0;
    const uint32_t n = 4 * pr.parts; /* values per round: the parts of column 3 come last */
    for (uint64_t k = 0; k < pr.rounds; k++)
        for (uint32_t u = 0; u < n; u++) {
            uint64_t w = pr.colw[k * n + u];
            if (u < 3 * pr.parts)
                idle = w > idle ? w : idle;
            else
                busy += w;
        }
    ck_assert_uint_gt(busy, 5 * 4 * 300 * 2); /* the loops' addi and brnzdec, on four tiles */
    ck_assert_uint_lt(idle, 4 * 3);           /* a few instructions a round elsewhere */
    ts_ipu_family.destroy(m);
    ts_program_destroy(prog);
    ts_config_destroy(cfg);
    free(p);
}
END_TEST

/* Every allocation of create, load, run and collect may fail: each failure is TS_ENOMEM, and
 * nothing leaks (the sanitizer build checks), with one thread and with three. */
START_TEST(allocation_failures)
{
    char *text = p2p(3);
    for (int threads = 1; threads <= 3; threads += 2) {
        void *cfg = ipu_test_config("ipu_tiny4", NULL);
        ts_program *p = NULL;
        ts_err e;
        ts_err_init(&e);
        ck_assert_int_eq(ts_asm(&p, "t.s", text, strlen(text), &ts_ipu_isa, &e), TS_OK);
        bool done = false;
        for (long n = 1; !done && n < 10000; n++) {
            ts_err_free(&e);
            ts_err_init(&e);
            ts_run_opts o = {.threads = threads};
            ts_model *m = NULL;
            ts_results r;
            memset(&r, 0, sizeof r);
            ts_alloc_fail_after(n);
            ts_status rc = ts_ipu_family.create(&m, cfg, &o, &e);
            if (rc == TS_OK)
                rc = ts_ipu_family.load(m, p, &e);
            ts_step st = {0};
            while (rc == TS_OK && !st.done)
                rc = ts_ipu_family.step(m, st.now + 65536, &st, &e);
            if (rc == TS_OK) {
                ts_results_init(&r);
                rc = ts_ipu_family.collect(m, &r, &e);
            }
            long failures = ts_alloc_failures();
            ts_alloc_fail_after(0);
            ts_results_free(&r);
            ts_ipu_family.destroy(m);
            if (failures == 0) {
                ck_assert_int_eq(rc, TS_OK);
                done = true;
            } else {
                ck_assert_msg(rc == TS_ENOMEM, "allocation %ld failed but the run says %s: %s", n,
                              ts_status_name(rc), e.msg);
            }
        }
        ck_assert(done);
        ts_err_free(&e);
        ts_program_destroy(p);
        ts_config_destroy(cfg);
    }
    free(text);
}
END_TEST

/* With a trace, every superstep is a slice on the chip's row and on each tile's row. */
START_TEST(trace_slices)
{
    char path[] = "/tmp/ts_ipu_traceXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    void *cfg = ipu_test_config("ipu_tiny4", NULL);
    char *text = p2p(3);
    ts_program *p = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_asm(&p, "t.s", text, strlen(text), &ts_ipu_isa, &e), TS_OK);
    ts_trace *tr = NULL;
    ck_assert_int_eq(ts_trace_open(&tr, path, 1.6e9, 0, &e), TS_OK);
    ts_run_opts o = {.trace = tr};
    ts_model *m = NULL;
    ck_assert_int_eq(ts_ipu_family.create(&m, cfg, &o, &e), TS_OK);
    ck_assert_int_eq(ts_ipu_family.load(m, p, &e), TS_OK);
    ts_step st = {0};
    while (!st.done)
        ck_assert_int_eq(ts_ipu_family.step(m, st.now + 65536, &st, &e), TS_OK);
    ts_ipu_family.destroy(m);
    ck_assert_int_eq(ts_trace_close(tr, &e), TS_OK);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    remove(path);
    ck_assert_ptr_nonnull(strstr(buf, "\"critical_tile\":3"));
    ck_assert_ptr_nonnull(strstr(buf, "\"tile 3\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"sync wait\""));
    ts_program_destroy(p);
    ts_err_free(&e);
    free(text);
    ts_config_destroy(cfg);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ipu_bsp");
    TCase *t = tcase_create("bsp");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, latency_table);
    tcase_add_test(t, exchange_point_to_point);
    tcase_add_test(t, exchange_broadcast);
    tcase_add_test(t, exchange_long_sends);
    tcase_add_test(t, exchange_spine);
    tcase_add_test(t, exchange_spine_out_of_order);
    tcase_add_test(t, exchange_mux_and_pointer);
    tcase_add_test(t, exchange_interleaved_receivers);
    tcase_add_test(t, exchange_parked_receivers);
    tcase_add_test(t, exchange_words_while_busy);
    tcase_add_test(t, exchange_errors);
    tcase_add_test(t, sync_cost);
    tcase_add_test(t, release_skew);
    tcase_add_test(t, host_transfers);
    tcase_add_test(t, energy_events_priced);
    tcase_add_test(t, energy_int_mul);
    tcase_add_test(t, superstep_events_sum_to_run);
    tcase_add_test(t, split_by_cost);
    tcase_add_test(t, busy_column_any_threads);
    tcase_add_test(t, allocation_failures);
    tcase_add_test(t, trace_slices);
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
