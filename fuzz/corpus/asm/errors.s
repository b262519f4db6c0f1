.stream tile 0
    addd r1, r2
    br nowhere
    .byte 300
.strem x
