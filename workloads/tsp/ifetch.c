/* workloads/tsp/ifetch.c — instruction fetch for the TSP lowering (docs/lowering-tsp.md, Instruction
 * fetch).
 *
 * The first icu.queue_capacity entries of every queue are preloaded; the rest come by ifetch from
 * instruction text in MEM words above everything the schedule allocated, or, where those are too
 * few, also in words below that hold no data until the schedule first writes them. While scheduling, every
 * queue keeps one free cycle in each aligned window of fetch cycles (sched.c); afterwards one sweep
 * over the cycles places the ifetches and their text reads (lt_plan_fetches), and every queue is
 * replayed as the simulator issues it (check_queue).
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#define FETCH_RING 128 /* cycles of headroom history per queue: longer than any text read's lead */

static uint64_t nop_entries(uint64_t gap)
{
    return (gap + 65534) / 65535;
}

/* Queue qi's position on the stream registers. */
static uint32_t queue_pos(const lt *L, uint32_t qi)
{
    const ts_tsp_target *P = L->tg;
    if (qi < P->q_vxm)
        return lt_mem_pos(L, qi);
    if (qi < P->q_mxm)
        return P->pos_vxm;
    uint32_t pl = (qi - P->q_mxm) / P->mxm_queues; /* west planes from the VXM outward, then east */
    return pl < P->mxm_west ? P->pos_mxm_w[pl] : P->pos_mxm_e[pl - P->mxm_west];
}

/* The fetch state of one queue during the sweep (plan_fetches). */
typedef struct fq {
    uint64_t e, now;          /* entries issued; the first cycle no issued entry covers */
    uint64_t avail, F;        /* entries landed; landed or in flight */
    uint64_t land[4], pf;     /* landing cycles of the fetches in flight, oldest first; fetch port free */
    int nland;
    bool over;                /* a fetch landed on a full queue */
    size_t i, w;              /* next rec to issue; first rec past the next landing window */
    uint64_t *suf;            /* suf[i]: entries of recs i.. when rec i starts a cycle */
    int64_t room[FETCH_RING]; /* avail - e at the end of each recent cycle */
} fq;

/* Fetches that landed before cycle c join the queue (the simulator lands them before issuing). */
static void land_until(fq *f, uint64_t c, uint64_t A, uint64_t C)
{
    while (f->nland && f->land[0] < c) {
        if (f->avail + A > f->e + C)
            f->over = true;
        f->avail += A;
        memmove(f->land, f->land + 1, (size_t)(f->nland - 1) * sizeof *f->land);
        f->nland--;
    }
}

/* The nops of the gap from f->now to cycle `to`: false if one issues unfetched. */
static bool issue_gap(fq *f, uint64_t to, uint64_t A, uint64_t C)
{
    for (uint64_t c = f->now; c < to; c += 65535) {
        land_until(f, c, A, C);
        if (f->e >= f->avail)
            return false;
        f->e++;
    }
    if (to > f->now)
        f->now = to;
    return true;
}

static bool occupied(const lt *L, uint32_t m, uint64_t t)
{
    return lt_bget(&L->q[m].issue, t) || lt_bget(&L->q[m].wr, t);
}

/* Entries a read at cycle r adds to MEM queue m, whose issued entries cover the cycles before
 * f->now (0 if it may not go there). */
static uint64_t read_delta(const lt *L, uint32_t m, const fq *f, uint64_t r)
{
    if (r >= f->now)
        return lt_bget(&L->q[m].wr, r) ? 0 : nop_entries(r - f->now) + 1;
    if (lt_bget(&L->q[m].wr, r))
        return 1; /* it pairs with the write */
    int64_t p = (int64_t)r - 1;
    while (p >= 0 && !occupied(L, m, (uint64_t)p))
        p--;
    uint64_t nx = r + 1;
    while (nx < f->now && !occupied(L, m, nx))
        nx++;
    uint64_t old = nop_entries(nx - (uint64_t)(p + 1));
    uint64_t nw = nop_entries(r - (uint64_t)(p + 1)) + 1 + nop_entries(nx - r - 1);
    return nw - old;
}

/* The sweep's figures: queue capacity C, entries per fetch A, cycles per fetch D; per queue its
 * fetch state and its number of recs before text reads were added; the MEM slices at each
 * stream-register position, in slice order (at[p] .. at[p + 1] - 1 index mem_at). */
typedef struct fplan {
    uint64_t C, A, D;
    fq *fs;
    size_t *nrec;
    uint32_t *at, *mem_at;
    /* Text below the data (live_words): per slice and bank (index 2 m + b) the words free until the
     * schedule first writes them, latest last: lw[lb[x] .. lb[x + 1]) with their first writes ldl,
     * lp[x] the next one to try. */
    bool live;
    uint32_t *lw;
    uint64_t *ldl;
    size_t *lb, *lp;
    bool dry;   /* a text read found no word left in a slice it tried */
    struct tcand *cand; /* LEAN: the slices a fetch's text may come from (one per MEM slice) */
} fplan;

/* Text below the data: skip slice and bank li's words the schedule writes at or before cycle r (no
 * longer free for text); the first write of the next word, UINT64_MAX where none is left or it is
 * never written. */
static uint64_t next_live(fplan *fp, size_t li, uint64_t r)
{
    while (fp->lp[li] < fp->lb[li + 1] && fp->ldl[fp->lp[li]] <= r)
        fp->lp[li]++;
    return fp->lp[li] < fp->lb[li + 1] ? fp->ldl[fp->lp[li]] : UINT64_MAX;
}

/* A text word of slice m read at cycle r onto stream (dir, s) to reach pos at cycle t, from either
 * bank: the bank of the word free for the shorter time first under LEAN (where it is free only
 * until its first write, the word that would soonest be lost), bank 0 first otherwise. */
static bool text_word(lt *L, fplan *fp, uint32_t m, uint64_t r, uint64_t t, uint32_t pos, int dir, int s,
                      uint32_t tag, size_t *li_out)
{
    uint32_t b0 = 0;
    if (fp->live && L->lean)
        b0 = next_live(fp, 2 * (size_t)m + 1, r) < next_live(fp, 2 * (size_t)m, r);
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t b = b0 ^ k, h = m >= L->nW, word = L->tnext[m][b];
        size_t li = 2 * (size_t)m + b;
        if (fp->live) {
            next_live(fp, li, r);
            if (fp->lp[li] == fp->lb[li + 1]) {
                fp->dry = true;
                continue;
            }
            word = fp->lw[fp->lp[li]];
        } else if (word >= L->al[h][b].limit) {
            fp->dry = true;
            continue;
        }
        size_t mark = L->nu, pm = L->npd;
        if (lt_rd(L, m, word, t, pos, dir, s, tag, 0)) {
            if (fp->live)
                fp->lp[li]++;
            else
                L->tnext[m][b]++;
            *li_out = li;
            return true;
        }
        lt_undo_to(L, mark, pm);
    }
    return false;
}

/* LEAN: a slice whose own queue has this many fetches in flight or more reads no text for others.
 * The text reads a slice takes are entries of its queue, at most one a cycle, while its fetch port
 * brings it 39 entries in 40 cycles: in BERT-base the slices next to those whose words had run out
 * took the text of every queue near them, and their own queues, with 3 or 4 fetches in flight and
 * bound by the port, ran dry (queue 63 at cycle 329,561 with 355 of its own instructions and 223
 * text reads in its last 1,000 cycles). 2: with 3 it ran dry there still, with 1 the slices that
 * may read text were too few (at cycle 437,265, 53,056 words short). */
#define LEAN_BUSY_FETCHES 2

/* The words of slice m that can still take text read at cycle r: under text below the data those
 * free until a write after r, else those above the data not yet taken. */
static uint64_t words_left(const lt *L, fplan *fp, uint32_t m, uint64_t r)
{
    uint64_t n = 0;
    for (uint32_t b = 0; b < 2; b++) {
        size_t li = 2 * (size_t)m + b;
        if (fp->live) {
            next_live(fp, li, r);
            n += fp->lb[li + 1] - fp->lp[li];
        } else {
            uint32_t lim = L->al[m >= L->nW][b].limit;
            n += L->tnext[m][b] < lim ? lim - L->tnext[m][b] : 0;
        }
    }
    return n;
}

/* A slice that may read a text word for a fetch: its read cycle r, its distance d, its words left. */
typedef struct tcand {
    uint64_t r, left, soon; /* soon: the first write of its next word, where within LEAN_SOON of r; else max */
    uint32_t m, d;
} tcand;

/* LEAN, text below the data: a slice whose next free word is written within this many cycles of the
 * read (lost to the text after) is taken first, the soonest first. ViT-B/16's sweep lost 27,172 words
 * to such writes when the richest slice went first; its sweep stops 1,734 words closer to the end
 * (1,508 with 2,000, 1,662 with 50,000, 890 with 500); BERT-base's program is the same but for 19
 * ifetches more. */
#define LEAN_SOON 10000

/* A word soon lost first (the soonest first), then most words left, then nearest, then slice order. */
static int cmp_tcand(const void *a, const void *b)
{
    const tcand *x = a, *y = b;
    if (x->soon != y->soon)
        return (x->soon > y->soon) - (x->soon < y->soon);
    if (x->left != y->left)
        return (x->left < y->left) - (x->left > y->left);
    if (x->d != y->d)
        return (x->d > y->d) - (x->d < y->d);
    return (x->m > y->m) - (x->m < y->m);
}

/* Two reads of text words, from two MEM slices upstream of position pos, that put them on streams
 * (dir, s) and (dir, s + 1) at pos at cycle t. Each read adds entries to its slice's queue before
 * t, so only where that queue has room for them at every cycle since. Nearest slices first. Under
 * LEAN first among those a read adds one entry to (beside an instruction of the queue or paired
 * with its write, where one in a run of nops adds two: the read and the nop it splits off), then
 * any, none of a slice whose queue is busy fetching (LEAN_BUSY_FETCHES), and among them the slice
 * with the most words left first (the nearest of those alike). Taken nearest first, the words ran
 * out slice by slice from the busy queues outward: by cycle 511,341 of BERT-base's 523,877 only the
 * seven east slices farthest from the VXM held any (27 k words), whose free read cycles were too
 * few for the text of every queue (7,780 words short); taken richest first, the slices run out
 * together, and BERT-base's text fits.
 * took[0 .. *ntook) names the slice and bank (2 m + b) of each word taken, so that a try that fails
 * can give them back. */
static bool fetch_text(lt *L, fplan *fp, uint32_t qi, uint64_t t, uint32_t pos, int dir, int s, uint32_t tag,
                       uint32_t *ms, uint64_t *rs, size_t *took, uint32_t *ntook)
{
    fq *fs = fp->fs;
    uint32_t got = 0;
    tcand *cand = fp->cand;
    for (int pass = L->lean ? 0 : 1; pass < 2 && got < 2; pass++) {
        uint32_t nc = 0;
        for (uint32_t d = 1; d < L->tg->npos && got < 2; d++) {
            if (dir == WEST ? pos + d >= L->tg->npos : d > pos)
                break;
            uint64_t r = t - L->tg->d_func.read - d;
            if (t < L->tg->d_func.read + d || t - r >= FETCH_RING)
                break;
            uint32_t want = dir == WEST ? pos + d : pos - d;
            for (uint32_t i = fp->at[want]; i < fp->at[want + 1] && got < 2; i++) {
                uint32_t m = fp->mem_at[i];
                if (m == qi || (got && m == ms[0]) || (L->lean && fs[m].nland >= LEAN_BUSY_FETCHES))
                    continue;
                uint64_t dl = read_delta(L, m, &fs[m], r);
                if (!dl || (pass == 0 && dl != 1))
                    continue;
                uint64_t x;
                for (x = r; x < t && fs[m].room[x % FETCH_RING] >= (int64_t)dl; x++)
                    ;
                if (x < t)
                    continue;
                if (L->lean) { /* tried below, richest first */
                    uint64_t left = words_left(L, fp, m, r), soon = UINT64_MAX;
                    for (uint32_t b = 0; fp->live && b < 2; b++) {
                        uint64_t w1 = next_live(fp, 2 * (size_t)m + b, r);
                        if (w1 < soon && w1 - r <= LEAN_SOON)
                            soon = w1;
                    }
                    if (left)
                        cand[nc++] = (tcand){.r = r, .left = left, .soon = soon, .m = m, .d = d};
                    else
                        fp->dry = true;
                    continue;
                }
                if (!text_word(L, fp, m, r, t, pos, dir, s + (int)got, tag, &took[*ntook]))
                    continue;
                (*ntook)++;
                ms[got] = m;
                rs[got++] = r;
            }
        }
        if (nc > 1)
            qsort(cand, nc, sizeof *cand, cmp_tcand);
        for (uint32_t k = 0; k < nc && got < 2; k++) {
            if (got && cand[k].m == ms[0])
                continue;
            if (!text_word(L, fp, cand[k].m, cand[k].r, t, pos, dir, s + (int)got, tag, &took[*ntook]))
                continue;
            (*ntook)++;
            ms[got] = cand[k].m;
            rs[got++] = cand[k].r;
        }
    }
    return got == 2;
}

/* The stretches of the streams between positions a and b (lower_tsp_int.h, SEG_W ...). */
static unsigned seg_of(const lt *L, uint32_t a, uint32_t b)
{
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a, pv = L->tg->pos_vxm;
    return (lo < pv ? SEG_W : 0) | (lo <= pv && pv <= hi ? SEG_V : 0) | (hi > pv ? SEG_E : 0);
}

/* The stream pair (dir, s) of an ifetch at position pos and cycle t, reserved where its text runs:
 * from the farther of the two slices ms that read it to pos. */
static bool take_text_streams(lt *L, int dir, int s, uint64_t t, uint32_t pos, const uint32_t *ms)
{
    uint32_t far = lt_mem_pos(L, ms[0]), p1 = lt_mem_pos(L, ms[1]);
    if ((p1 > pos ? p1 - pos : pos - p1) > (far > pos ? far - pos : pos - far))
        far = p1;
    unsigned seg = L->mode ? SEG_ALL : seg_of(L, pos, far); /* as before the east planes but in mode 0 */
    return lt_take_stream(L, dir, s, t, pos, seg) && lt_take_stream(L, dir, s + 1, t, pos, seg);
}

/* A try of an ifetch that failed after some of its text reads found a word (the second slice found
 * none, or the stream pair was taken on the text's way): the undo log gives back the reads'
 * reservations, and under LEAN the words go back too. Before, every such try used its words up:
 * BERT-base's sweep took 343 k words by cycle 265,402 for 110.5 k fetches (221 k words), a third
 * of the words free of data lost. The other schedules keep the words they always took, so every
 * program that compiled before is the same (its text at the same addresses). */
static void give_back_words(lt *L, fplan *fp, const size_t *took, uint32_t ntook)
{
    for (uint32_t k = 0; L->lean && k < ntook; k++) {
        if (fp->live)
            fp->lp[took[k]]--;
        else
            L->tnext[took[k] / 2][took[k] % 2]--;
    }
}

/* An ifetch on queue qi at cycle t with its text, if every reservation is free. */
static bool try_fetch(lt *L, fplan *fp, uint32_t qi, uint64_t t)
{
    fq *fs = fp->fs;
    lq *q = &L->q[qi];
    uint32_t pos = queue_pos(L, qi), tag = L->tag % 65535 + 1, ms[2];
    uint64_t rs[2];
    size_t took[2];
    for (int dir = 0; dir < 2; dir++)
        for (int s = 0; s + 1 < LT_STREAMS; s += 2) {
            uint64_t key = lt_diag_key(dir, t, pos);
            unsigned here = L->mode ? SEG_ALL : seg_of(L, pos, pos);
            if (!lt_stream_free(L, dir, s, key, here) || !lt_stream_free(L, dir, s + 1, key, here))
                continue;
            size_t mark = L->nu, pm = L->npd;
            uint32_t ntook = 0;
            if (lt_take(L, &q->issue, t) && (qi >= L->tg->q_vxm || lt_take(L, &q->wr, t)) &&
                fetch_text(L, fp, qi, t, pos, dir, s, tag, ms, rs, took, &ntook) &&
                take_text_streams(L, dir, s, t, pos, ms)) {
                /* the reads' entries, counted before the reservations are kept */
                uint64_t dl[2];
                for (int k = 0; k < 2; k++) {
                    lt_bput(&L->q[ms[k]].issue, rs[k], false);
                    dl[k] = read_delta(L, ms[k], &fs[ms[k]], rs[k]);
                    lt_bput(&L->q[ms[k]].issue, rs[k], true);
                }
                E1(L, qi, t, LT_IFETCH, lt_sreg(L, dir, s), (int32_t)tag);
                lt_new_tag(L);
                size_t nl = L->nlayers;
                L->nlayers = 0; /* text reads and ifetches belong to no layer */
                int rc = lt_keep(L);
                L->nlayers = nl;
                for (int k = 0; k < 2; k++) {
                    fq *f = &fs[ms[k]];
                    if (rs[k] >= f->now)
                        f->now = rs[k] + 1;
                    f->e += dl[k];
                    for (uint64_t x = rs[k]; x < t; x++)
                        f->room[x % FETCH_RING] -= (int64_t)dl[k];
                }
                L->fetches++;
                return rc == 0;
            }
            lt_undo_to(L, mark, pm);
            give_back_words(L, fp, took, ntook);
            if (L->oom)
                return false;
        }
    return false;
}

/* Replay queue qi's entries (its recs sorted, ifetches included) as the simulator issues them:
 * false, with the cycle, if an entry issues unfetched or a fetch overfills the queue. */
static bool check_queue(lt *L, uint32_t qi, uint64_t *fail_t)
{
    lq *q = &L->q[qi];
    uint64_t C = L->tg->queue_capacity, A = L->tg->ifetch_bytes / L->tg->insn_bytes;
    uint64_t D = ts_geom_cdiv(L->tg->ifetch_bytes, L->tg->fetch_bpc);
    fq f = {.F = C, .avail = C};
    for (size_t i = 0; i < q->n;) {
        uint64_t tau = q->v[i].t;
        size_t k = i + 1 < q->n && q->v[i + 1].t == tau ? 2 : 1;
        *fail_t = tau;
        if (!issue_gap(&f, tau, A, C))
            return false;
        land_until(&f, tau, A, C);
        if (f.e + k > f.avail || f.over)
            return false;
        if (q->v[i].in.op == LT_IFETCH) {
            if (f.nland == 4)
                return false;
            uint64_t start = tau > f.pf ? tau : f.pf;
            f.land[f.nland++] = start + D - 1;
            f.pf = start + D;
        }
        f.e += k;
        f.now = lt_rec_end(&q->v[i + k - 1]) + 1;
        i += k;
    }
    return true;
}

/* LEAN (lower_tsp.c): a run of k >= 3 identical instructions at one spacing d (1 .. REPEAT_D), each
 * alone in its cycle (not half of a MEM read/write pair) and nothing else between them, becomes the
 * first and a `repeat k - 1, d` (docs/tsp.md, ICU): two entries instead of k and the nops between.
 * The queue is busy through the last copy: the cycles between the copies are marked taken, so the
 * sweep places no fetch or text read there, and a run is packed only where every aligned window of
 * `win` cycles it touches keeps a free cycle for the queue's own ifetch (as while scheduling). The
 * tags are the same in such a run (an install's rows of zeros, an operator's one tag where it keeps
 * its constants) or it is no run. */
#define REPEAT_D 16

static bool lone_at(const lq *q, size_t i)
{
    return (i == 0 || q->v[i - 1].t != q->v[i].t) && (i + 1 == q->n || q->v[i + 1].t != q->v[i].t);
}

/* Would marking the cycles a .. b (the gaps of a run) leave every aligned window of win cycles that
 * they touch a free cycle of the queue? */
static bool windows_keep_free(const lq *q, uint64_t a, uint64_t b, uint64_t s, uint64_t e, uint64_t win)
{
    if (a > b)
        return true;
    for (uint64_t w0 = a / win * win; w0 <= b; w0 += win) {
        bool any = false;
        for (uint64_t c = w0; c < w0 + win && !any; c++)
            any = !(c >= s && c <= e) && !lt_bget(&q->issue, c) && !lt_bget(&q->wr, c);
        if (!any)
            return false;
    }
    return true;
}

static int pack_repeats(lq *q, uint64_t win)
{
    size_t o = 0;
    for (size_t i = 0; i < q->n;) {
        size_t j = i + 1;
        uint64_t d = i + 1 < q->n ? q->v[i + 1].t - q->v[i].t : 0;
        if (lone_at(q, i) && d >= 1 && d <= REPEAT_D)
            while (j < q->n && q->v[j].t == q->v[j - 1].t + d && lone_at(q, j) && q->v[j].in.op == q->v[i].in.op &&
                   !memcmp(q->v[j].in.a, q->v[i].in.a, sizeof q->v[i].in.a))
                j++;
        uint64_t t0 = q->v[i].t, t1 = q->v[j - 1].t;
        q->v[o++] = q->v[i];
        if (j - i >= 3 && (d == 1 || windows_keep_free(q, t0 + 1, t1 - 1, t0, t1, win))) {
            for (uint64_t c = t0 + 1; d > 1 && c < t1; c++)
                if (lt_bput(&q->issue, c, true))
                    return -1;
            rec r = {.t = t0, .ly = q->v[i].ly};
            r.in.op = LT_REPEAT;
            r.in.a[0] = (int32_t)(j - i - 1);
            r.in.a[1] = (int32_t)d;
            q->v[o++] = r;
        } else {
            j = i + 1;
        }
        i = j;
    }
    q->n = o;
    return 0;
}

/* Before the sweep: text words start above the allocations; every queue sorted, full, with its
 * suffix entry counts. */
static ts_status fetch_init(lt *L, fplan *fp)
{
    uint32_t nm = L->nW + L->nE;
    L->tnext = ts_calloc(nm, sizeof *L->tnext);
    fp->fs = ts_calloc(L->nq, sizeof *fp->fs);
    fp->nrec = ts_calloc(L->nq, sizeof *fp->nrec);
    fp->at = ts_calloc((size_t)L->tg->npos + 1, sizeof *fp->at);
    fp->mem_at = ts_calloc(nm ? nm : 1, sizeof *fp->mem_at);
    fp->cand = ts_calloc(nm ? nm : 1, sizeof *fp->cand);
    if (!L->tnext || !fp->fs || !fp->nrec || !fp->at || !fp->mem_at || !fp->cand)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    uint32_t x = 0; /* the MEM slices at each position, in slice order (once: positions x slices) */
    for (uint32_t p = 0; p < L->tg->npos; p++) {
        fp->at[p] = x;
        for (uint32_t m = 0; m < nm; m++)
            if (lt_mem_pos(L, m) == p)
                fp->mem_at[x++] = m;
    }
    fp->at[L->tg->npos] = x;
    for (uint32_t m = 0; m < nm; m++)
        for (int b = 0; b < 2; b++)
            L->tnext[m][b] = L->al[m >= L->nW][b].top;
    for (uint32_t qi = 0; qi < L->nq; qi++) {
        lq *q = &L->q[qi];
        fq *f = &fp->fs[qi];
        if (q->n) /* an empty queue has no array (qsort wants one) */
            qsort(q->v, q->n, sizeof *q->v, lt_cmp_rec);
        if (L->lean && pack_repeats(q, fp->D))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        f->avail = f->F = fp->C;
        for (int k = 0; k < FETCH_RING; k++)
            f->room[k] = (int64_t)fp->C;
        if (!(f->suf = ts_calloc(q->n + 1, sizeof *f->suf)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (size_t i = q->n; i-- > 0;)
            f->suf[i] = i + 1 < q->n && q->v[i + 1].t == q->v[i].t
                            ? 1 + f->suf[i + 1]
                            : 1 + (i + 1 < q->n ? nop_entries(q->v[i + 1].t - lt_rec_end(&q->v[i]) - 1) + f->suf[i + 1]
                                                : 0);
        fp->nrec[qi] = q->n;
    }
    return TS_OK;
}

/* Text below the data: a word the schedule first writes at cycle w holds nothing before w, so it
 * can hold text read before w; a word it never reads or writes can hold text at any time. Words
 * whose first access is a read hold data from the start (weights, inputs, constants, the zeros of
 * word 0) and are left alone. Builds fp's lists, every slice's and bank's words sorted by first
 * write (never written last); returns the number of words. */
typedef struct lword { uint64_t dl; uint32_t w; } lword;

static int cmp_lword(const void *a, const void *b)
{
    const lword *x = a, *y = b;
    return x->dl != y->dl ? (x->dl > y->dl) - (x->dl < y->dl) : (x->w > y->w) - (x->w < y->w);
}

static ts_status live_words(lt *L, fplan *fp, uint64_t *nwords)
{
    uint32_t nm = L->nW + L->nE, W = (uint32_t)L->tg->words;
    uint64_t *first = ts_malloc((size_t)W * sizeof *first);
    lword *pairs = ts_malloc((size_t)W * sizeof *pairs);
    fp->lw = ts_malloc((size_t)nm * W * sizeof *fp->lw);
    fp->ldl = ts_malloc((size_t)nm * W * sizeof *fp->ldl);
    fp->lb = ts_calloc(2 * (size_t)nm + 1, sizeof *fp->lb);
    fp->lp = ts_calloc(2 * (size_t)nm + 1, sizeof *fp->lp);
    if (!first || !pairs || !fp->lw || !fp->ldl || !fp->lb || !fp->lp) {
        ts_free(first);
        ts_free(pairs);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    size_t n = 0;
    for (uint32_t m = 0; m < nm; m++) {
        const lq *q = &L->q[m]; /* MEM slice m's queue is queue m, its recs sorted */
        for (uint32_t w = 0; w < W; w++)
            first[w] = UINT64_MAX;
        for (size_t i = 0; i < q->n; i++) {
            const ts_insn *in = &q->v[i].in;
            if ((in->op != LT_READ && in->op != LT_WRITE) || in->a[0] < 0 || (uint32_t)in->a[0] >= W)
                continue;
            uint32_t w = (uint32_t)in->a[0];
            if (first[w] == UINT64_MAX)
                first[w] = in->op == LT_READ ? 0 : q->v[i].t; /* first read: data from the start */
        }
        for (uint32_t b = 0; b < 2; b++) {
            size_t x = 2 * (size_t)m + b, from = n;
            fp->lb[x] = fp->lp[x] = n;
            for (uint32_t w = b ? L->half : 0; w < (b ? W : L->half); w++)
                if (first[w] > 0) {
                    fp->lw[n] = w;
                    fp->ldl[n++] = first[w];
                }
            /* latest first write last */
            for (size_t i = from; i < n; i++)
                pairs[i - from] = (lword){fp->ldl[i], fp->lw[i]};
            qsort(pairs, n - from, sizeof *pairs, cmp_lword);
            for (size_t i = from; i < n; i++) {
                fp->ldl[i] = pairs[i - from].dl;
                fp->lw[i] = pairs[i - from].w;
            }
        }
    }
    fp->lb[2 * (size_t)nm] = n;
    ts_free(first);
    ts_free(pairs);
    fp->live = true;
    *nwords = n;
    return TS_OK;
}

/* The operator kinds whose instructions take the most of the queues' entries (each instruction with
 * the nops before it, as text_fits counts them), for the message of a text that does not fit:
 * "MatMul 3543672 (53 %), ..." into buf, up to TEXT_KINDS kinds, the most first. */
#define TEXT_KINDS 4
static void text_by_op(const lt *L, char *buf, size_t size)
{
    uint64_t n[TS_OP_COUNT] = {0}, all = 0;
    buf[0] = '\0';
    for (uint32_t qi = 0; qi < L->nq; qi++) {
        const lq *q = &L->q[qi];
        for (size_t i = 0; i < q->n; i++) {
            uint64_t e = 1;
            if (i ? q->v[i].t != q->v[i - 1].t : q->v[i].t > 0)
                e += nop_entries(q->v[i].t - (i ? lt_rec_end(&q->v[i - 1]) + 1 : 0));
            if (q->v[i].ly < L->nlayers)
                n[ts_graph_get_node(L->g, L->layers[q->v[i].ly].node)->op] += e;
            all += e;
        }
    }
    size_t len = 0;
    for (int k = 0; k < TEXT_KINDS && all; k++) {
        int best = -1;
        for (int op = 0; op < TS_OP_COUNT; op++)
            if (n[op] && (best < 0 || n[op] > n[best]))
                best = op;
        if (best < 0 || len >= size)
            break;
        int w = snprintf(buf + len, size - len, "%s%s %" PRIu64 " (%" PRIu64 " %%)", k ? ", " : "",
                         ts_graph_op_name((ts_graph_op)best), n[best], (n[best] * 100 + all / 2) / all);
        len += w > 0 ? (size_t)w : 0;
        n[best] = 0;
    }
}

/* Does the instruction text fit in MEM? A queue of N entries past its C preloaded ones takes at
 * least ceil(N / (A - 1)) fetches of A entries (each ifetch is an entry too), each fetch two words;
 * the text reads the fetches add to MEM queues are not counted, so the need is a lower bound. The
 * schedule is one program without loops: a long one (ResNet-50 at batch 8, BERT-base) can need more
 * text than the chip holds. Where the words above the schedule's data hold the text, it goes there
 * (every program that fitted so far); otherwise also into words below, each until the schedule
 * first writes it (live_words), and the sweep places what it can. */
static ts_status text_fits(lt *L, fplan *fp)
{
    uint64_t fetches = 0, entries = 0, free = 0, per = ts_geom_cdiv(L->tg->ifetch_bytes, L->VL);
    for (uint32_t qi = 0; qi < L->nq; qi++) {
        const lq *q = &L->q[qi];
        uint64_t n = q->n ? fp->fs[qi].suf[0] + (q->v[0].t ? nop_entries(q->v[0].t) : 0) : 0;
        entries += n;
        if (n > fp->C && fp->A > 1)
            fetches += ts_geom_cdiv(n - fp->C, fp->A - 1);
    }
    for (uint32_t m = 0; m < L->nW + L->nE; m++)
        for (int b = 0; b < 2; b++)
            free += L->al[m >= L->nW][b].limit - L->tnext[m][b];
    if (fetches * per <= free && !L->text_live)
        return TS_OK;
    uint64_t live = 0;
    ts_status rc = live_words(L, fp, &live);
    if (rc != TS_OK || fetches * per <= live)
        return rc;
    L->text_short = L->text_over = true;
    L->text_far = fetches * per > LT_LEAN_REACH * live; /* LEAN is not tried (lower_tsp.c) */
    uint64_t short_w = fetches * per - live;
    char by[256];
    text_by_op(L, by, sizeof by);
    return ts_err_set(L->err, TS_EINPUT,
                      "the instruction text does not fit: the schedule's %" PRIu64 " entries in %" PRIu32
                      " queues need at least %" PRIu64 " fetches of %" PRIu64 " B past the %" PRIu64
                      " entries each queue preloads, %" PRIu64 " words of %" PRIu32 " B; the MEM words that hold no "
                      "data when the program starts are %" PRIu64 " (%" PRIu64
                      " above the schedule's data): at least %" PRIu64 " words short, %" PRIu64
                      " bytes; the entries by operator, the most first: %s",
                      entries, L->nq, fetches, (uint64_t)L->tg->ifetch_bytes, fp->C, fetches * per, L->VL, live, free,
                      short_w, short_w * L->VL, by);
}

/* The sweep stopped at cycle c with the text words used up (fp->dry): the error, with the fetches
 * the queues still need at least, counted as text_fits counts them. */
static ts_status text_ran_out(lt *L, const fplan *fp, uint64_t c)
{
    uint64_t fetches = 0, per = ts_geom_cdiv(L->tg->ifetch_bytes, L->VL);
    for (uint32_t qi = 0; qi < L->nq; qi++) {
        const fq *f = &fp->fs[qi];
        if (f->i >= fp->nrec[qi])
            continue;
        uint64_t rem = f->suf[f->i], have = f->F > f->e ? f->F - f->e : 0;
        if (rem > have && fp->A > 1)
            fetches += ts_geom_cdiv(rem - have, fp->A - 1);
    }
    L->text_short = true;
    return ts_err_set(L->err, TS_EINPUT,
                      "the instruction text does not fit: by cycle %" PRIu64 " of %" PRIu64 " its reads have taken "
                      "every MEM word free of data until then in the slices that could feed a queue, and the queues "
                      "still need at least %" PRIu64 " fetches of %" PRIu64 " B: at least %" PRIu64
                      " words short, %" PRIu64 " bytes",
                      c, L->last + 1, fetches, (uint64_t)L->tg->ifetch_bytes, fetches * per, fetches * per * L->VL);
}

/* Queue qi at cycle c of the sweep: an ifetch if it wants text and one fits, then the entries the
 * queue issues at c. Errors go to *rc (a fetch's own error replaces an earlier one). */
static void sweep_queue(lt *L, fplan *fp, uint32_t qi, uint64_t c, ts_status *rc)
{
    uint64_t C = fp->C, A = fp->A, D = fp->D;
    lq *q = &L->q[qi];
    fq *f = &fp->fs[qi];
    size_t n = fp->nrec[qi];
    land_until(f, c, A, C);
    while (f->w < n && q->v[f->w].t <= c + D - 1)
        f->w++;
    bool busy = f->i < n && q->v[f->i].t == c;
    if (!busy && f->i < n && f->nland < 4 && !occupied(L, qi, c) &&
        f->F < f->e + nop_entries(q->v[f->i].t - f->now) + f->suf[f->i] + 2 + L->fetch_slack) {
        uint64_t g = nop_entries(c - f->now) + 1, pc = f->e + g + (f->w - f->i);
        if (pc + C >= f->F + A && f->e + g <= f->avail && try_fetch(L, fp, qi, c)) {
            uint64_t start = c > f->pf ? c : f->pf;
            if (!issue_gap(f, c, A, C) || f->e >= f->avail)
                *rc = ts_err_set(L->err, TS_EINTERNAL, "queue %u: ifetch at cycle %" PRIu64 " unfetched", qi, c);
            f->e++;
            f->now = c + 1;
            f->land[f->nland++] = start + D - 1;
            f->pf = start + D;
            f->F += A;
        }
        if (L->oom)
            *rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    if (busy) {
        size_t k = f->i + 1 < n && q->v[f->i + 1].t == c ? 2 : 1;
        if (!issue_gap(f, c, A, C) || f->e + k > f->avail)
            if (*rc == TS_OK)
                *rc = ts_err_set(L->err, TS_EINPUT,
                                 "queue %u runs dry at cycle %" PRIu64 ": no ifetch could be placed in time "
                                 "(" TS_TSP_KEY_QUEUE_CAPACITY " %" PRIu64 ")",
                                 qi, c, C);
        f->e += k;
        f->now = lt_rec_end(&q->v[f->i + k - 1]) + 1;
        f->i += k;
    }
    f->room[c % FETCH_RING] = (int64_t)f->avail - (int64_t)f->e;
}

/* Place the ifetches of every queue longer than icu.queue_capacity, their text in MEM words above
 * everything the schedule allocated (below it too where those are too few: text_fits; a sweep that
 * runs out of words above sets L->text_out, and the lowering tries again with L->text_live). One
 * sweep over the cycles keeps every queue's count of issued, landed and requested entries; a queue
 * that wants text takes an ifetch at the first free cycle where the fetch cannot overfill it on landing, a stream pair and two text reads are
 * free. A text read adds entries to a MEM queue before the current cycle, where that queue had
 * room for them. Every queue is then replayed as the simulator issues it. */
ts_status lt_plan_fetches(lt *L)
{
    const ts_tsp_target *P = L->tg;
    if (!P->queue_capacity)
        return TS_OK;
    L->fwin = 0;
    fplan fp = {.C = P->queue_capacity, .A = P->ifetch_bytes / P->insn_bytes,
                .D = ts_geom_cdiv(P->ifetch_bytes, P->fetch_bpc)};
    ts_status rc = fetch_init(L, &fp);
    if (rc == TS_OK)
        rc = text_fits(L, &fp);
    uint64_t end = L->last + 1;
    uint64_t c = 0;
    for (; c <= end && rc == TS_OK; c++)
        for (uint32_t qi = 0; qi < L->nq; qi++)
            sweep_queue(L, &fp, qi, c, &rc);
    if (rc == TS_EINPUT && fp.dry && !fp.live)
        L->text_out = true; /* the words above the data ran out: the lowering tries again with text below */
    else if (rc == TS_EINPUT && fp.dry && !L->text_short)
        rc = text_ran_out(L, &fp, c - 1);
    for (uint32_t qi = 0; qi < L->nq && rc == TS_OK; qi++) {
        lq *q = &L->q[qi];
        if (q->n)
            qsort(q->v, q->n, sizeof *q->v, lt_cmp_rec);
        uint64_t t = 0;
        if (!check_queue(L, qi, &t))
            rc = ts_err_set(L->err, TS_EINPUT,
                            "queue %u runs dry or overfills at cycle %" PRIu64 ": no ifetch could be placed in time "
                            "(" TS_TSP_KEY_QUEUE_CAPACITY " %" PRIu64 ")",
                            qi, t, fp.C);
    }
    for (uint32_t qi = 0; fp.fs && qi < L->nq; qi++)
        ts_free(fp.fs[qi].suf);
    ts_free(fp.fs);
    ts_free(fp.nrec);
    ts_free(fp.at);
    ts_free(fp.mem_at);
    ts_free(fp.cand);
    ts_free(fp.lw);
    ts_free(fp.ldl);
    ts_free(fp.lb);
    ts_free(fp.lp);
    return rc;
}
