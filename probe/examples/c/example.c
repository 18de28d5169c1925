/* A C trading app stamping through wirestamp-probe: usage `example SESSION` (creates the session). */
#include <stdio.h>
#include <string.h>

#include "wirestamp_probe.h"

_Static_assert(WSP_LAYOUT_VERSION == 1, "layout version");

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SESSION\n", argv[0]);
        return 2;
    }
    char err[256];
    /* Attaching without create to a session that does not exist fails with a clear message. */
    int rc = wsp_attach("wsp-c-example-does-not-exist", 0, 0, 0);
    wsp_last_error(err, sizeof err);
    if (rc != WSP_E_NOT_FOUND || strstr(err, "does not exist") == NULL) {
        fprintf(stderr, "unexpected: %d %s\n", rc, err);
        return 1;
    }
    printf("attach to a missing session without create: %d\n", rc);

    if (wsp_attach(argv[1], 1, 4, 4096) != 0) {
        wsp_last_error(err, sizeof err);
        fprintf(stderr, "attach: %s\n", err);
        return 1;
    }
    if (wsp_name_point(1, "tick_to_trade") != 0 || wsp_name_stage(1, 1, "decode") != 0 ||
        wsp_name_point(2, "queue_depth") != 0) {
        return 1;
    }
    for (uint64_t seq = 0; seq < 1000; seq++) {
        wsp_begin(1, seq);
        wsp_step(1, 1, seq);
        wsp_end(1, seq);
        wsp_value(2, seq);
    }
    wsp_link(7, 9001);
    wsp_set_enabled(0);
    wsp_begin(1, 5000); /* disabled: not recorded */
    if (wsp_enabled() != 0) return 1;
    wsp_set_enabled(1);
    wsp_detach();
    return 0;
}
