/* workloads/ipu/lower_ipu_batch.c — a batched Conv in rounds of images, planner (a).
 *
 * When the images of a batch side by side (each on tiles of its own, lower_ipu_conv.c) hold the
 * weights once per image and the model does not fit (ResNet-50 at batch 8 on a Mk2: 8 x 100 MB),
 * the lowering plans again with the images in rounds: `par` images side by side in each round
 * (half the batch, then a quarter, ... at each retry), the rounds one after another on the same
 * tiles with the same plan and the same weights (placed by the first round), so each weight is held
 * par times. Each round's output is then moved into the batch's output, flat, `chunk` elements a
 * tile, chunk dividing an image's elements so that each tile's chunk lies in one image: image n
 * goes to tiles n*k .. n*k + k - 1. The transfers land in
 * the staging buffer first (kept apart from the image's output, which its tile sends from in the
 * same superstep) and are copied into place by the supervisor.
 */
#include "workloads/ipu/lower_ipu_int.h"

ts_status lwi_lower_conv_images(lw *L, const ts_graph_node *n, lw_scr *sc, const cv_shape *s)
{
    const uint64_t N = s->N, img = s->M * s->Ho * s->Wo;
    uint64_t par = N * 4 / L->mmshare; /* images side by side in a round: half as many each retry */
    while (par > 1 && N % par)
        par--;
    par = par ? par : 1;
    uint64_t k = L->T / N; /* tiles an image's output takes: a divisor of its elements */
    while (k > 1 && img % k)
        k--;
    const uint64_t chunk = img / k;
    const uint32_t tn = (uint32_t)(N * k);
    cv_wkeep keep = {0};
    cv_shape some = *s;
    some.N = par;
    some.wkeep = &keep;
    uint64_t out = 0;
    int y = n->out[0];
    ts_status rc = TS_OK;
    for (uint64_t i = 0; i < N / par && rc == TS_OK; i++) {
        some.x0 = i * par * s->C * s->H * s->Wd;
        if ((rc = lwi_lower_conv_shape(L, n, sc, &some)) != TS_OK)
            break;
        if (!out) { /* the batch's output, apart from the round's */
            uint64_t av[2];
            lwi_elem_span(L, L->pl[y].addr, L->pl[y].chunk * 4, av);
            out = lwi_alloc_avoid(L, chunk * 4, av[0], av[1]);
        }
        for (uint32_t t = 0; t < tn; t++) {
            bool mine = t / (k * par) == i;
            sc->lo[t] = mine ? t % (k * par) * chunk : 0;
            sc->hi[t] = mine ? sc->lo[t] + chunk : 0;
        }
        bool st = L->staged;
        L->into = out;
        L->staged = true;
        rc = lwi_gather(L, y, tn, sc->lo, sc->hi, NULL, 0, 0, true, sc->where);
        L->into = 0;
        L->staged = st;
        lwi_sync_all(L);
        lwi_release(L, L->pl[y].addr);
        for (size_t b = 0; b < L->ntmp; b++) /* the round's buffers, dead after the sync */
            lwi_release(L, L->tmp[b]);
        L->ntmp = 0;
    }
    if (rc != TS_OK)
        return rc;
    lwi_use_tiles(L, tn);
    L->pl[y] = (lw_place){.ntiles = tn, .chunk = chunk, .addr = out, .es = 4};
    return TS_OK;
}
