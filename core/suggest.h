/* core/suggest.h — "did you mean" for every parser: one edit distance. */
#ifndef TS_CORE_SUGGEST_H
#define TS_CORE_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

/* Optimal string alignment distance (Levenshtein plus adjacent swaps) between a[0..na) and
 * b[0..nb), optionally ignoring ASCII case. Strings longer than 63 bytes count as far apart
 * (returns 99): suggestions are for names, and the table stays on the stack. */
size_t ts_edit_distance(const char *a, size_t na, const char *b, size_t nb, bool fold_case);

#endif
