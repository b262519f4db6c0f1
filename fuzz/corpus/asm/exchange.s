; two tiles swap a word each superstep
.stream tile 1
.superstep 0
    li r1, 7
    send r1, 0
    recv r2
    sync
.superstep 1
    wait 3
    br done
done: halt
.stream tile 0
.superstep 0
    li r1, 9
    send r1, 1
    recv r2
    sync
.superstep 1
    halt
