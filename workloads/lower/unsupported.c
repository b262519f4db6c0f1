/* workloads/lower/unsupported.c — the operators a lowering does not take, gathered (unsupported.h). */
#include "workloads/lower/unsupported.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/lower/errors.h"

/* One refused operator kind and form: how many nodes, the first of them. */
typedef struct refusal {
    ts_graph_op op;
    char why[96];
    size_t count;
    const char *first; /* borrowed from the graph */
} refusal;

/* Append "<Op>[ why] (N nodes, first 'x')" or "(node 'x')" to b (cap bytes, used so far *len);
 * false when it does not fit, leaving b as it was. */
static bool append(char *b, size_t cap, size_t *len, const char *sep, const refusal *r)
{
    int k = snprintf(b + *len, cap - *len, "%s%s%s%s (", sep, ts_graph_op_name(r->op), r->why[0] ? " " : "", r->why);
    if (k >= 0 && (size_t)k < cap - *len) {
        size_t at = *len + (size_t)k;
        int m = r->count > 1 ? snprintf(b + at, cap - at, "%zu nodes, first '%s')", r->count, r->first)
                             : snprintf(b + at, cap - at, "node '%s')", r->first);
        if (m >= 0 && (size_t)m < cap - at) {
            *len = at + (size_t)m;
            return true;
        }
    }
    b[*len] = '\0';
    return false;
}

/* The message of n refusals over `nodes` nodes, into msg (cap bytes). */
static void format(const ts_lower_ops *ops, const refusal *v, size_t n, size_t nodes, char *msg, size_t cap)
{
    /* room kept for the tail: "; and N more" and what the family takes */
    size_t tail = 32 + (ops->takes ? strlen(ops->takes) + 16 : 0);
    size_t room = cap > tail + 64 ? cap - tail : cap / 2;
    char total[48] = "";
    if (nodes > n)
        snprintf(total, sizeof total, " (%zu nodes)", nodes);
    int k = snprintf(msg, room, "the %s lowering does not support %zu operator%s of this model%s: ", ops->family, n,
                     n == 1 ? "" : "s", total);
    size_t len = k < 0 ? 0 : (size_t)k < room ? (size_t)k : room - 1;
    size_t i = 0;
    for (; i < n && append(msg, room, &len, i ? ", " : "", &v[i]); i++)
        ;
    if (i < n)
        len += (size_t)snprintf(msg + len, cap - len, "%sand %zu more", i ? ", " : "", n - i);
    if (ops->takes && len < cap)
        snprintf(msg + len, cap - len, "; it lowers %s", ops->takes);
}

ts_status ts_lower_check_ops(const ts_graph *g, const ts_lower_ops *ops, ts_err *err)
{
    refusal *v = NULL;
    size_t n = 0, cap = 0, nodes = 0;
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
        char why[sizeof v->why] = "";
        if (!ops->refuse(g, nd, why, sizeof why))
            continue;
        nodes++;
        size_t k = 0;
        while (k < n && !(v[k].op == nd->op && !strcmp(v[k].why, why)))
            k++;
        if (k == n) {
            if (ts_grow((void **)&v, &cap, n + 1, sizeof *v)) {
                ts_free(v);
                return ts_err_set(err, TS_ENOMEM, "out of memory");
            }
            v[n] = (refusal){.op = nd->op, .first = nd->name};
            memcpy(v[n].why, why, sizeof why);
            n++;
        }
        v[k].count++;
    }
    if (!n)
        return TS_OK;
    char msg[sizeof err->msg];
    format(ops, v, n, nodes, msg, sizeof msg);
    ts_free(v);
    return ts_err_set(err, TS_EINPUT, "%s", msg);
}

ts_status ts_lower_refused(ts_err *err, const ts_graph *g, const ts_graph_node *n, const ts_lower_ops *ops)
{
    char why[96] = "";
    if (!ops->refuse(g, n, why, sizeof why))
        return TS_OK;
    return ts_lower_fail(err, n, "the %s lowering does not support %s%s%s", ops->family, ts_graph_op_name(n->op),
                         why[0] ? " " : "", why);
}
