/* viz/view.h — a live window (SDL2) showing the chip's activity, window by window.
 *
 * The view draws each frame itself (viz/render) through its own port, so it can zoom and pan.
 * Keys: space pauses and resumes; n shows the next frame (the next --frame-every cycles) while
 * paused; s runs to the end of the next superstep; + and - halve and double the pause between
 * frames (0 .. 2000 ms, 50 ms to start); z and x (or the mouse wheel) zoom in and out, the arrow
 * keys pan; q or Escape close the window (the run goes on without it). Moving the mouse over a
 * unit shows its counts in the window and its state in the family's words (pc, threads, queues,
 * memory: ts_activity_describe); a click keeps that unit shown, a click off the map lets go.
 * The window opens at the first frame, sized to it. Without SDL2 in the build, ts_view_open fails
 * with TS_EINPUT.
 */
#ifndef TS_VIZ_VIEW_H
#define TS_VIZ_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include "core/activity.h"
#include "core/err.h"
#include "viz/render.h"

typedef struct ts_view ts_view;

ts_status ts_view_open(ts_view **out, const char *title, ts_err *err);
/* Show frame f of a (call it from the frame callback), then handle keys and the mouse: wait while
 * paused (until resumed, stepped or closed), else wait the current pause between frames. Does
 * nothing once the window is closed. */
ts_status ts_view_frame(ts_view *v, const ts_activity *a, const ts_act_frame *f, ts_err *err);
/* Write what the window shows as a PNG (read back from the window surface). */
ts_status ts_view_screenshot(const ts_view *v, const char *path, ts_err *err);
/* Close the window; NULL is a no-op. */
void ts_view_close(ts_view *v);

/* State, for tests. */
bool ts_view_paused(const ts_view *v);
bool ts_view_closed(const ts_view *v);
uint32_t ts_view_delay_ms(const ts_view *v);
uint64_t ts_view_shown(const ts_view *v);
bool ts_view_stepping(const ts_view *v); /* running to the end of a superstep (key s) */
ts_viz_port ts_view_port(const ts_view *v);
/* The unit whose state the view shows (hovered or clicked), UINT32_MAX for none, and that text. */
uint32_t ts_view_unit(const ts_view *v);
const char *ts_view_info(const ts_view *v);

#endif
