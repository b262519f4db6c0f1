/* workloads/tsp/memory.c — MEM allocation and placement for the TSP lowering (see lower_tsp_int.h).
 *
 * Every tensor is striped over the west MEM slices, the same words in every slice (lt_slot);
 * constants replicated in every east slice, and int32 partial sums striped over the east ones.
 * Each hemisphere has two allocators, one per bank half, first fit over freed ranges, each range
 * writable only after the last read of what it held. Initial data (inputs, weights, constants) is
 * written as per-slice images and added to the program as data segments.
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"

/* ---- regions ---- */

/* First fit: len words from the free ranges, else from the top; -1 if the hemisphere is full. */
static int al_get(alloc *a, uint32_t len, uint32_t *base, uint64_t *avail)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].len >= len) {
            *base = a->v[i].base;
            *avail = a->v[i].avail;
            a->v[i].base += len;
            a->v[i].len -= len;
            if (!a->v[i].len)
                memmove(a->v + i, a->v + i + 1, (--a->n - i) * sizeof *a->v);
            return 0;
        }
    if ((uint64_t)a->top + len > a->limit)
        return -1;
    *base = a->top;
    *avail = 0;
    a->top += len;
    return 0;
}

/* Give words base..base + len back, writable after cycle avail (merged with its neighbours). */
int lt_al_put(alloc *a, uint32_t base, uint32_t len, uint64_t avail)
{
    if (!len)
        return 0;
    size_t i = 0;
    while (i < a->n && a->v[i].base < base)
        i++;
    if (ts_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v))
        return -1;
    memmove(a->v + i + 1, a->v + i, (a->n - i) * sizeof *a->v);
    a->v[i] = (fr){base, len, avail};
    a->n++;
    /* merge with the neighbours */
    if (i + 1 < a->n && a->v[i].base + a->v[i].len == a->v[i + 1].base) {
        a->v[i].len += a->v[i + 1].len;
        if (a->v[i + 1].avail > a->v[i].avail)
            a->v[i].avail = a->v[i + 1].avail;
        memmove(a->v + i + 1, a->v + i + 2, (a->n - i - 2) * sizeof *a->v);
        a->n--;
    }
    if (i > 0 && a->v[i - 1].base + a->v[i - 1].len == a->v[i].base) {
        a->v[i - 1].len += a->v[i].len;
        if (a->v[i].avail > a->v[i - 1].avail)
            a->v[i - 1].avail = a->v[i].avail;
        memmove(a->v + i, a->v + i + 1, (a->n - i - 1) * sizeof *a->v);
        a->n--;
    }
    return 0;
}

/* The error of a region of `words` words that fits in no bank half of a hemisphere's slices: what
 * needs it, the most a half has free for it, and the shortfall in words per slice and in bytes over
 * all the hemisphere's slices (a word is one vector of VL bytes). */
static ts_status region_short(lt *L, int hemi, uint32_t words, const char *what, const ts_graph_node *nd, bool fresh)
{
    const alloc *a = L->al[hemi];
    uint64_t taken = (uint64_t)(a[0].top - a[0].first) + (a[1].top - a[1].first), room = 0;
    for (int k = 0; k < 2; k++) {
        uint64_t r = a[k].limit - a[k].top;
        for (size_t i = 0; !fresh && i < a[k].n; i++)
            if (a[k].v[i].len > r)
                r = a[k].v[i].len;
        if (r > room)
            room = r;
    }
    uint64_t short_w = words - room, slices = hemi ? L->nE : L->nW;
    L->room_short = true;
    return ts_err_set(L->err, TS_EINPUT,
                      "%s '%s': no room for %s: %" PRIu32 " words are needed in one bank half (%" PRIu32 " words) of "
                      "each %s MEM slice, the most free in a half is %" PRIu64 " (%" PRIu64 " of the slice's %" PRIu64
                      " words taken): "
                      "%" PRIu64 " words short in each of the %" PRIu64 " slices, %" PRIu64 " bytes",
                      ts_graph_op_name(nd->op), nd->name, what, words, L->half, hemi ? "east" : "west", room, taken,
                      L->tg->words, short_w, slices, short_w * slices * L->VL);
}

/* Words base..base+words in every slice of a hemisphere. Regions that hold initial data must be
 * fresh (never written by the schedule); others may reuse freed words after *avail. */
ts_status lt_region(lt *L, int hemi, uint32_t words, const char *what, const ts_graph_node *nd, bool fresh,
                    int bank, uint32_t *base, uint64_t *avail)
{
    int bad = -1;
    for (int k = 0; k < 2 && bad; k++) {
        alloc *a = &L->al[hemi][k ? 1 - bank : bank];
        size_t n = a->n;
        if (fresh)
            a->n = 0;
        bad = al_get(a, words, base, avail);
        if (fresh)
            a->n = n;
    }
    if (bad)
        return region_short(L, hemi, words, what, nd, fresh);
    return TS_OK;
}

/* The most fresh words (never written, above every region) in one bank half of a hemisphere's slices,
 * and the bank of that half. */
uint32_t lt_fresh_room(const lt *L, int hemi, int *bank)
{
    const alloc *a = L->al[hemi];
    int b = a[1].limit - a[1].top > a[0].limit - a[0].top;
    *bank = b;
    return a[b].limit - a[b].top;
}

/* The allocator (bank half) that words from base belong to. */
alloc *lt_alloc_of(lt *L, int hemi, uint32_t base)
{
    return &L->al[hemi][base >= L->half];
}

/* The bank a tensor computed from x should go to: the other one. */
int lt_bank_pref(const lt *L, const tens *x)
{
    return x && x->base >= L->half ? 0 : 1;
}

/* Place a tensor of P pixels x C channels in the west MEM. */
ts_status lt_place(lt *L, int id, uint32_t P, uint32_t C, const ts_graph_node *nd, bool fresh, int bank)
{
    tens *x = &L->t[id];
    x->P = P;
    x->C = C;
    x->T = (uint32_t)ts_geom_cdiv(C, L->VL);
    uint64_t n = (uint64_t)P * x->T;
    x->off = L->rot % L->nW;
    x->nw = (uint32_t)ts_geom_cdiv(x->off + n, L->nW);
    char what[96];
    snprintf(what, sizeof what, "activation '%s'", ts_graph_get_tensor(L->g, id)->name);
    ts_status rc = lt_region(L, 0, x->nw, what, nd, fresh, bank, &x->base, &x->avail);
    if (rc != TS_OK)
        return rc;
    x->ready = ts_calloc(n ? n : 1, sizeof *x->ready);
    if (!x->ready)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    x->placed = true;
    x->owner = id;
    x->last_read = 0;
    return TS_OK;
}

/* A tensor's last user was scheduled: its region may be written after its last read. */
void lt_release(lt *L, int id)
{
    tens *x = &L->t[id];
    if (!x->placed || x->output || x->owner != id || --x->users > 0)
        return;
    if (lt_al_put(lt_alloc_of(L, 0, x->base), x->base, x->nw, x->last_read))
        L->oom = true;
    x->nw = 0;
}

/* ---- images of initial data ---- */

static int img_alloc(image *im, uint32_t nslices, uint32_t base, uint32_t words, uint32_t VL)
{
    im->n = nslices;
    im->words = words;
    im->base = base;
    im->s = ts_calloc(nslices, sizeof *im->s);
    if (!im->s)
        return -1;
    for (uint32_t i = 0; i < nslices; i++)
        if (!(im->s[i] = ts_calloc(words ? (size_t)words * VL : 1, 1)))
            return -1;
    return 0;
}

static void img_free(image *im)
{
    for (uint32_t i = 0; im->s && i < im->n; i++)
        ts_free(im->s[i]);
    ts_free(im->s);
    im->s = NULL;
}

/* An image of words base..base + words of nslices slices, all zeros. */
ts_status lt_img_init(lt *L, image *im, uint32_t nslices, uint32_t base, uint32_t words)
{
    if (img_alloc(im, nslices, base, words, L->VL)) {
        img_free(im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    return TS_OK;
}

/* Add the image's slices that hold a nonzero byte as data segments of MEM first, first + 1, ...
 * (data-segment indexes), and free it. */
ts_status lt_img_flush(lt *L, image *im, uint32_t first)
{
    ts_status rc = TS_OK;
    for (uint32_t i = 0; i < im->n; i++) {
        if (rc == TS_OK && im->words) {
            bool any = false;
            for (size_t b = 0; b < (size_t)im->words * L->VL && !any; b++)
                any = im->s[i][b] != 0;
            if (any)
                rc = ts_program_add_segment(L->prog, 1, first + i, (uint64_t)im->base * L->VL, im->s[i],
                                            im->words * L->VL, L->err);
        }
        ts_free(im->s[i]);
    }
    ts_free(im->s);
    im->s = NULL;
    return rc;
}

/* Fresh words of every east slice for constants read by lt_rd_any; in the compact layout, words of
 * one group of LT_CGROUPS groups of east slices (the other groups hold other constants in the same
 * words): *base is then the word plus (group + 1) << LT_GSHIFT, which lt_rd_any reads from the
 * group's slices and lt_const_flush writes there. */
ts_status lt_const_region(lt *L, uint32_t words, const char *what, const ts_graph_node *nd, uint32_t *base)
{
    uint64_t av;
    if (!L->compact)
        return lt_region(L, 1, words, what, nd, true, 0, base, &av);
    int g = -1;
    for (int k = 0; k < LT_CGROUPS && g < 0; k++)
        if (L->cpool_words && L->cpool_fill[k] + words <= L->cpool_words)
            g = k;
    if (g < 0) {
        uint32_t n = words > LT_CPOOL ? words : LT_CPOOL;
        ts_status rc = lt_region(L, 1, n, what, nd, true, 0, &L->cpool_base, &av);
        if (rc == TS_EINPUT && n > words) /* the last words of the hemisphere */
            rc = lt_region(L, 1, n = words, what, nd, true, 0, &L->cpool_base, &av);
        if (rc != TS_OK)
            return rc;
        L->cpool_words = n;
        memset(L->cpool_fill, 0, sizeof L->cpool_fill);
        g = 0;
    }
    *base = (L->cpool_base + L->cpool_fill[g]) | (uint32_t)(g + 1) << LT_GSHIFT;
    L->cpool_fill[g] += words;
    return TS_OK;
}

/* Add an image of constants made for every east slice at the word lt_const_region gave: in the
 * compact layout only its group's slices are written. */
ts_status lt_const_flush(lt *L, image *im)
{
    uint32_t g = im->base >> LT_GSHIFT, n = L->nE / LT_CGROUPS;
    if (g)
        for (uint32_t e = 0; e < im->n; e++)
            if (e / n != g - 1 || e >= n * LT_CGROUPS)
                memset(im->s[e], 0, (size_t)im->words * L->VL);
    im->base &= (1u << LT_GSHIFT) - 1;
    return lt_img_flush(L, im, L->nW);
}

/* n fresh words of every east MEM slice for a constant (what: its name in a refusal) at *base,
 * and the image that fills them (flushed by lt_const_flush). */
static ts_status const_image(lt *L, const ts_graph_node *nd, uint32_t n, const char *what, uint32_t *base,
                             image *im)
{
    ts_status rc = lt_const_region(L, n, what, nd, base);
    return rc != TS_OK ? rc : lt_img_init(L, im, L->nE, *base, n);
}

/* An f32 scale in 4 fresh words of every east MEM slice (byte plane b in word *base + b, every
 * lane), as lt_scale_in reads it. */
ts_status lt_scale_const(lt *L, const ts_graph_node *nd, float sc, uint32_t *base)
{
    image im;
    ts_status rc = const_image(L, nd, 4, "the scale", base, &im);
    if (rc != TS_OK)
        return rc;
    uint32_t sb;
    memcpy(&sb, &sc, 4);
    for (uint32_t e = 0; e < L->nE; e++)
        for (uint32_t l = 0; l < L->VL; l++)
            for (int by = 0; by < 4; by++)
                im.s[e][(size_t)by * L->VL + l] = (uint8_t)(sb >> (8 * by));
    return lt_const_flush(L, &im);
}

/* An int8 constant (`byte` in every lane) in a fresh word of every east MEM slice, as lt_byte_in
 * reads it. */
ts_status lt_byte_const(lt *L, const ts_graph_node *nd, uint8_t byte, uint32_t *word)
{
    image im;
    ts_status rc = const_image(L, nd, 1, "the constant", word, &im);
    if (rc != TS_OK)
        return rc;
    for (uint32_t e = 0; e < L->nE; e++)
        memset(im.s[e], byte, L->VL);
    return lt_const_flush(L, &im);
}

/* ---- graph inputs ---- */

/* The dimensions and rank of tensor id. */
const int64_t *lt_dims(const lt *L, int id, int *rank)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, id);
    *rank = t->rank;
    return t->dims;
}

/* Pixels and channels of an activation (ts_geom_pixels_channels): NCHW (the images one after
 * another: pixel n H W + y W + x), or any other rank row-major with the last axis as channels. */
ts_status lt_shape_pc(lt *L, const ts_graph_node *nd, int id, uint32_t *P, uint32_t *C)
{
    int r;
    lt_dims(L, id, &r);
    if (r < 0)
        return ts_lower_fail(L->err, nd, "a tensor without a shape");
    uint64_t p, c;
    ts_geom_pixels_channels(ts_graph_get_tensor(L->g, id), &p, &c);
    *P = (uint32_t)p;
    *C = (uint32_t)c;
    return TS_OK;
}

/* Place a graph input (int8 values from the graph or the fill) in the west MEM. */
ts_status lt_place_input(lt *L, int id, const ts_graph_node *nd)
{
    uint32_t P, C;
    ts_status rc = lt_shape_pc(L, nd, id, &P, &C);
    if (rc != TS_OK || (rc = lt_place(L, id, P, C, nd, true, 0)) != TS_OK)
        return rc;
    tens *x = &L->t[id];
    int r;
    const int64_t *d = lt_dims(L, id, &r);
    uint64_t hw = r == 4 ? (uint64_t)(d[2] * d[3]) : 1;
    image im;
    if ((rc = lt_img_init(L, &im, L->nW, x->base, x->nw)) != TS_OK)
        return rc;
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, id);
    for (uint32_t px = 0; px < P; px++)
        for (uint32_t c = 0; c < C; c++) {
            uint64_t e = r == 4 ? ((uint64_t)px / hw * C + c) * hw + px % hw : (uint64_t)px * C + c;
            int8_t v = ts_fill_value_i8(t, id, e);
            uint64_t k = x->off + (uint64_t)px * x->T + c / L->VL;
            im.s[k % L->nW][(size_t)(k / L->nW) * L->VL + c % L->VL] = (uint8_t)v;
        }
    L->words_used += (uint64_t)x->nw * L->nW;
    return lt_img_flush(L, &im, 0);
}
