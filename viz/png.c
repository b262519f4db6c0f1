/* viz/png.c — PNG output with libpng, written to memory and then atomically to the file. */
#include "viz/render.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/fileio.h"
#include "ts_build.h"

#include <stdbool.h>
#include <string.h>

#if TS_HAVE_PNG
#include <png.h>
#include <setjmp.h>

typedef struct png_mem {
    uint8_t *data;
    size_t len, cap;
    bool nomem;
} png_mem;

static void mem_write(png_structp png, png_bytep data, png_size_t n)
{
    png_mem *m = png_get_io_ptr(png);
    if (m->nomem)
        return;
    void *v = m->data;
    if (ts_grow(&v, &m->cap, m->len + n, 1)) {
        m->nomem = true;
        return;
    }
    m->data = v;
    memcpy(m->data + m->len, data, n);
    m->len += n;
}

static void mem_flush(png_structp png) { (void)png; }

/* Encode; kept apart from the caller so nothing but png_mem lives across the setjmp. */
static int encode(const ts_viz_image *img, png_mem *out)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (!png)
        return -1;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_set_write_fn(png, out, mem_write, mem_flush);
    png_set_IHDR(png, info, img->w, img->h, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    /* frames are many: speed over size. The pictures are flat colour, rows repeating: the Up
     * filter alone compresses them nearly as well as libpng's adaptive choice of filters (5 %
     * larger) at a quarter of the cost (wse_32x32 frames: 55 M instructions each, not 198 M) */
    png_set_compression_level(png, 3);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
    png_write_info(png, info);
    for (uint32_t y = 0; y < img->h; y++)
        png_write_row(png, img->px + 4 * (size_t)y * img->w);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

ts_status ts_viz_png_write(const ts_viz_image *img, const char *path, ts_err *err)
{
    if (!img->px || !img->w || !img->h)
        return ts_err_set(err, TS_EINTERNAL, "empty image for %s", path);
    png_mem m = {0};
    int bad = encode(img, &m);
    if (bad || m.nomem) {
        ts_free(m.data);
        return ts_err_set(err, m.nomem ? TS_ENOMEM : TS_EINTERNAL, "cannot encode %s as PNG", path);
    }
    ts_status rc = ts_write_file_atomic(path, m.data, m.len, err);
    ts_free(m.data);
    return rc;
}

#else

ts_status ts_viz_png_write(const ts_viz_image *img, const char *path, ts_err *err)
{
    (void)img;
    return ts_err_set(err, TS_EINPUT, "cannot write %s: this build has no libpng", path);
}

#endif
