/* arch/tsp/tsp_mxm.c — the MXM planes: weight loads and installs, the abc multiply-adds over
 * real data (the cost of MXM-bound programs) and their results, accumulator reads, and the pool
 * of host threads that shares out each cycle's abc multiply-adds. */
#include "arch/tsp/tsp_model.h"

#include <pthread.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/alloc.h"

/* The MXM plane of an in-flight instruction (research §1.5). Weights are W[row][col]: row j is
 * the j-th weight vector streamed in, col the lane; abc computes y[j] = sum_l W[j][l] x[l],
 * adding superlane k's 16 lanes in the cycle the activation reaches superlane k (partial sums
 * pass from tile to tile, ISCA20 Fig. 7), so y is complete after the last superlane. */
static ts_status ensure_plane(ts_model *m, tsp_plane *p, int type, ts_err *err)
{
    size_t n = (size_t)m->D * m->D;
    if (type == TSP_I8 && !p->w8) {
        size_t nz = (size_t)m->S * ((m->D + 63) / 64);
        p->w8 = ts_calloc(n, 1);
        p->b8 = ts_calloc(n, 1);
        p->nz8 = ts_calloc(nz, sizeof *p->nz8);
        p->bnz8 = ts_calloc(nz, sizeof *p->bnz8);
    }
    if (type == TSP_F16 && !p->wf) {
        p->wf = ts_calloc(n, sizeof(float));
        p->bf = ts_calloc(n, sizeof(float));
    }
    if ((type == TSP_I8 && (!p->w8 || !p->b8 || !p->nz8 || !p->bnz8)) || (type == TSP_F16 && (!p->wf || !p->bf)))
        return ts_err_set(err, TS_ENOMEM, "out of memory allocating MXM weights");
    return TS_OK;
}

/* The sum of 16 products of an int8 weight row and int16 activations (int8 values). Every
 * product fits 15 bits and the sum 19, so the order of the additions does not change it. With
 * SSE2 (every x86-64) two multiply-add-pairs (pmaddwd) and a horizontal sum; compilers left to
 * themselves emit 16 scalar multiplies for the loop below. */
#if defined(__SSE2__)
typedef struct dot16_x {
    __m128i lo, hi;
} dot16_x;
static inline dot16_x dot16_prep(const int16_t *x)
{
    return (dot16_x){_mm_loadu_si128((const __m128i *)(const void *)x),
                     _mm_loadu_si128((const __m128i *)(const void *)(x + 8))};
}
static inline int32_t dot16(const int8_t *w, dot16_x x)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)w);
    __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8), hi = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
    __m128i s = _mm_add_epi32(_mm_madd_epi16(lo, x.lo), _mm_madd_epi16(hi, x.hi));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}
#else
typedef const int16_t *dot16_x;
static inline dot16_x dot16_prep(const int16_t *x) { return x; }
static inline int32_t dot16(const int8_t *w, dot16_x x)
{
    int32_t s = 0;
    for (int l = 0; l < 16; l++)
        s += (int16_t)w[l] * x[l];
    return s;
}
#endif

ts_status ts_tsp_step_mxm(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in.a;
    uint32_t pl = f->num, k = f->k, L = m->L, D = m->D;
    tsp_plane *p = &m->plane[pl];
    ts_status rc;
    uint32_t el[64];
    switch (f->in.op) {
    case TSP_OP_LW:
    case TSP_OP_IW: {
        int type = o[0] - TSP_REG_TYPE;
        bool lw = f->in.op == TSP_OP_LW;
        if ((rc = ensure_plane(m, p, type, err)) != TS_OK)
            return rc;
        /* the weights latch d_func after the stream is read, like any result (a pending write) */
        tsp_pw w = {.kind = PW_WEIGHTS, .k = (uint16_t)k, .a = pl, .b = f->row0, .type = (uint8_t)type,
                    .prod = PROD(f->q, f->pc)};
        if (!lw && o[1] == TSP_REG_NUL) { /* install the LW buffer */
            if (p->buf_type != type)
                return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                  "iw from the LW buffer as %s, but the buffer holds %s weights",
                                  type == TSP_I8 ? "i8" : "f16", p->buf_type == TSP_F16 ? "f16" : "i8 or nothing");
            w.mode = PWW_COPY;
            if ((rc = ts_tsp_pw_add(m, f->t0 + f->dfunc + k, &w, NULL, err)) != TS_OK)
                return rc;
        } else {
            uint32_t wd = tsp_type_width(type), rows = (uint32_t)o[2] / wd, esz = type == TSP_I8 ? 1 : 4;
            uint8_t *buf = m->scratch;
            bool rows_sr = type == TSP_I8 && o[1] + (int)rows <= TSP_REG_ALU; /* every row a stream */
            if (rows_sr && (rc = ts_tsp_sr_read_rows(m, f, o[1], rows, k, (uint32_t)o[3], buf, err)) != TS_OK)
                return rc; /* the streams' bytes are the weights */
            for (uint32_t r = 0; r < rows && !rows_sr; r++) {
                int reg = o[1] + (int)(r * wd);
                if (type == TSP_I8 && reg < TSP_REG_ALU) { /* the stream's bytes are the weights */
                    if ((rc = ts_tsp_sr_read(m, f, reg, k, (uint32_t)o[3], buf + (size_t)r * L, err)) != TS_OK)
                        return rc;
                    continue;
                }
                if ((rc = ts_tsp_read_elems(m, f, reg, type, k, (uint32_t)o[3], el, err)) != TS_OK)
                    return rc;
                for (uint32_t x = 0; x < L; x++) {
                    uint8_t *at = buf + ((size_t)r * L + x) * esz;
                    if (type == TSP_I8) {
                        *at = (uint8_t)el[x];
                    } else {
                        float v = ts_f16_to_f32((uint16_t)el[x]);
                        memcpy(at, &v, 4);
                    }
                }
            }
            w.mode = lw ? PWW_BUFFER : PWW_ARRAY;
            w.tag = rows;
            w.len = rows * L * esz;
            if ((rc = ts_tsp_pw_add(m, f->t0 + f->dfunc + k, &w, buf, err)) != TS_OK)
                return rc;
        }
        /* the length of a full install (research §1.5: < 40 cycles) */
        if (!lw) {
            if (k == 0 && (f->row0 == 0 || o[1] == TSP_REG_NUL))
                p->inst_start = (int64_t)m->now;
            uint32_t nrows = o[1] == TSP_REG_NUL ? D : (uint32_t)o[2] / tsp_type_width(type);
            if (k == m->S - 1 && p->inst_start >= 0 && f->row0 + nrows >= D) {
                uint64_t len = m->now - (uint64_t)p->inst_start + 1;
                if (len > m->install_max)
                    m->install_max = len;
                p->inst_start = -1;
            }
        }
        return TS_OK;
    }
    case TSP_OP_ABC: {
        int type = o[0] - TSP_REG_TYPE;
        if (p->type != type)
            return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now, "abc %s on a plane holding %s weights",
                              type == TSP_I8 ? "i8" : "f16", p->type < 0 ? "no" : p->type == TSP_I8 ? "i8" : "f16");
        if ((rc = ts_tsp_read_elems(m, f, o[1], type, k, (uint32_t)o[3], el, err)) != TS_OK)
            return rc;
        /* the activations, for the multiply-adds that run after every slice has stepped (they
         * touch only this instruction's partial sums, so host threads may share them out) */
        uint8_t *xs = f->buf + (size_t)D * sizeof(double);
        for (uint32_t l = 0; l < L; l++) {
            if (type == TSP_I8) {
                int16_t v = (int8_t)(uint8_t)el[l];
                memcpy(xs + 2 * l, &v, 2);
            } else {
                float v = ts_f16_to_f32((uint16_t)el[l]);
                memcpy(xs + 4 * l, &v, 4);
            }
        }
        if (type == TSP_I8)
            m->macs8 += (uint64_t)D * L;
        else
            m->macs16 += (uint64_t)D * L;
        m->cyc_macs += (uint64_t)D * L;
        if (ts_grow((void **)&m->jobs, &m->capjobs, m->njobs + 1, sizeof *m->jobs))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        m->jobs[m->njobs++] = (size_t)(f - m->fl);
        return TS_OK;
    }
    case TSP_OP_ACC: {
        if ((rc = ts_tsp_latch_read(m, f, &p->acc, k, -1, k, (uint32_t)o[1], (uint8_t *)el, err)) != TS_OK)
            return rc;
        return ts_tsp_write_elems(m, f, o[0], TSP_I32, k, (uint32_t)o[2], el, err);
    }
    default: return ts_tsp_no_case(m, f, err);
    }
}

/* The multiply-adds of one abc superlane step: y[j] += sum over the superlane's lanes of
 * W[j][l] x[l], into the instruction's own partial sums. Reads only committed weights. */
static void abc_compute(const ts_model *m, tsp_fl *f)
{
    const tsp_plane *p = &m->plane[f->num];
    uint32_t k = f->k, L = m->L, D = m->D;
    const uint8_t *xs = f->buf + (size_t)D * sizeof(double);
    if (f->in.a[0] - TSP_REG_TYPE == TSP_I8) {
        int32_t *ps = (int32_t *)(void *)f->buf;
        int16_t x[64];
        memcpy(x, xs, 2 * (size_t)L);
        /* lanes all zero add nothing to any sum (the padding of a layer narrower than a vector:
         * ResNet-50's 64-channel layers fill 4 of 20 superlanes) */
        int16_t any = 0;
        for (uint32_t l = 0; l < L; l++)
            any |= x[l];
        if (!any)
            return;
        if (L == 16) { /* the research's 16 lanes: a fixed-length loop the compiler vectorises
                        * (this loop is over 80% of bench_tsp_mxm's time); rows whose 16 weights
                        * are all 0 add nothing (a block of 64 outputs fills 64 of 320 rows) */
            uint32_t nwd = (D + 63) / 64;
            const uint64_t *nz = p->nz8 + (size_t)k * nwd;
            dot16_x xv = dot16_prep(x);
            for (uint32_t wd = 0; wd < nwd; wd++)
                for (uint64_t b = nz[wd]; b; b &= b - 1) {
                    uint32_t j = wd * 64 + (uint32_t)__builtin_ctzll(b);
                    ps[j] = (int32_t)((uint32_t)ps[j] + (uint32_t)dot16(p->w8 + (size_t)j * D + k * 16, xv));
                }
        } else {
            for (uint32_t j = 0; j < D; j++) {
                const int8_t *wr = p->w8 + (size_t)j * D + k * L;
                int32_t s = 0;
                for (uint32_t l = 0; l < L; l++)
                    s += wr[l] * x[l];
                ps[j] = (int32_t)((uint32_t)ps[j] + (uint32_t)s);
            }
        }
    } else {
        double *ps = (double *)(void *)f->buf;
        float x[64];
        memcpy(x, xs, 4 * (size_t)L);
        for (uint32_t j = 0; j < D; j++) {
            const float *wr = p->wf + (size_t)j * D + k * L;
            double s = ps[j];
            for (uint32_t l = 0; l < L; l++)
                s += (double)wr[l] * (double)x[l];
            ps[j] = s;
        }
    }
}

/* After the last superlane: the results leave superlane kk at t + d_func + kk. */
ts_status ts_tsp_abc_finalize(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in.a;
    uint32_t pl = f->num, L = m->L;
    int type = o[0] - TSP_REG_TYPE;
    uint8_t lb[4 * 64];
    for (uint32_t kk = 0; kk < m->S; kk++) {
        for (uint32_t l = 0; l < L; l++) {
            uint32_t j = kk * L + l, v;
            if (type == TSP_I8) {
                int32_t s = ((int32_t *)(void *)f->buf)[j];
                memcpy(&v, &s, 4);
            } else {
                float s = (float)((double *)(void *)f->buf)[j]; /* rounded once (research §1.5) */
                memcpy(&v, &s, 4);
            }
            memcpy(lb + 4 * l, &v, 4);
        }
        tsp_pw w = {.kind = PW_ACC, .k = (uint16_t)kk, .a = pl, .mode = (uint8_t)o[2], .tag = (uint32_t)o[4],
                    .prod = PROD(f->q, f->pc), .len = 4 * L, .type = type == TSP_I8 ? TSP_I32 : TSP_F32};
        ts_status rc = ts_tsp_pw_add(m, f->t0 + f->dfunc + kk, &w, lb, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* ---- host threads ------------------------------------------------------------------------ */

/* Host threads: a pool that shares out the cycle's abc multiply-adds by job index (job j on
 * thread j mod n), so each partial sum is computed by exactly one thread in the same order
 * whatever the thread count. */
struct tsp_pool {
    ts_model *m;
    int n;                   /* worker threads (the caller is thread 0) */
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;
    int pending;
    bool quit;
};

typedef struct tsp_worker {
    struct tsp_pool *pool;
    int id;
} tsp_worker;

static void run_share(ts_model *m, int id, int nt)
{
    for (size_t j = (size_t)id; j < m->njobs; j += (size_t)nt)
        abc_compute(m, &m->fl[m->jobs[j]]);
}

static void *worker_main(void *arg)
{
    tsp_worker *w = arg;
    struct tsp_pool *pl = w->pool;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        while (pl->gen == seen && !pl->quit)
            pthread_cond_wait(&pl->go, &pl->mu);
        bool quit = pl->quit;
        seen = pl->gen;
        pthread_mutex_unlock(&pl->mu);
        if (quit)
            return NULL;
        run_share(pl->m, w->id, pl->n + 1);
        pthread_mutex_lock(&pl->mu);
        if (--pl->pending == 0)
            pthread_cond_signal(&pl->done);
        pthread_mutex_unlock(&pl->mu);
    }
}

void ts_tsp_run_jobs(ts_model *m)
{
    struct tsp_pool *pl = m->pool;
    if (!pl || m->njobs < 2) { /* one job is not worth waking the pool */
        run_share(m, 0, 1);
        return;
    }
    pthread_mutex_lock(&pl->mu);
    pl->pending = pl->n;
    pl->gen++;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    run_share(m, 0, pl->n + 1);
    pthread_mutex_lock(&pl->mu);
    while (pl->pending)
        pthread_cond_wait(&pl->done, &pl->mu);
    pthread_mutex_unlock(&pl->mu);
}

void ts_tsp_pool_stop(ts_model *m)
{
    struct tsp_pool *pl = m->pool;
    if (!pl)
        return;
    pthread_mutex_lock(&pl->mu);
    pl->quit = true;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    for (int i = 0; i < pl->n; i++)
        pthread_join(pl->th[i], NULL);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->go);
    pthread_cond_destroy(&pl->done);
    ts_free(pl->th);
    ts_free(m->workers);
    ts_free(pl);
    m->pool = NULL;
}

ts_status ts_tsp_pool_start(ts_model *m, int threads, ts_err *err)
{
    struct tsp_pool *pl = ts_calloc(1, sizeof *pl);
    if (!pl)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    pl->m = m;
    pl->th = ts_calloc((size_t)threads - 1, sizeof *pl->th);
    m->workers = ts_calloc((size_t)threads - 1, sizeof *m->workers);
    if (!pl->th || !m->workers) {
        ts_free(pl->th);
        ts_free(m->workers);
        m->workers = NULL;
        ts_free(pl);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->go, NULL);
    pthread_cond_init(&pl->done, NULL);
    m->pool = pl;
    for (int i = 0; i < threads - 1; i++) {
        m->workers[i] = (tsp_worker){pl, i + 1};
        if (pthread_create(&pl->th[i], NULL, worker_main, &m->workers[i])) {
            ts_tsp_pool_stop(m);
            return ts_err_set(err, TS_ENOMEM, "cannot start host thread %d of %d", i + 2, threads);
        }
        pl->n++;
    }
    return TS_OK;
}

