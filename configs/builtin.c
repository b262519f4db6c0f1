/* configs/builtin.c — look-up over the generated table. */
#include "configs/builtin.h"

#include <string.h>

struct ts_builtin_file {
    const char *name, *path, *text;
    size_t len;
};
extern const struct ts_builtin_file ts_builtin_files[];
extern const size_t ts_builtin_nfiles;

int ts_builtin_find(const char *name, const char **text, size_t *len)
{
    for (size_t i = 0; i < ts_builtin_nfiles; i++)
        if (!strcmp(ts_builtin_files[i].name, name)) {
            *text = ts_builtin_files[i].text;
            *len = ts_builtin_files[i].len;
            return 0;
        }
    return -1;
}

size_t ts_builtin_count(void) { return ts_builtin_nfiles; }
const char *ts_builtin_name(size_t i) { return i < ts_builtin_nfiles ? ts_builtin_files[i].name : NULL; }
const char *ts_builtin_path(size_t i) { return i < ts_builtin_nfiles ? ts_builtin_files[i].path : NULL; }
