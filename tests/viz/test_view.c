/* tests/viz/test_view.c — the SDL2 live view under SDL's dummy video driver, driven by synthetic
 * key events queued before each frame. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <SDL.h>

#include "core/alloc.h"
#include "viz/view.h"

static void key(SDL_Keycode k)
{
    SDL_Event e;
    memset(&e, 0, sizeof e);
    e.type = SDL_KEYDOWN;
    e.key.keysym.sym = k;
    ck_assert_int_eq(SDL_PushEvent(&e), 1);
}

START_TEST(keys)
{
    ts_err e;
    ts_err_init(&e);
    ts_view *v = NULL;
    ck_assert_msg(ts_view_open(&v, "test", &e) == TS_OK, "%s", e.msg);
    ts_viz_image img = {64, 32, ts_calloc(64 * 32, 4)};
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK); /* opens the window */
    ck_assert_uint_eq(ts_view_shown(v), 1);
    ck_assert_uint_eq(ts_view_delay_ms(v), 50);
    key(SDLK_PLUS);
    key(SDLK_PLUS);
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK);
    ck_assert_uint_eq(ts_view_delay_ms(v), 12); /* faster: 50 -> 25 -> 12 ms */
    key(SDLK_MINUS);
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK);
    ck_assert_uint_eq(ts_view_delay_ms(v), 24);
    /* pause, then step one frame: the frame returns, still paused */
    key(SDLK_SPACE);
    key(SDLK_n);
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK);
    ck_assert(ts_view_paused(v));
    key(SDLK_RIGHT);
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK);
    ck_assert(ts_view_paused(v));
    /* resume */
    key(SDLK_SPACE);
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK);
    ck_assert(!ts_view_paused(v));
    ck_assert_uint_eq(ts_view_shown(v), 6);
    /* close: later frames are not shown */
    key(SDLK_q);
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK);
    ck_assert(ts_view_closed(v));
    ck_assert_int_eq(ts_view_frame(v, &img, &e), TS_OK);
    ck_assert_uint_eq(ts_view_shown(v), 7);
    ts_view_close(v);
    ts_view_close(NULL);
    ts_viz_image_free(&img);
    ts_err_free(&e);
}
END_TEST

int main(void)
{
    setenv("SDL_VIDEODRIVER", "dummy", 1);
    Suite *s = suite_create("view");
    TCase *c = tcase_create("sdl");
    tcase_add_test(c, keys);
    suite_add_tcase(s, c);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
