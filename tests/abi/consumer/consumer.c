/* A downstream C program built against an installed ggemm (find_package or pkg-config). */
#include <stdio.h>
#include <string.h>

#include <ggemm.h>

int main(void) {
    int failures = 0;
    if (ggemm_version() != GGEMM_VERSION) {
        printf("FAIL: installed library is version %d, installed header says %d\n",
               (int)ggemm_version(), GGEMM_VERSION);
        ++failures;
    }
    if (strcmp(ggemm_status_string(GGEMM_ERROR_NO_DEVICE), "GGEMM_ERROR_NO_DEVICE") != 0) {
        printf("FAIL: ggemm_status_string(13) = %s\n", ggemm_status_string(GGEMM_ERROR_NO_DEVICE));
        ++failures;
    }
    printf("consumer of the installed ggemm %d: %s\n", (int)ggemm_version(),
           failures == 0 ? "PASS" : "FAIL");
    return failures == 0 ? 0 : 1;
}
