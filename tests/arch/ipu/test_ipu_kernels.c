/* tests/arch/ipu/test_ipu_kernels.c — two kernels written in IPU assembly over the 16 tiles of
 * ipu_small16, checked bit for bit against C references that add in the same order:
 *  - a 96x16 by 16x16 f32 matmul on the AMP: B starts distributed (one row per tile) and is
 *    all-gathered over the exchange (each tile broadcasts in turn); every worker owns one row
 *    of A and C;
 *  - a 3x3 convolution of a 64x32 image split into strips of 4 rows, the halo rows swapped with
 *    both neighbours in two supersteps, then computed by four workers per tile with f32mac.
 * Both run in every mode of tests/arch/arch_modes.h (fast, lockstep, threads) with equal reports
 * (ipu_test_run3). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "tests/arch/ipu/ipu_test.h"

static uint32_t bits(float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    return v;
}

static void words(ts_buf *b, unsigned tile, unsigned addr, const float *v, size_t n)
{
    ts_buf_printf(b, ".data tile %u 0x%x\n", tile, addr);
    for (size_t i = 0; i < n; i++)
        ts_buf_printf(b, "%s0x%08x%s", i % 8 ? ", " : "  .word ", bits(v[i]), i % 8 == 7 || i + 1 == n ? "\n" : "");
}

/* Tile memory map: B (16 x 16 f32) at 0x0, coefficient scratch at 0x1000, A rows at 0x2000
 * (64 B per worker), C rows at 0x3000. */
static const char matmul_body[] =
    "  get $m10, 0\n"
    "  setzi $m11, 0\n"
    "round:\n"
    "  muli $m13, $m11, 64\n"
    "  cmpeq $m12, $m11, $m10\n"
    "  brnz $m12, mine\n"
    "  recv $m13, $m11, 16\n"
    "  rxwait\n"
    "  br next\n"
    "mine:\n"
    "  setzi $m14, -1\n"
    "  send $m13, $m14, 16\n"
    "next:\n"
    "  addi $m11, $m11, 1\n"
    "  setzi $m12, 16\n"
    "  cmpult $m12, $m11, $m12\n"
    "  brnz $m12, round\n"
    "  sync 1\n"
    "  setzi $m5, 0\n"
    "gl:\n"
    "  setzi $m9, 0\n"
    "  runall zero, $m9\n"
    "  sync 0\n"
    "  setzi $m6, 0\n"
    "pl:\n"
    "  muli $m7, $m6, 128\n"
    "  muli $m8, $m5, 16\n"
    "  add $m7, $m7, $m8\n"
    "  run ldr, $m7\n"
    "  sync 0\n"
    "  muli $m9, $m6, 8\n"
    "  runall ampv, $m9\n"
    "  sync 0\n"
    "  addi $m6, $m6, 1\n"
    "  setzi $m12, 8\n"
    "  cmpult $m12, $m6, $m12\n"
    "  brnz $m12, pl\n"
    "  muli $m9, $m5, 16\n"
    "  runall stv, $m9\n"
    "  sync 0\n"
    "  addi $m5, $m5, 1\n"
    "  setzi $m12, 4\n"
    "  cmpult $m12, $m5, $m12\n"
    "  brnz $m12, gl\n"
    "  sync 1\n"
    "  halt\n"
    "zero:\n"
    "  ampzero\n"
    "  exit\n"
    "ldr:\n" /* coefficients w[u][j] = B[2p + j][4g + u], from $m0 = &B[2p][4g] */
    "  setzi $m2, 0x1000\n"
    "  ld32 $a0, $m0, 0\n  ld32 $a1, $m0, 64\n  st64 $a0, $m2, 0\n"
    "  ld32 $a0, $m0, 4\n  ld32 $a1, $m0, 68\n  st64 $a0, $m2, 8\n"
    "  ld32 $a0, $m0, 8\n  ld32 $a1, $m0, 72\n  st64 $a0, $m2, 16\n"
    "  ld32 $a0, $m0, 12\n  ld32 $a1, $m0, 76\n  st64 $a0, $m2, 24\n"
    "  ld128putcs $m2, 0\n"
    "  addi $m2, $m2, 16\n"
    "  ld128putcs $m2, 1\n"
    "  exit\n"
    "ampv:\n" /* acc[u] += w[u][0] A[row][2p] + w[u][1] A[row][2p + 1] */
    "  get $m1, 2\n"
    "  muli $m2, $m1, 64\n"
    "  addi $m2, $m2, 0x2000\n"
    "  add $m2, $m2, $m0\n"
    "  ld64 $a0, $m2, 0\n"
    "  f32v2amp $a0\n"
    "  exit\n"
    "stv:\n"
    "  get $m1, 2\n"
    "  muli $m2, $m1, 64\n"
    "  addi $m2, $m2, 0x3000\n"
    "  add $m2, $m2, $m0\n"
    "  ampget $a0, 0\n"
    "  ampget $a2, 1\n"
    "  st64 $a0, $m2, 0\n"
    "  st64 $a2, $m2, 8\n"
    "  exit\n";

START_TEST(matmul_16_tiles)
{
    enum { M = 96, K = 16, N = 16 };
    static float A[M][K], B[K][N], C[M][N];
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
            A[i][k] = (float)((i * 31 + k * 17) % 23 - 11) / 8.0f + 0.1f * (float)k;
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++)
            B[k][n] = (float)((k * 13 + n * 7) % 19 - 9) / 4.0f - 0.03f * (float)n;
    for (int i = 0; i < M; i++)
        for (int n = 0; n < N; n++) {
            float acc = 0;
            for (int p = 0; p < K / 2; p++) {
                float s = B[2 * p][n] * A[i][2 * p] + B[2 * p + 1][n] * A[i][2 * p + 1];
                acc += s;
            }
            C[i][n] = acc;
        }
    ts_buf b = TS_BUF_INIT;
    char *code = ipu_test_spmd(".workload \"matmul 96x16x16 f32 over 16 tiles\"\n", matmul_body, 16);
    ts_buf_puts(&b, code);
    free(code);
    for (unsigned t = 0; t < 16; t++) {
        words(&b, t, 64 * t, B[t], N);
        words(&b, t, 0x2000, &A[6 * t][0], 6 * K);
    }
    ipu_run r;
    ipu_test_run3("ipu_small16", NULL, ts_buf_str(&b), &r);
    for (unsigned t = 0; t < 16; t++)
        for (unsigned k = 0; k < K; k++)
            for (unsigned n = 0; n < N; n++)
                ck_assert_uint_eq(ipu_peek32(&r, t, 64 * k + 4 * n), bits(B[k][n])); /* the all-gather */
    for (unsigned t = 0; t < 16; t++)
        for (unsigned w = 0; w < 6; w++)
            for (unsigned n = 0; n < N; n++)
                ck_assert_msg(ipu_peek32(&r, t, 0x3000 + 64 * w + 4 * n) == bits(C[6 * t + w][n]),
                              "C[%u][%u] = %g, want %g", 6 * t + w, n, (double)ipu_peekf(&r, t, 0x3000 + 64 * w + 4 * n),
                              (double)C[6 * t + w][n]);
    ck_assert_uint_eq(r.r.macs, (uint64_t)M * K * N);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 16 * 16 * 4);
    ck_assert_double_eq(ipu_stat(&r, "supersteps.count"), 2);
    ck_assert_double_gt(ipu_cell(&r, "supersteps", 0, "exchange"), 16 * 16);
    ipu_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

/* Strip of 4 rows + 2 halo rows, 34 floats each (one zero column on each side), at 0x100;
 * output rows of 32 floats at 0x800; the kernel at 0x50. */
static const char conv_body[] =
    "  get $m10, 0\n"
    "  setzi $m11, 15\n"
    /* superstep 1: last own row (row 4) down to t + 1, its top halo (row 0) from t - 1 */
    "  brz $m10, s1\n"
    "  addi $m1, $m10, -1\n"
    "  setzi $m2, 0x104\n"
    "  recv $m2, $m1, 32\n"
    "s1:\n"
    "  cmpeq $m3, $m10, $m11\n"
    "  brnz $m3, s1w\n"
    "  addi $m1, $m10, 1\n"
    "  setzi $m2, 0x324\n" /* 0x100 + 4 * 136 + 4 */
    "  send $m2, $m1, 32\n"
    "s1w:\n"
    "  rxwait\n"
    "  sync 1\n"
    /* superstep 2: first own row (row 1) up to t - 1, its bottom halo (row 5) from t + 1 */
    "  cmpeq $m3, $m10, $m11\n"
    "  brnz $m3, s2\n"
    "  addi $m1, $m10, 1\n"
    "  setzi $m2, 0x3ac\n" /* 0x100 + 5 * 136 + 4 */
    "  recv $m2, $m1, 32\n"
    "s2:\n"
    "  brz $m10, s2w\n"
    "  addi $m1, $m10, -1\n"
    "  setzi $m2, 0x18c\n" /* 0x100 + 136 + 4 */
    "  send $m2, $m1, 32\n"
    "s2w:\n"
    "  rxwait\n"
    "  sync 1\n"
    "  setzi $m1, 0\n"
    "  runall conv, $m1\n"
    "  sync 0\n"
    "  sync 1\n"
    "  halt\n"
    "conv:\n"
    "  get $m1, 2\n"
    "  setzi $m2, 4\n"
    "  cmpult $m3, $m1, $m2\n"
    "  brz $m3, done\n"
    "  muli $m4, $m1, 136\n"
    "  addi $m4, $m4, 0x100\n"
    "  muli $m5, $m1, 128\n"
    "  addi $m5, $m5, 0x800\n"
    "  setzi $m6, 0x50\n"
    "  ld32 $a0, $m6, 0\n  ld32 $a1, $m6, 4\n  ld32 $a2, $m6, 8\n  ld32 $a3, $m6, 12\n  ld32 $a4, $m6, 16\n"
    "  ld32 $a5, $m6, 20\n  ld32 $a6, $m6, 24\n  ld32 $a7, $m6, 28\n  ld32 $a8, $m6, 32\n"
    "  setzi $m7, 31\n"
    "xl:\n"
    "  setzi $a9, 0\n"
    "  ld32 $a10, $m4, 0\n  f32mac $a9, $a0, $a10\n"
    "  ld32 $a10, $m4, 4\n  f32mac $a9, $a1, $a10\n"
    "  ld32 $a10, $m4, 8\n  f32mac $a9, $a2, $a10\n"
    "  ld32 $a10, $m4, 136\n  f32mac $a9, $a3, $a10\n"
    "  ld32 $a10, $m4, 140\n  f32mac $a9, $a4, $a10\n"
    "  ld32 $a10, $m4, 144\n  f32mac $a9, $a5, $a10\n"
    "  ld32 $a10, $m4, 272\n  f32mac $a9, $a6, $a10\n"
    "  ld32 $a10, $m4, 276\n  f32mac $a9, $a7, $a10\n"
    "  ld32 $a10, $m4, 280\n  f32mac $a9, $a8, $a10\n"
    "  st32step $a9, $m5, 4\n"
    "  addi $m4, $m4, 4\n"
    "  brnzdec $m7, xl\n"
    "done:\n"
    "  exit\n";

START_TEST(conv3x3_16_tiles)
{
    enum { H = 64, W = 32 };
    static float img[H + 2][W + 2], out[H][W];
    float k[9];
    memset(img, 0, sizeof img);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            img[y + 1][x + 1] = (float)((y * 7 + x * 3) % 17 - 8) * 0.375f + 0.01f * (float)y;
    for (int i = 0; i < 9; i++)
        k[i] = (float)(i % 4 - 1) * 0.5f + 0.125f * (float)i;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float acc = 0;
            for (int dy = 0; dy < 3; dy++)
                for (int dx = 0; dx < 3; dx++) {
                    float p = k[3 * dy + dx] * img[y + dy][x + dx];
                    acc = acc + p;
                }
            out[y][x] = acc;
        }
    ts_buf b = TS_BUF_INIT;
    char *code = ipu_test_spmd(".workload \"conv 3x3 on 64x32 over 16 tiles\"\n", conv_body, 16);
    ts_buf_puts(&b, code);
    free(code);
    for (unsigned t = 0; t < 16; t++) {
        words(&b, t, 0x50, k, 9);
        for (unsigned y = 0; y < 4; y++) /* own rows 1..4, halo columns included (zeros) */
            words(&b, t, 0x100 + 136 * (y + 1), img[4 * t + y + 1], W + 2);
    }
    /* Buffers in separate SRAM elements, as a compiler would place them: with 256-byte
     * elements the halo rows (0 and 5) do not share an element with the rows sent (4 and 1),
     * so a send and a receive in the same cycle never collide (see test_ipu_bsp). */
    const char *sets[] = {"tile.element_bytes=256", NULL};
    ipu_run r;
    ipu_test_run3("ipu_small16", sets, ts_buf_str(&b), &r);
    for (unsigned t = 0; t < 16; t++)
        for (unsigned y = 0; y < 4; y++)
            for (unsigned x = 0; x < W; x++)
                ck_assert_uint_eq(ipu_peek32(&r, t, 0x800 + 128 * y + 4 * x), bits(out[4 * t + y][x]));
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 2 * 15 * 32 * 4);
    ck_assert_double_eq(ipu_stat(&r, "supersteps.count"), 3);
    ck_assert_double_eq(ipu_event(&r, "fp32_mac"), 16 * 4 * 32 * 9);
    ipu_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

/* The CLI's default workload (arch/ipu/programs/ipu_default.s) on the MK1 config: its numbers
 * against a C reference for a few tiles, and equal in every mode. */
START_TEST(default_workload)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/arch/ipu/programs/ipu_default.s", root ? root : ".");
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    ipu_run r;
    ipu_test_run3("ipu_mk1", NULL, text, &r);
    enum { T = 1216 };
    static float x[T][96], y[T][24];
    float w[8];
    for (int i = 0; i < 8; i++)
        w[i] = (float)(i - 3) * 0.25f;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < 96; i++)
            x[t][i] = (float)(8 * t + i) * 0.015625f;
    for (int step = 0; step < 3; step++) {
        for (int t = 0; t < T; t++)
            for (int wk = 0; wk < 6; wk++)
                for (int u = 0; u < 4; u++) {
                    float acc = 0;
                    for (int p = 0; p < 8; p++) {
                        float s = w[2 * u] * x[t][16 * wk + 2 * p] + w[2 * u + 1] * x[t][16 * wk + 2 * p + 1];
                        acc += s;
                    }
                    y[t][4 * wk + u] = acc;
                }
        for (int t = 0; t < T; t++)
            memcpy(x[t], y[(t + T - 1) % T], sizeof y[0]);
    }
    static const unsigned probe[] = {0, 1, 607, 1215};
    for (size_t k = 0; k < 4; k++)
        for (unsigned i = 0; i < 24; i++) {
            ck_assert_uint_eq(ipu_peek32(&r, probe[k], 0x3000 + 4 * i), bits(y[probe[k]][i]));
            ck_assert_uint_eq(ipu_peek32(&r, probe[k], 0x8000 + 4 * i), bits(x[probe[k]][i]));
        }
    ck_assert_double_eq(ipu_stat(&r, "supersteps.count"), 4);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 3ull * T * 24 * 4);
    ck_assert_uint_eq(r.r.macs, 3ull * T * 6 * 8 * 8);
    ipu_run_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ipu_kernels");
    TCase *t = tcase_create("kernels");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, matmul_16_tiles);
    tcase_add_test(t, conv3x3_16_tiles);
    tcase_add_test(t, default_workload);
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
