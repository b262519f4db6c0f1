/* tests/toy/toy.c — to be written */
typedef int ts_placeholder_toy_;
