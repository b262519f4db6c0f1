# 64 MiB of zeros for each of 65,536 tiles (4 TiB): refused by the program_bytes limit.
.arch ipu
.data tile 0-65535 0
    .zero 67108864
