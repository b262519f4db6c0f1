#include <stdio.h>
int main(void) { puts("tessera: not built yet"); return 0; }
