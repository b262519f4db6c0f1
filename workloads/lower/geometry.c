/* workloads/lower/geometry.c — shapes read off the graph (geometry.h). */
#include "workloads/lower/geometry.h"

void ts_geom_pixels_channels(const ts_graph_tensor *t, uint64_t *pixels, uint64_t *channels)
{
    int c = t->rank == 4 ? 1 : t->rank - 1; /* the channels' axis; -1 for a scalar */
    uint64_t p = 1;
    for (int i = 0; i < t->rank; i++)
        if (i != c)
            p *= (uint64_t)t->dims[i];
    *pixels = p;
    *channels = c >= 0 ? (uint64_t)t->dims[c] : 1;
}

bool ts_geom_window_of(const ts_graph *g, const ts_graph_node *n, ts_geom_window *w)
{
    bool conv = n->op == TS_OP_CONV, gap = n->op == TS_OP_GLOBALAVGPOOL;
    if ((!conv && !gap && n->op != TS_OP_MAXPOOL && n->op != TS_OP_AVGPOOL) || n->nin < (conv ? 2u : 1u) ||
        n->nout < 1)
        return false;
    const ts_graph_tensor *x = ts_graph_get_tensor(g, n->in[0]), *y = ts_graph_get_tensor(g, n->out[0]);
    const ts_graph_tensor *k = conv ? ts_graph_get_tensor(g, n->in[1]) : NULL;
    if (x->rank != 4 || y->rank != 4 || (k && k->rank != 4))
        return false;
    const ts_graph_attrs *a = &n->attrs;
    *w = (ts_geom_window){.N = x->dims[0], .C = x->dims[1], .H = x->dims[2], .W = x->dims[3],
                          .M = conv ? k->dims[0] : x->dims[1], .Ho = y->dims[2], .Wo = y->dims[3],
                          .kh = conv ? k->dims[2] : gap ? x->dims[2] : a->kernel[0],
                          .kw = conv ? k->dims[3] : gap ? x->dims[3] : a->kernel[1], .sh = 1, .sw = 1, .dh = 1,
                          .dw = 1};
    if (!gap) {
        w->sh = a->strides[0], w->sw = a->strides[1];
        w->dh = a->dilations[0], w->dw = a->dilations[1];
        w->pt = a->pads[0], w->pl = a->pads[1], w->pb = a->pads[2], w->pr = a->pads[3];
    }
    return true;
}

bool ts_geom_window_tap(const ts_geom_window *w, int64_t oy, int64_t ox, int64_t ky, int64_t kx, int64_t *iy,
                        int64_t *ix)
{
    *iy = oy * w->sh - w->pt + ky * w->dh;
    *ix = ox * w->sw - w->pl + kx * w->dw;
    return *iy >= 0 && *ix >= 0 && *iy < w->H && *ix < w->W;
}

bool ts_geom_window_pointwise(const ts_geom_window *w)
{
    return w->kh == 1 && w->kw == 1 && w->sh == 1 && w->sw == 1 && !w->pt && !w->pl && !w->pb && !w->pr;
}
