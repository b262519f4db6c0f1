/* arch/wse/wse_kernels.c — program generators (see wse_kernels.h). */
#include "arch/wse/wse_kernels.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arch/wse/wse_isa.h"
#include "core/alloc.h"

static int emit(ts_stream *s, int op, int n, ...)
{
    ts_insn *in = ts_stream_emit(s, (uint16_t)op);
    if (!in)
        return -1;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        in->a[i] = va_arg(ap, int);
    va_end(ap);
    return 0;
}

#define E(...) do { if (emit(__VA_ARGS__)) goto oom; } while (0)

enum { P_N = 1, P_S = 2, P_E = 4, P_W = 8, P_R = 16 };

static int bits(float f)
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b;
}

ts_status ts_wse_stencil_program(ts_program **out, uint32_t w, uint32_t h, uint32_t nz, uint32_t radius,
                                 uint32_t steps, bool with_data, ts_err *err)
{
    return ts_wse_stencil_program_in(out, w, w, h, nz, radius, steps, with_data, err);
}

ts_status ts_wse_stencil_program_in(ts_program **out, uint32_t mesh_w, uint32_t w, uint32_t h, uint32_t nz,
                                    uint32_t radius, uint32_t steps, bool with_data, ts_err *err)
{
    *out = NULL;
    if (w > mesh_w)
        return ts_err_set(err, TS_EINPUT, "stencil: %u PEs wide does not fit a mesh %u PEs wide", w, mesh_w);
    if (!nz || nz > 600 || !steps || radius < 1 || radius > 4)
        return ts_err_set(err, TS_EINPUT, "stencil: nz %u must be 1..600, radius %u 1..4 and steps %u at least 1", nz,
                          radius, steps);
    const int R = (int)radius;
    ts_program *p = ts_program_create("wse");
    if (!p)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    char name[64];
    snprintf(name, sizeof name, "%u-point stencil, radius %u, fp32", 6 * radius + 1, radius);
    p->workload = ts_strdup(name);
    /* memory map (bytes) */
    const int Z = (int)nz * 4;
    const int U = 0, PREV = U + Z + 32, ACC = PREV + Z, TMP = ACC + Z, COEF = TMP + Z, BUF = COEF + 32;
    /* coefficients of the 8th-order second derivative, summed over 3 axes, times a Courant factor */
    const float c[5] = {-3 * 2.84722222f * 0.1f, 1.6f * 0.1f, -0.2f * 0.1f, 0.0253968f * 0.1f, -0.0017857f * 0.1f};
    /* receive buffer of direction d (0 from W, 1 from E, 2 from N, 3 from S), round r (1..4) */
#define RB(d, r) (BUF + ((d) * 4 + (r) - 1) * Z)
    float *col = NULL;
    /* A PE's code depends only on how far it is from each edge (up to R) and on the parities of x
     * and y (its colours): the first PE of each such class carries the code, the others run it as
     * their image, with routes of their own. */
    const uint32_t nkey = (uint32_t)((R + 1) * (R + 1) * 2) * (uint32_t)((R + 1) * (R + 1) * 2);
    int64_t *image = ts_malloc(nkey * sizeof *image);
    if (!image)
        goto oom;
    for (uint32_t k = 0; k < nkey; k++)
        image[k] = -1;
    if (with_data && !(col = ts_malloc((size_t)nz * 4)))
        goto oom;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t id = y * mesh_w + x;
            ts_stream *s = ts_program_stream(p, WSE_KIND_PE, id);
            if (!s)
                goto oom;
            bool hasw = x > 0, hase = x + 1 < w, hasn = y > 0, hass = y + 1 < h;
            /* routes: sends on colour (2 * dir + parity of the sender), receives on the neighbour's */
            if (hase) E(s, WSE_OP_ROUTE, 3, (int)(x % 2), P_R, P_E);
            if (hasw) E(s, WSE_OP_ROUTE, 3, (int)((x - 1) % 2), P_W, P_R);
            if (hasw) E(s, WSE_OP_ROUTE, 3, (int)(2 + x % 2), P_R, P_W);
            if (hase) E(s, WSE_OP_ROUTE, 3, (int)(2 + (x + 1) % 2), P_E, P_R);
            if (hass) E(s, WSE_OP_ROUTE, 3, (int)(4 + y % 2), P_R, P_S);
            if (hasn) E(s, WSE_OP_ROUTE, 3, (int)(4 + (y - 1) % 2), P_N, P_R);
            if (hasn) E(s, WSE_OP_ROUTE, 3, (int)(6 + y % 2), P_R, P_N);
            if (hass) E(s, WSE_OP_ROUTE, 3, (int)(6 + (y + 1) % 2), P_S, P_R);
            uint32_t kx = ((x < (uint32_t)R ? x : (uint32_t)R) * (uint32_t)(R + 1) +
                           (w - 1 - x < (uint32_t)R ? w - 1 - x : (uint32_t)R)) * 2 + x % 2;
            uint32_t ky = ((y < (uint32_t)R ? y : (uint32_t)R) * (uint32_t)(R + 1) +
                           (h - 1 - y < (uint32_t)R ? h - 1 - y : (uint32_t)R)) * 2 + y % 2;
            int64_t *img = &image[ky * (uint32_t)((R + 1) * (R + 1) * 2) + kx];
            if (*img >= 0) {
                E(s, WSE_OP_IMAGE, 1, (int)*img);
                goto data;
            }
            *img = id;
            for (int k = 1; k <= 4; k++)
                E(s, WSE_OP_FLI, 2, k, bits(c[k]));
            E(s, WSE_OP_FLI, 2, 5, bits(1.0f));
            E(s, WSE_OP_LI, 2, 10, (int)steps);
            int loop = (int)s->n;
            for (int r = 1; r <= R; r++) {
                /* sends: thread = direction (0 E, 1 W, 2 S, 3 N), each async */
                struct { bool on; int colour; int src; } snd[4] = {
                    {hase && (int)x - (r - 1) >= 0, (int)(x % 2), r == 1 ? U + 16 : RB(0, r - 1)},
                    {hasw && x + (uint32_t)(r - 1) <= w - 1, (int)(2 + x % 2), r == 1 ? U + 16 : RB(1, r - 1)},
                    {hass && (int)y - (r - 1) >= 0, (int)(4 + y % 2), r == 1 ? U + 16 : RB(2, r - 1)},
                    {hasn && y + (uint32_t)(r - 1) <= h - 1, (int)(6 + y % 2), r == 1 ? U + 16 : RB(3, r - 1)},
                };
                for (int d = 0; d < 4; d++)
                    if (snd[d].on) {
                        E(s, WSE_OP_DSDM, 4, 0, snd[d].src, (int)nz, 1);
                        E(s, WSE_OP_DSDOUT, 4, 1, snd[d].colour, (int)nz, 0);
                        E(s, WSE_OP_FMOVS, 4, 1, 0, d, -1);
                    }
                /* receives, in a fixed order: from W, E, N, S */
                struct { bool on; int colour; } rcv[4] = {
                    {(int)x - r >= 0, (int)((x - 1) % 2)},
                    {x + (uint32_t)r <= w - 1, (int)(2 + (x + 1) % 2)},
                    {(int)y - r >= 0, (int)(4 + (y - 1) % 2)},
                    {y + (uint32_t)r <= h - 1, (int)(6 + (y + 1) % 2)},
                };
                for (int d = 0; d < 4; d++)
                    if (rcv[d].on) {
                        E(s, WSE_OP_DSDIN, 3, 2, rcv[d].colour, (int)nz);
                        E(s, WSE_OP_DSDM, 4, 3, RB(d, r), (int)nz, 1);
                        E(s, WSE_OP_FMOVS, 4, 3, 2, -1, -1);
                    }
            }
            /* acc := u * c0; acc += c_r (u[z - r] + u[z + r]) */
            E(s, WSE_OP_DSDM, 4, 4, ACC, (int)nz, 1);
            E(s, WSE_OP_DSDM, 4, 5, U + 16, (int)nz, 1);
            E(s, WSE_OP_DSDM, 4, 6, COEF, (int)nz, 0);
            E(s, WSE_OP_FMULS, 5, 4, 5, 6, -1, -1);
            for (int r = 1; r <= R; r++)
                for (int sg = -1; sg <= 1; sg += 2) {
                    E(s, WSE_OP_DSDM, 4, 7, U + 16 + sg * 4 * r, (int)nz, 1);
                    E(s, WSE_OP_FMACS, 6, 4, 4, 7, r, -1, -1);
                }
            /* acc += c_r * received column (FMUL then FADD, as JAC does with fabric operands) */
            E(s, WSE_OP_DSDM, 4, 10, TMP, (int)nz, 1);
            for (int d = 0; d < 4; d++)
                for (int r = 1; r <= R; r++) {
                    bool on = d == 0 ? (int)x - r >= 0 : d == 1 ? x + (uint32_t)r <= w - 1
                            : d == 2 ? (int)y - r >= 0 : y + (uint32_t)r <= h - 1;
                    if (!on)
                        continue;
                    E(s, WSE_OP_DSDM, 4, 8, RB(d, r), (int)nz, 1);
                    E(s, WSE_OP_DSDM, 4, 9, COEF + 4 * r, (int)nz, 0);
                    E(s, WSE_OP_FMULS, 5, 10, 8, 9, -1, -1);
                    E(s, WSE_OP_FADDS, 5, 4, 4, 10, -1, -1);
                }
            /* next := 2u - prev + vel * acc; then prev := u, u := next */
            E(s, WSE_OP_DSDM, 4, 11, PREV, (int)nz, 1);
            E(s, WSE_OP_FADDS, 5, 10, 5, 5, -1, -1);
            E(s, WSE_OP_FSUBS, 5, 10, 10, 11, -1, -1);
            E(s, WSE_OP_FMACS, 6, 11, 10, 4, 5, -1, -1);
            E(s, WSE_OP_FMOVS, 4, 10, 11, -1, -1);
            E(s, WSE_OP_FMOVS, 4, 11, 5, -1, -1);
            E(s, WSE_OP_FMOVS, 4, 5, 10, -1, -1);
            E(s, WSE_OP_ADDI, 3, 10, 10, -1);
            E(s, WSE_OP_BNZ, 2, 10, loop);
        data:
            if (with_data) {
                for (uint32_t z = 0; z < nz; z++)
                    col[z] = (float)((x + 2 * y + 3 * z) % 7) / 8.0f;
                if (ts_program_add_segment(p, WSE_KIND_PE, id, U + 16, col, (uint32_t)Z, err) ||
                    ts_program_add_segment(p, WSE_KIND_PE, id, COEF, c, sizeof c, err))
                    goto fail;
            }
        }
    ts_free(col);
    ts_free(image);
    *out = p;
    return TS_OK;
oom:
    ts_err_set(err, TS_ENOMEM, "out of memory building the stencil program");
fail:
    ts_free(col);
    ts_free(image);
    ts_program_destroy(p);
    return err->status ? err->status : TS_ENOMEM;
#undef RB
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

ts_status ts_wse_sinks_program(ts_program **out, uint32_t w, uint32_t h, uint32_t sinks, uint32_t per_pe,
                               double rate, uint64_t seed, ts_err *err)
{
    *out = NULL;
    if (!sinks || sinks > 24 || sinks >= w * h || rate <= 0 || rate > 1)
        return ts_err_set(err, TS_EINPUT, "uniform traffic: need 1..24 sinks fewer than the PEs and a rate in (0, 1]");
    ts_program *p = ts_program_create("wse");
    uint32_t *sx = ts_calloc(sinks, sizeof *sx), *sy = ts_calloc(sinks, sizeof *sy);
    uint64_t *count = ts_calloc(sinks, sizeof *count);
    bool *is_sink = ts_calloc((size_t)w * h, sizeof *is_sink);
    if (!p || !sx || !sy || !count || !is_sink)
        goto oom;
    p->workload = ts_strdup("random single-wavelet traffic to sink PEs");
    uint64_t st = seed ? seed : 88172645463325252ull;
    for (uint32_t c = 0; c < sinks; c++) {
        uint32_t id;
        do
            id = (uint32_t)(rnd(&st) % ((uint64_t)w * h));
        while (is_sink[id]);
        is_sink[id] = true;
        sx[c] = id % w;
        sy[c] = id / w;
    }
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            ts_stream *s = ts_program_stream(p, WSE_KIND_PE, y * w + x);
            if (!s)
                goto oom;
            for (uint32_t c = 0; c < sinks; c++) {
                uint32_t tx = x < sx[c] ? P_E : x > sx[c] ? P_W : y < sy[c] ? P_S : y > sy[c] ? P_N : P_R;
                uint32_t rx = P_R;
                if (x > 0 && x <= sx[c]) rx |= P_W;
                if (x + 1 < w && x >= sx[c]) rx |= P_E;
                if (x == sx[c] && y > 0 && y <= sy[c]) rx |= P_N;
                if (x == sx[c] && y + 1 < h && y >= sy[c]) rx |= P_S;
                E(s, WSE_OP_ROUTE, 3, (int)c, (int)rx, (int)tx);
            }
        }
    /* sources: random colours, geometric gaps */
    for (uint32_t id = 0; id < w * h; id++) {
        if (is_sink[id])
            continue;
        ts_stream *s = ts_program_stream(p, WSE_KIND_PE, id);
        for (uint32_t k = 0; k < per_pe; k++) {
            uint32_t c = (uint32_t)(rnd(&st) % sinks);
            count[c]++;
            E(s, WSE_OP_SEND, 2, (int)c, 0);
            /* gap after a send: geometric with mean 1/rate cycles, the send itself being one */
            double u = (double)(rnd(&st) >> 11) / 9007199254740992.0;
            uint64_t gap = rate >= 1 ? 1 : (uint64_t)ceil(log1p(-u) / log1p(-rate));
            if (gap > 1)
                E(s, WSE_OP_WAIT, 1, (int)(gap - 1 > 1000000 ? 1000000 : gap - 1));
        }
    }
    /* sinks: consume their colour's count at one per cycle into one word */
    for (uint32_t c = 0; c < sinks; c++) {
        ts_stream *s = ts_program_stream(p, WSE_KIND_PE, sy[c] * w + sx[c]);
        for (uint64_t left = count[c]; left;) {
            int n = left > 65535 ? 65535 : (int)left;
            left -= (uint64_t)n;
            E(s, WSE_OP_DSDIN, 3, 0, (int)c, n);
            E(s, WSE_OP_DSDM, 4, 1, 0, n, 0);
            E(s, WSE_OP_FMOVS, 4, 1, 0, -1, -1);
        }
    }
    ts_free(sx);
    ts_free(sy);
    ts_free(count);
    ts_free(is_sink);
    *out = p;
    return TS_OK;
oom:
    ts_free(sx);
    ts_free(sy);
    ts_free(count);
    ts_free(is_sink);
    ts_program_destroy(p);
    return ts_err_set(err, TS_ENOMEM, "out of memory building the traffic program");
}
