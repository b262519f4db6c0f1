/* tests/arch/ipu/test_ipu_random.c — random instruction streams on four tiles: whatever they do
 * (finish, fail with a simulation error, run past the cycle limit), every mode of the harness
 * (tests/arch/arch_modes.h: fast, lockstep, threads) must end the same way: the same status,
 * message, tile and cycle, and for runs that finish the same report and tile memory. Also a crash
 * and leak check under the sanitizers. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"
#include "core/program.h"
#include "tests/arch/ipu/ipu_test.h"

/* Whether program n runs: every one, but under ThreadSanitizer (arch_tsan) every fifth (3, 8, 13,
 * ...: random and safe streams and exchanges, two of the four that reach the cycle limit among
 * the first thousand streams). Each is still made,
 * so the ones that run are the same programs in every build. Their runs are each tile's code on 4
 * tiles over 3 threads: more programs reach more of a tile's code rather than more of what the
 * threads share, and the other builds run them all (the thousands took about 26 s of CPU under
 * ThreadSanitizer). The mixes asserted below scale with the count run. */
static bool runs(int n)
{
    return !arch_tsan() || n % 5 == 3;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* Supervisor-safe instructions with valid addresses: these programs mostly finish. */
static ts_program *safe_program(unsigned tiles, unsigned len, bool spin)
{
    static const uint16_t ops[] = {IPU_OP_ADD, IPU_OP_ADDI, IPU_OP_SUB, IPU_OP_MUL, IPU_OP_XOR, IPU_OP_SHLI,
                                   IPU_OP_CMPULT, IPU_OP_GET, IPU_OP_NOP, IPU_OP_LD32, IPU_OP_ST32, IPU_OP_BRNZ,
                                   IPU_OP_SYNC, IPU_OP_DELAY, IPU_OP_LD32, IPU_OP_ST32, IPU_OP_ADDI};
    ts_program *p = ts_program_create("ipu");
    ck_assert_ptr_nonnull(p);
    for (unsigned t = 0; t < tiles; t++) {
        ts_stream *s = ts_program_stream(p, 0, t);
        ck_assert_ptr_nonnull(s);
        for (int r = 0; r < 4; r++) {
            ts_insn *in = ts_stream_emit(s, IPU_OP_SETZI);
            in->a[0] = r;
            in->a[1] = (int32_t)(0x100 * (r + 1));
        }
        for (unsigned k = 0; k < len; k++) {
            uint16_t op = ops[rnd(sizeof ops / sizeof ops[0])];
            ts_insn *in = ts_stream_emit(s, op);
            uint32_t pc = s->n - 1;
            switch (op) {
            case IPU_OP_GET: in->a[0] = 4 + (int32_t)rnd(4); in->a[1] = (int32_t)rnd(4); break;
            case IPU_OP_LD32:
            case IPU_OP_ST32:
                in->a[0] = 4 + (int32_t)rnd(4);
                in->a[1] = (int32_t)rnd(4);
                in->a[2] = 4 * (int32_t)rnd(16);
                break;
            case IPU_OP_BRNZ: in->a[0] = 4 + (int32_t)rnd(4); in->a[1] = (int32_t)(pc + 1 + rnd(4)); break;
            case IPU_OP_SYNC: in->a[0] = 1; break;
            case IPU_OP_DELAY: in->a[0] = (int32_t)rnd(40); break;
            case IPU_OP_ADDI:
            case IPU_OP_SHLI: in->a[0] = 4 + (int32_t)rnd(4); in->a[1] = 4 + (int32_t)rnd(4); in->a[2] = (int32_t)rnd(9); break;
            case IPU_OP_NOP: break;
            default: in->a[0] = 4 + (int32_t)rnd(4); in->a[1] = 4 + (int32_t)rnd(4); in->a[2] = 4 + (int32_t)rnd(4); break;
            }
        }
        if (spin && t == 1) { /* a loop that never ends: the run meets the cycle limit */
            ts_insn *in = ts_stream_emit(s, IPU_OP_BR);
            in->a[0] = (int32_t)(s->n - 1);
        }
        for (int k = 0; k < 4; k++) /* branch targets past the end land on a halt */
            ts_stream_emit(s, IPU_OP_HALT);
    }
    return p;
}

/* Supersteps of ring exchanges with worker compute (store-free AMP loops, so the closed form
 * applies) before or after the receive is armed, random delays and word counts. */
static char *exchange_program(unsigned tiles)
{
    unsigned steps = 1 + rnd(4), words[8];
    for (unsigned k = 0; k < steps; k++)
        words[k] = 1 + rnd(24);
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, ".arch ipu\n");
    for (unsigned t = 0; t < tiles; t++) {
        ts_buf_printf(&b, ".stream tile %u\n", t);
        for (unsigned k = 1; k <= steps; k++) {
            unsigned src = (t + tiles - k % tiles) % tiles, dst = (t + k) % tiles;
            bool early = rnd(5) != 0;
            char recv[96];
            snprintf(recv, sizeof recv, "  setzi $m4, 0x%x\n  setzi $m5, %u\n  recv $m4, $m5, %u\n", 0x8000 + 0x100 * k,
                     src, words[k - 1]);
            if (early)
                ts_buf_puts(&b, recv);
            if (rnd(2))
                ts_buf_printf(&b, "  setzi $m6, %u\n  runall w, $m6\n  sync 0\n", 1 + rnd(40));
            if (!early)
                ts_buf_puts(&b, recv);
            ts_buf_printf(&b, "  delay %u\n  setzi $m4, 0x100\n  setzi $m5, %u\n  send $m4, $m5, %u\n  rxwait\n  sync 1\n",
                          rnd(30), dst, words[k - 1]);
        }
        ts_buf_puts(&b, "  halt\nw:\n  get $m1, 2\n  shli $m2, $m1, 8\n  addi $m2, $m2, 0x4000\n  ampzero\n");
        if (rnd(2)) /* the loop as bundles: each load feeds the AMP on the next issue */
            ts_buf_puts(&b, "  rpt $m0, 4\n  {\n  ld64step $a0, $m2, 8\n  f32v2amp $a0\n  }\n");
        else
            ts_buf_puts(&b, "  rpt $m0, 2\n  ld64step $a0, $m2, 8\n  f32v2amp $a0\n");
        ts_buf_puts(&b, "  ampget $a0, 0\n  shli $m3, $m1, 3\n  addi $m3, $m3, 0x5000\n  st64 $a0, $m3, 0\n  exit\n");
    }
    return b.data;
}

static ts_program *random_program(unsigned tiles, unsigned len)
{
    ts_program *p = ts_program_create("ipu");
    ck_assert_ptr_nonnull(p);
    static const int32_t imms[] = {0, 1, 2, 3, 4, 6, 8, 16, 64, 0x100, 0x200, -1, -4, 1000};
    for (unsigned t = 0; t < tiles; t++) {
        ts_stream *s = ts_program_stream(p, 0, t);
        ck_assert_ptr_nonnull(s);
        /* a prologue that puts aligned addresses and small tile ids in registers */
        for (int r = 0; r < 8; r++) {
            ts_insn *in = ts_stream_emit(s, IPU_OP_SETZI);
            in->a[0] = r;
            in->a[1] = r < 4 ? (int32_t)(0x100 * (r + 1)) : (int32_t)rnd(tiles);
        }
        for (unsigned k = 0; k < len; k++) {
            uint16_t op = (uint16_t)rnd(IPU_OP_COUNT);
            if (op == IPU_OP_HOSTRD || op == IPU_OP_HOSTWR || op == IPU_OP_BUNDLE_END)
                op = IPU_OP_NOP;
            int part = 0; /* a bundle: `{`, then a main-pipeline op, an auxiliary one, `}` */
            if (op == IPU_OP_BUNDLE) {
                ts_stream_emit(s, IPU_OP_BUNDLE);
                part = 1;
            }
        member:
            if (part == 1 || part == 2) {
                do
                    op = (uint16_t)rnd(IPU_OP_COUNT);
                while (part == 1 ? ts_ipu_opfacts[op].unit != IPU_U_ALU && ts_ipu_opfacts[op].unit != IPU_U_MEM
                                 : (ts_ipu_opfacts[op].unit != IPU_U_FPU && ts_ipu_opfacts[op].unit != IPU_U_AMP) ||
                                       op == IPU_OP_LD128PUTCS);
            }
            ts_insn *in = ts_stream_emit(s, op);
            const char *cls = ts_ipu_opfacts[op].classes;
            for (int j = 0; cls[j]; j++) {
                switch (cls[j]) {
                case 'm': in->a[j] = (int32_t)rnd(8); break;
                case 'a': in->a[j] = IPU_AREG0 + (int32_t)rnd(16); break;
                case 'p': in->a[j] = IPU_AREG0 + 2 * (int32_t)rnd(8); break;
                case 'q': in->a[j] = IPU_AREG0 + 4 * (int32_t)rnd(4); break;
                case 'x': in->a[j] = (int32_t)rnd(2) ? (int32_t)rnd(8) : IPU_AREG0 + (int32_t)rnd(16); break;
                case 'i': in->a[j] = op == IPU_OP_SYNC ? (int32_t)rnd(2) :
                                     (op == IPU_OP_RPTI || op == IPU_OP_RPT) && j == (op == IPU_OP_RPT ? 1 : 1) ?
                                     1 + (int32_t)rnd(2) : imms[rnd(sizeof imms / sizeof imms[0])];
                    break;
                case 'f': in->a[j] = 0x3fc00000; break;
                case 'l': in->a[j] = (int32_t)(8 + rnd(len + 1)); break;
                default: break;
                }
            }
            if (part == 1 || part == 2) {
                part++;
                if (part == 3)
                    ts_stream_emit(s, IPU_OP_BUNDLE_END);
                else
                    goto member;
            }
        }
        ts_stream_emit(s, IPU_OP_HALT);
    }
    return p;
}

/* On a difference, the program is left in /tmp/ipu_rand.s for a closer look. */
static void dump(const ts_program *p)
{
    ts_buf txt = TS_BUF_INIT;
    ts_err de;
    ts_err_init(&de);
    ts_disasm(p, &ts_ipu_isa, &txt, &de);
    FILE *f = fopen("/tmp/ipu_rand.s", "w");
    if (f) {
        fputs(ts_buf_str(&txt), f);
        fclose(f);
    }
    ts_buf_free(&txt);
    ts_err_free(&de);
}

/* The end of a worker's program: its AMP's two accumulator pairs stored at 0x7000 + 16 x its
 * worker index, so that the tile memory the modes compare holds them. */
#define AMP_OUT                                                                                      \
    "  ampget $a0, 0\n  ampget $a2, 1\n  shli $m7, $m1, 4\n  addi $m7, $m7, 0x7000\n"               \
    "  st64 $a0, $m7, 0\n  st64 $a2, $m7, 8\n  exit\n"

/* text (freed) assembled and run in the modes of o: the test stops, naming program n and dumping
 * it, where a mode differs from the reference, whose run is then in *a (the caller frees it and the
 * program returned, after reading the model). */
static ts_program *agree(void *cfg, const arch_opts *o, int n, char *text, arch_run *a)
{
    ts_program *p = NULL;
    ts_err ae;
    ts_err_init(&ae);
    ck_assert_msg(ts_asm(&p, "x.s", text, strlen(text), &ts_ipu_isa, &ae) == TS_OK, "%s\n%s", ae.msg, text);
    ts_buf diff = TS_BUF_INIT;
    if (!arch_modes_compare(&ts_ipu_family, cfg, p, o, a, &diff)) {
        dump(p);
        ck_abort_msg("program %d: %s", n, ts_buf_str(&diff));
    }
    ts_buf_free(&diff);
    ts_free(text);
    return p;
}

START_TEST(random_streams_agree)
{
    void *cfg = ipu_test_config("ipu_tiny4", NULL);
    arch_opts o = ipu_test_opts();
    o.run.max_cycles = 6000;
    unsigned finished = 0, failed = 0, limited = 0, ran = 0;
    for (int n = 0; n < 1000; n++) {
        ts_program *p = NULL;
        if (n % 3 == 2) {
            char *text = exchange_program(4);
            ts_err ae;
            ts_err_init(&ae);
            ck_assert_int_eq(ts_asm(&p, "x.s", text, strlen(text), &ts_ipu_isa, &ae), TS_OK);
            ts_free(text);
        } else {
            p = n % 2 ? safe_program(4, 12 + rnd(40), n % 10 == 5) : random_program(4, 12 + rnd(30));
        }
        if (!runs(n)) {
            ts_program_destroy(p);
            continue;
        }
        ran++;
        arch_run a;
        ts_buf diff = TS_BUF_INIT;
        if (!arch_modes_compare(&ts_ipu_family, cfg, p, &o, &a, &diff)) {
            dump(p);
            ck_abort_msg("program %d: %s", n, ts_buf_str(&diff));
        }
        bool limit = a.rc == TS_ESIM && strstr(a.err.msg, "cycle limit") != NULL;
        if (getenv("IPU_RANDOM_VERBOSE") && n % 3 == 2)
            fprintf(stderr, "%d: %s %s\n", n, a.rc == TS_OK ? "done" : ts_status_name(a.rc), a.err.msg);
        finished += a.rc == TS_OK;
        failed += a.rc != TS_OK && !limit;
        limited += limit;
        arch_run_free(&a);
        ts_buf_free(&diff);
        ts_program_destroy(p);
    }
    /* the mix this seed gives: every kind of ending occurs */
    ck_assert_uint_gt(finished, ran / 10);
    ck_assert_uint_gt(failed, ran / 10);
    ck_assert_uint_gt(limited, 0);
    ts_config_destroy(cfg);
}
END_TEST

/* The header of a random worker program and its data: 1024 random f32 words in [1, 16) at 0x2000
 * of tile 0. */
static void data_words(ts_buf *b)
{
    ts_buf_puts(b, ".arch ipu\n.data tile 0 0x2000\n");
    for (int k = 0; k < 1024; k++)
        ts_buf_printf(b, "%s0x%x%s", k % 8 ? ", " : "  .word ", 0x3f800000u + rnd(1u << 23) + (rnd(4) << 24),
                      k % 8 == 7 ? "\n" : "");
}

/* Six workers in repeat loops that store, load coefficients and step pointers, set up so that
 * their bytes are apart, overlap, or are the same (workers whose ids are masked to the same value
 * do the same work): the fast mode runs such loops without the barrel's bookkeeping (workers_run
 * in ipu_exec.c), which must give what the barrel's issue cycle by cycle gives. */
static char *loop_program(void)
{
    static const char *const body_ops[] = {
        "  ld32step $a%u, $m2, 4\n", "  ld32step $a%u, $m2, 8\n", "  st32step $a%u, $m3, 4\n",
        "  st32step $a%u, $m3, 8\n", "  st32step $a%u, $m3, -4\n", "  f32add $a%u, $a1, $a2\n",
        "  addi $m2, $m2, 4\n", "  addi $m3, $m3, 8\n", "  ld32 $a%u, $m2, 12\n", "  st32 $a%u, $m3, 4\n",
        "  ld128putcs $m5, %u\n  addi $m5, $m5, 16\n", "  f32v2amp $a0\n", "  f16v4amp $a0\n",
        "  ld64step $a0, $m6, 8\n", "  st64step $a4, $m3, 8\n", "  ldst64pace $a6, $a0, $m2, $m3\n",
        "  ld32 $a%u, $m3, 0\n", "  st32 $a%u, $m2, 0\n", "  ld128putcsstep $m5, %u\n",
        "  add $m3, $m3, $m9\n", "  ld32step $m3, $m6, 4\n", "  addi $m9, $m9, 1\n",
    };
    static const unsigned masks[] = {7, 7, 1, 6, 0}, strides[] = {0, 8, 16, 32, 64, 256, 512};
    ts_buf b = TS_BUF_INIT;
    data_words(&b);
    ts_buf_printf(&b, ".stream tile 0\n  setzi $m1, %u\n  runall w, $m1\n  sync 0\n", 1 + rnd(40));
    ts_buf_puts(&b, "  halt\nw:\n  get $m1, 2\n");
    /* $m2 and $m6 read, $m3 stores, $m5 loads coefficients: each from its base at id x stride */
    static const char regs[] = {2, 6, 3, 5};
    for (int i = 0; i < 4; i++) {
        unsigned base = i == 2 && rnd(3) ? 0x2000 + 8 * rnd(512) : i == 3 ? 0x2000 + 16 * rnd(128) : 0x2000 + 8 * rnd(256);
        ts_buf_printf(&b, "  andi $m8, $m1, %u\n  muli $m%d, $m8, %u\n  addi $m%d, $m%d, %u\n", masks[rnd(5)], regs[i],
                      strides[rnd(7)], regs[i], regs[i], base);
    }
    ts_buf_puts(&b, "  setzi $m9, 4\n  ampzero\n  ld64 $a0, $m2, 0\n  ld64 $a2, $m6, 0\n");
    if (rnd(2)) /* workers that end one after another while the supervisor waits at sync 0 */
        ts_buf_puts(&b, "  add $m0, $m0, $m1\n");
    unsigned n = 1 + rnd(5), len = 0;
    ts_buf body = TS_BUF_INIT;
    for (unsigned k = 0; k < n; k++) {
        unsigned op = rnd(sizeof body_ops / sizeof body_ops[0]);
        if (op >= 19 && rnd(3)) /* pointers written otherwise than by steps: now and then */
            op = rnd(19);
        ts_buf_printf(&body, body_ops[op], op == 10 ? rnd(4) : 1 + rnd(3));
        len += op == 10 ? 2 : 1;
    }
    ts_buf_printf(&b, "  rpt $m0, %u\n%s", len, ts_buf_str(&body));
    ts_buf_free(&body);
    ts_buf_puts(&b, AMP_OUT);
    return b.data;
}

START_TEST(random_loops_agree)
{
    void *cfg = ipu_test_config("ipu_tiny4", NULL);
    arch_opts o = ipu_test_opts();
    o.run.max_cycles = 20000;
    unsigned finished = 0, closed = 0, ran = 0;
    for (int n = 0; n < 600; n++) {
        char *text = loop_program();
        if (!runs(n)) {
            ts_free(text);
            continue;
        }
        ran++;
        arch_run a;
        ts_program *p = agree(cfg, &o, n, text, &a);
        finished += a.rc == TS_OK;
        closed += a.m && a.m->t[0].cf_turns > 0;
        arch_run_free(&a);
        ts_program_destroy(p);
    }
    if (getenv("IPU_RANDOM_VERBOSE"))
        fprintf(stderr, "loops: %u finished, %u closed\n", finished, closed);
    /* most finish, and most ran loops in closed form */
    ck_assert_uint_gt(finished, ran / 2);
    ck_assert_uint_gt(closed, ran / 6);
    ts_config_destroy(cfg);
}
END_TEST

/* Workers in step (started together, running the same code) through straight-line code, repeat
 * bodies and loops, some of which take them out of step: trip counts or repeat counts that
 * depend on the worker, workers that exit early (the others go on in step, the supervisor
 * waiting), accesses that leave the memory for some workers only, stores into pages not yet
 * there, bundles and ops the in-step path does not do itself. The fast mode runs the turns in
 * which every worker is at one pc for all of them at once (in_step_run in ipu_exec.c); that must
 * give what issue cycle by cycle gives, tile memory included. */
static char *step_program(bool *run_one)
{
    static const char *const ops[] = {
        "  ld32 $a%u, $m2, 12\n", "  ld32step $a%u, $m2, 4\n", "  st32 $a%u, $m3, 4\n", "  st32step $a%u, $m3, 4\n",
        "  ld64 $a4, $m6, 8\n", "  ld64step $a0, $m6, 8\n", "  f32add $a%u, $a1, $a2\n", "  f32max $a%u, $a2, $a1\n",
        "  f32v2add $a4, $a0, $a2\n", "  f32v2tof16 $a%u, $a0\n", "  ld128putcs $m5, %u\n  addi $m5, $m5, 16\n",
        "  f32v2amp $a0\n", "  f16v4amp $a0\n", "  ampzero\n", "  ampget $a4, %u\n", "  mov $a%u, $a3\n",
        "  add $m3, $m3, $m9\n", "  setzi $a%u, 0x3f800000\n", "  nop\n", "  ld32 $a%u, $m3, 0\n",
        "  st32 $a%u, $m2, 0\n", "  addi $m2, $m2, 8\n", "  sub $m9, $m9, $m1\n", "  ldz16 $m11, $m2, 2\n",
        "  {\n  ld64step $a0, $m6, 8\n  f32v2amp $a0\n  }\n", "  mov $m12, $m3\n  st32step $a%u, $m12, 8\n",
        "  ld128putcsstep $m5, %u\n", "  f32v4tof16 $a4, $a0\n",
    };
    static const unsigned masks[] = {7, 7, 1, 6, 0}, strides[] = {0, 8, 16, 32, 64, 256, 4096};
    ts_buf b = TS_BUF_INIT;
    data_words(&b);
    *run_one = rnd(6) == 0; /* three workers started turns apart: not in step */
    unsigned cnt = 1 + rnd(12);
    if (*run_one)
        ts_buf_printf(&b, ".stream tile 0\n  setzi $m1, %u\n  run w, $m1\n  delay 4\n  run w, $m1\n  delay 9\n  run w, $m1\n  sync 0\n"
                          "  halt\nw:\n  get $m1, 2\n", cnt);
    else
        ts_buf_printf(&b, ".stream tile 0\n  setzi $m1, %u\n  runall w, $m1\n  sync 0\n  halt\nw:\n  get $m1, 2\n", cnt);
    /* $m2 and $m6 read, $m3 stores, $m5 loads coefficients: each from its base at (id & mask) x stride;
     * now and then $m2 near the end of the memory, so that some workers' accesses leave it */
    static const char regs[] = {2, 6, 3, 5};
    for (int i = 0; i < 4; i++) {
        unsigned base = i == 0 && rnd(12) == 0 ? 0xffc0 - 4 * rnd(8) : i == 2 && rnd(3) ? 0x2000 + 8 * rnd(1024) :
                        i == 3 ? 0x2000 + 16 * rnd(128) : 0x2000 + 8 * rnd(256);
        ts_buf_printf(&b, "  andi $m8, $m1, %u\n  muli $m%d, $m8, %u\n  addi $m%d, $m%d, %u\n", masks[rnd(5)], regs[i],
                      strides[rnd(7)], regs[i], regs[i], base);
    }
    ts_buf_puts(&b, "  setzi $m9, 4\n  ampzero\n  ld64 $a0, $m2, 0\n  ld64 $a2, $m6, 0\n");
    unsigned blocks = 1 + rnd(5), label = 0;
    for (unsigned k = 0; k < blocks; k++) {
        unsigned kind = rnd(6), n = 1 + rnd(5);
        ts_buf body = TS_BUF_INIT;
        unsigned len = 0;
        for (unsigned j = 0; j < n; j++) {
            unsigned op = rnd(sizeof ops / sizeof ops[0]);
            ts_buf_printf(&body, ops[op], op == 10 ? rnd(4) : op == 14 ? rnd(2) : 1 + rnd(3));
            len += op == 10 || op == 25 ? 2 : op == 24 ? 4 : 1;
        }
        switch (kind) {
        case 0: /* straight-line code */
            ts_buf_puts(&b, ts_buf_str(&body));
            break;
        case 1: /* a repeat body, the same count for all */
            ts_buf_printf(&b, "  rpt $m0, %u\n%s", len, ts_buf_str(&body));
            break;
        case 2: /* a repeat body whose count depends on the worker */
            ts_buf_printf(&b, "  andi $m10, $m1, %u\n  addi $m10, $m10, %u\n  rpt $m10, %u\n%s", masks[rnd(5)], rnd(3),
                          len, ts_buf_str(&body));
            break;
        case 3: /* a loop whose trip count may depend on the worker */
            ts_buf_printf(&b, "  andi $m10, $m1, %u\n  addi $m10, $m10, %u\nL%u:\n%s  brnzdec $m10, L%u\n",
                          masks[rnd(5)], rnd(4), label, ts_buf_str(&body), label);
            label++;
            break;
        case 4: /* some workers end here */
            ts_buf_printf(&b, "  andi $m10, $m1, %u\n  brnz $m10, E\n%s", 1 + rnd(7), ts_buf_str(&body));
            break;
        default: /* a fixed repeat count */
            ts_buf_printf(&b, "  rpti %u, %u\n%s", 1 + rnd(6), len, ts_buf_str(&body));
            break;
        }
        ts_buf_free(&body);
    }
    ts_buf_puts(&b, "E:\n" AMP_OUT);
    return b.data;
}

START_TEST(random_steps_agree)
{
    void *cfg = ipu_test_config("ipu_tiny4", NULL);
    arch_opts o = ipu_test_opts();
    o.run.max_cycles = 20000;
    unsigned finished = 0, failed = 0, stepped = 0, apart = 0, ran = 0;
    for (int n = 0; n < 400; n++) {
        bool run_one;
        char *text = step_program(&run_one);
        if (!runs(n)) {
            ts_free(text);
            continue;
        }
        ran++;
        arch_run a;
        ts_program *p = agree(cfg, &o, n, text, &a);
        finished += a.rc == TS_OK;
        failed += a.rc == TS_ESIM;
        stepped += a.m && a.m->t[0].step_turns > 0;
        apart += run_one && a.m && a.m->t[0].step_turns == 0;
        arch_run_free(&a);
        ts_program_destroy(p);
    }
    if (getenv("IPU_RANDOM_VERBOSE"))
        fprintf(stderr, "steps: %u finished, %u failed, %u in step, %u never in step\n", finished, failed, stepped, apart);
    /* most finish, some fail (an access out of the memory), most ran turns in step */
    ck_assert_uint_gt(finished, ran * 5 / 8);
    ck_assert_uint_gt(failed, ran / 80);
    ck_assert_uint_gt(stepped, ran * 5 / 8);
    ts_config_destroy(cfg);
}
END_TEST

int main(void)
{
    arch_modes_default = ARCH_MODES_QUICK; /* a thousand programs: lockstep on threads would take half a minute */
    Suite *s = suite_create("ipu_random");
    TCase *t = tcase_create("random");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, random_streams_agree);
    tcase_add_test(t, random_loops_agree);
    tcase_add_test(t, random_steps_agree);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
