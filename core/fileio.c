/* core/fileio.c — whole-file reads and atomic writes. */
#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/limit.h"

static ts_status too_big(const char *path, uint64_t size, uint64_t limit, ts_err *err)
{
    char what[64] = "more";
    if (size)
        snprintf(what, sizeof what, "%" PRIu64 " bytes, more", size);
    return ts_err_at(err, TS_EINPUT, path, 0, 0, "the file is %s than the limit of %" PRIu64 " bytes "
                     TS_LIMIT_HINT_FMT, what, limit, ts_limit_name(TS_LIMIT_INPUT_BYTES));
}

ts_status ts_read_file(const char *path, char **data, size_t *len, ts_err *err)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ts_err_at(err, TS_EIO, path, 0, 0, "cannot open: %s", strerror(errno));
    /* A file over the input limit is refused before it is read (a pipe or a file that grows is
     * stopped by the same check as it is read). */
    uint64_t limit = ts_limit(TS_LIMIT_INPUT_BYTES);
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > limit) {
        fclose(f);
        return too_big(path, (uint64_t)st.st_size, limit, err);
    }
    size_t cap = 4096, n = 0;
    char *buf = ts_malloc(cap);
    if (!buf) {
        fclose(f);
        return ts_err_set(err, TS_ENOMEM, "out of memory reading %s", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = ts_realloc(buf, cap * 2);
            if (!nb) {
                ts_free(buf);
                fclose(f);
                return ts_err_set(err, TS_ENOMEM, "out of memory reading %s", path);
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
        if (n > limit) {
            ts_free(buf);
            fclose(f);
            return too_big(path, 0, limit, err);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        ts_free(buf);
        return ts_err_at(err, TS_EIO, path, 0, 0, "read error");
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return TS_OK;
}

/* ---- temporary files ------------------------------------------------------------------------ */

/* A slot is in use while its flag is 1; the path is copied before the flag is raised, and a signal
 * handler reads only slots whose flag it sees raised. */
static char tmp_path[TS_TMP_SLOTS][TS_TMP_PATH_MAX];
static int tmp_used[TS_TMP_SLOTS];

int ts_tmp_track(const char *tmp)
{
    size_t n = strlen(tmp);
    if (n >= TS_TMP_PATH_MAX)
        return -1;
    for (int i = 0; i < TS_TMP_SLOTS; i++) {
        int expect = 0;
        /* 2 reserves the slot while the path is copied; 1 publishes it to the handler */
        if (__atomic_compare_exchange_n(&tmp_used[i], &expect, 2, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            memcpy(tmp_path[i], tmp, n + 1);
            __atomic_store_n(&tmp_used[i], 1, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

void ts_tmp_untrack(int slot)
{
    if (slot >= 0 && slot < TS_TMP_SLOTS)
        __atomic_store_n(&tmp_used[slot], 0, __ATOMIC_RELEASE);
}

void ts_tmp_remove_all(void)
{
    for (int i = 0; i < TS_TMP_SLOTS; i++)
        if (__atomic_load_n(&tmp_used[i], __ATOMIC_ACQUIRE) == 1)
            unlink(tmp_path[i]);
}

void ts_tmp_remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t bl = strlen(base);
    char dir[TS_TMP_PATH_MAX];
    if (!bl || (slash && (size_t)(slash - path) + 1 >= sizeof dir))
        return;
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path + (slash == path)), path);
    else
        snprintf(dir, sizeof dir, ".");
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        if (strncmp(nm, base, bl) || strncmp(nm + bl, ".tmp.", 5))
            continue;
        const char *digits = nm + bl + 5;
        char *end;
        errno = 0;
        long pid = strtol(digits, &end, 10);
        if (!*digits || *end || errno || pid <= 0 || pid == (long)getpid() || (pid_t)pid != pid)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive, or not ours to signal: it may be alive */
        char full[TS_TMP_PATH_MAX + 256];
        snprintf(full, sizeof full, "%s/%s", dir, nm);
        unlink(full);
    }
    closedir(d);
}

char *ts_tmp_name(const char *path)
{
    size_t n = strlen(path) + 32;
    char *tmp = ts_malloc(n);
    if (tmp)
        snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    return tmp;
}

ts_status ts_check_writable(const char *path, ts_err *err)
{
    if (!path || !strcmp(path, "-"))
        return TS_OK;
    char *tmp = ts_tmp_name(path);
    if (!tmp)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    /* tracked from before it exists until after it is gone: a signal in between removes it */
    int slot = ts_tmp_track(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    ts_status st = TS_OK;
    if (fd < 0) {
        if (errno != EEXIST) /* our own temporary file exists: something writes it; the path is fine */
            st = ts_err_at(err, TS_EIO, path, 0, 0, "cannot write: %s", strerror(errno));
    } else {
        close(fd);
        unlink(tmp);
    }
    ts_tmp_untrack(slot);
    ts_free(tmp);
    return st;
}

ts_status ts_write_file_atomic(const char *path, const void *data, size_t len, ts_err *err)
{
    if (!path || !strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout))
            return ts_err_set(err, TS_EIO, "cannot write to standard output");
        return TS_OK;
    }
    char *tmp = ts_tmp_name(path);
    if (!tmp)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_tmp_remove_stale(path);
    int slot = ts_tmp_track(tmp);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        ts_status st = ts_err_at(err, TS_EIO, path, 0, 0, "cannot write: %s", strerror(errno));
        ts_tmp_untrack(slot);
        ts_free(tmp);
        return st;
    }
    int bad = fwrite(data, 1, len, f) != len;
    bad |= fflush(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        ts_status st = ts_err_at(err, TS_EIO, path, 0, 0, "cannot write: %s", strerror(errno));
        remove(tmp);
        ts_tmp_untrack(slot);
        ts_free(tmp);
        return st;
    }
    ts_tmp_untrack(slot);
    ts_free(tmp);
    return TS_OK;
}

uint64_t ts_fnv1a(uint64_t seed, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
