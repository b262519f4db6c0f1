/* workloads/lower/unsupported.h — the operators of a model a lowering does not take, all at once.
 *
 * Each family states, in one function (its `refuse`), which operators it does not lower: an
 * operator kind it has no room for, or a form of one it refuses whatever the shapes ("Gelu with the
 * tanh approximation", "Conv with groups or dilations", a dtype). The same function serves twice:
 * ts_lower_check_ops runs it over the whole graph before anything is planned or emitted and lists
 * every refused operator in one error; the family's dispatch runs it again on the node at hand
 * (ts_lower_refused), so the list and what the dispatch does cannot disagree. Limits found deep in
 * a lowering (a plan that does not fit, a shape a kernel cannot take) stay where they are.
 */
#ifndef TS_WORKLOADS_LOWER_UNSUPPORTED_H
#define TS_WORKLOADS_LOWER_UNSUPPORTED_H

#include <stdbool.h>
#include <stddef.h>
#include "core/err.h"
#include "workloads/graph.h"

/* A family's list of what it lowers (static, never freed). */
typedef struct ts_lower_ops {
    const char *family; /* as messages name it: "IPU", "TSP", "WSE" */
    /* True when the family refuses node n of g; then why (cap bytes) holds "" when it refuses the
     * operator in every form, or the refused form as a phrase that follows the op's name ("with the
     * tanh approximation", "on i8"). */
    bool (*refuse)(const ts_graph *g, const ts_graph_node *n, char *why, size_t cap);
    const char *takes; /* what the family lowers, added to the message; NULL for nothing */
} ts_lower_ops;

/* TS_OK when ops->refuse takes every node of g. Else TS_EINPUT with one message listing each
 * refused operator kind (and form) once, in graph order, with its count of nodes and its first
 * node: "the IPU lowering does not support 3 operators of this model (4 nodes): Concat (2 nodes,
 * first 'cat0'), Transpose (node 't1'), Gelu with the tanh approximation (node 'g0')". A list too
 * long for one message ends with "and N more". TS_ENOMEM when memory runs out. err may be NULL. */
ts_status ts_lower_check_ops(const ts_graph *g, const ts_lower_ops *ops, ts_err *err);

/* For a family's dispatch: TS_OK when ops->refuse takes node n, else TS_EINPUT naming the node as
 * ts_lower_fail does: "Gelu 'g0': the IPU lowering does not support Gelu with the tanh
 * approximation". */
ts_status ts_lower_refused(ts_err *err, const ts_graph *g, const ts_graph_node *n, const ts_lower_ops *ops);

#endif
