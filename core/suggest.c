/* core/suggest.c — edit distance for did-you-mean messages. */
#include "core/suggest.h"

#include <ctype.h>

static int differ(char x, char y, bool fold)
{
    return fold ? tolower((unsigned char)x) != tolower((unsigned char)y) : x != y;
}

size_t ts_edit_distance(const char *a, size_t na, const char *b, size_t nb, bool fold)
{
    if (na > 63 || nb > 63)
        return 99;
    size_t d[64][64];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + (size_t)differ(a[i - 1], b[j - 1], fold) < best)
                best = d[i - 1][j - 1] + (size_t)differ(a[i - 1], b[j - 1], fold);
            if (i > 1 && j > 1 && !differ(a[i - 1], b[j - 2], fold) && !differ(a[i - 2], b[j - 1], fold) &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}
