# An endless loop: stopped by --max-cycles with exit status 1.
.arch ipu
.stream tile 0
loop:
    br loop
