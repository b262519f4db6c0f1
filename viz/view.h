/* viz/view.h — a live window (SDL2) showing the frames the renderer draws.
 *
 * Keys: space pauses and resumes; n (or the right arrow) shows the next frame while paused;
 * + and - halve and double the pause between frames (0 .. 2000 ms, 50 ms to start); q or Escape
 * close the window (the run goes on without it). The window opens at the first frame, sized to it.
 * Without SDL2 in the build, ts_view_open fails with TS_EINPUT.
 */
#ifndef TS_VIZ_VIEW_H
#define TS_VIZ_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include "core/err.h"
#include "viz/render.h"

typedef struct ts_view ts_view;

ts_status ts_view_open(ts_view **out, const char *title, ts_err *err);
/* Show img, then handle keys: wait while paused (until resumed, stepped or closed), else wait the
 * current pause between frames. Does nothing once the window is closed. */
ts_status ts_view_frame(ts_view *v, const ts_viz_image *img, ts_err *err);
/* Close the window; NULL is a no-op. */
void ts_view_close(ts_view *v);

/* State, for tests. */
bool ts_view_paused(const ts_view *v);
bool ts_view_closed(const ts_view *v);
uint32_t ts_view_delay_ms(const ts_view *v);
uint64_t ts_view_shown(const ts_view *v);

#endif
