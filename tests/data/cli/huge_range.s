# A range over 2^31 tiles: refused by the range_units limit before it is expanded.
.arch ipu
.stream tile 0-2147483647
    nop
