/* wirestamp_probe.h: C ABI of wirestamp-probe. GENERATED from probe/src/ffi.rs by c_header();
 * do not edit (WIRESTAMP_BLESS=1 cargo test -p wirestamp-probe --test c_abi regenerates it).
 * Link with libwirestamp_probe.a -lpthread -ldl -lm. */
#ifndef WIRESTAMP_PROBE_H
#define WIRESTAMP_PROBE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WSP_LAYOUT_VERSION 1
#define WSP_END_STAGE 255
#define WSP_E_INVALID (-1)
#define WSP_E_NOT_FOUND (-2)
#define WSP_E_PERMISSION (-3)
#define WSP_E_CORRUPT (-4)
#define WSP_E_VERSION (-5)
#define WSP_E_ATTACH_STATE (-6)
#define WSP_E_FULL (-7)
#define WSP_E_IO (-8)

/* Attaches this process to the session `/dev/shm/<session>` and enables stamping. If create is */
/* non-zero and the session does not exist, creates it (mode 0600) with max_threads rings of */
/* ring_capacity records (0: defaults 32 and 65536). Returns 0 or a negative WSP_E_* code. */
/* # Safety */
/* session is a NUL-terminated string. */
int32_t wsp_attach(const char *session, int32_t create, uint32_t max_threads, uint32_t ring_capacity);

/* Stops stamping and releases the calling thread's ring (call after stamping threads stopped). */
void wsp_detach(void);

/* Enables (non-zero) or disables (0) stamping at run time. */
void wsp_set_enabled(int32_t on);

/* 1 if stamps are being recorded, else 0. */
int32_t wsp_enabled(void);

/* Claims a ring for the calling thread now rather than on its first stamp. */
int32_t wsp_register_thread(void);

/* Publishes the name of a point (at most 48 bytes of UTF-8). */
/* # Safety */
/* name is a NUL-terminated string. */
int32_t wsp_name_point(uint16_t point, const char *name);

/* Publishes the name of a stage of a point (the interval ending at that stage is reported under it). */
/* # Safety */
/* name is a NUL-terminated string. */
int32_t wsp_name_stage(uint16_t point, uint8_t stage, const char *name);

/* Opens the span (point, key). */
void wsp_begin(uint16_t point, uint64_t key);

/* Marks the end of stage (1..254) in the span (point, key). */
void wsp_step(uint16_t point, uint8_t stage, uint64_t key);

/* Closes the span (point, key). */
void wsp_end(uint16_t point, uint64_t key);

/* Records a value sample (queue depth, batch size); no timestamp. */
void wsp_value(uint16_t point, uint64_t value);

/* Declares that the order order_key was triggered by the tick tick_key. */
void wsp_link(uint64_t tick_key, uint64_t order_key);

/* Copies the calling thread's last error message (NUL-terminated, truncated to len) into buf and */
/* returns its full length. */
/* # Safety */
/* buf is null or has room for len bytes. */
size_t wsp_last_error(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* WIRESTAMP_PROBE_H */
